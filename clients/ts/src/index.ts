// rein's Router API for TypeScript: the generated messages and service, and the few helpers
// every caller would otherwise write (start with an idempotency key, watch to the end with
// resume, reviews with the expected-version check). Works with any Connect transport
// (node.ts for Node, web.ts for browsers).
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  createClient,
  type Client,
  type Interceptor,
  type Transport,
} from "@connectrpc/connect";
import { Router, type ListRunsRequestSchema, type ListRunsResponse } from "./gen/rein/v1/router_pb.js";
import {
  ReviewSchema,
  type Review,
  type Run,
  type RunEvent,
  type RunSpecSchema,
  type SubTaskSchema,
} from "./gen/rein/v1/types_pb.js";

export * from "./gen/rein/v1/router_pb.js";
export * from "./gen/rein/v1/types_pb.js";
export { Code, ConnectError } from "@connectrpc/connect";

// Adds "Authorization: Bearer <token>" to every call. The token is never put in a URL.
export function bearerToken(token: string): Interceptor {
  return (next) => async (request) => {
    request.header.set("Authorization", `Bearer ${token}`);
    return next(request);
  };
}

// A review refused because the run moved on since it was read (another reviewer acted, or
// the run went on): `fresh` is the run as it is now, to show and review again.
export class ReviewConflictError extends Error {
  constructor(
    message: string,
    readonly fresh: Run | undefined,
    readonly cause: ConnectError,
  ) {
    super(message);
    this.name = "ReviewConflictError";
  }
}

export interface WatchOptions {
  // Events after this seq (0 = from the first).
  afterSeq?: bigint;
  // Stops the watch (the generator ends without an error).
  signal?: AbortSignal;
  // How many times in a row a broken stream is resumed before the error is thrown.
  maxRetries?: number;
  // The wait before the first retry; doubled each time, up to 5 s.
  retryDelayMs?: number;
  // Called when a stream is open (the router answered), the first one and each resumed one.
  onOpen?: () => void;
  // Called when a stream broke with a resumable error, before waiting to resume it.
  onRetry?: (error: ConnectError, attempt: number) => void;
}

// Codes after which a watch is worth resuming: the stream broke, not the request.
const RESUMABLE = new Set<Code>([
  Code.Unavailable,
  Code.DeadlineExceeded,
  Code.Unknown,
  Code.Internal,
  Code.Aborted,
]);

function randomKey(): string {
  const bytes = new Uint8Array(16);
  globalThis.crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

export class ReinClient {
  readonly router: Client<typeof Router>;

  constructor(transport: Transport) {
    this.router = createClient(Router, transport);
  }

  // Starts a run. `requestId` is the idempotency key: the same one twice (say, a retry after
  // a network error) returns the first run instead of starting a second. A random one is
  // made when none is given; keep it to retry safely.
  start(spec: MessageInitShape<typeof RunSpecSchema>, requestId: string = randomKey()): Promise<Run> {
    return this.router.startRun({ spec, requestId });
  }

  get(runId: string): Promise<Run> {
    return this.router.getRun({ runId });
  }

  list(request: MessageInitShape<typeof ListRunsRequestSchema> = {}): Promise<ListRunsResponse> {
    return this.router.listRuns(request);
  }

  cancel(runId: string, reason = ""): Promise<Run> {
    return this.router.cancelRun({ runId, reason });
  }

  // The run's events from `afterSeq` to its end: the log first, then live. A stream that
  // breaks (a router restart, a takeover, a proxy's timeout) is resumed from the last seq
  // received, so no event is missed or repeated. Ends after the terminal event, or when
  // `signal` aborts.
  async *watch(runId: string, options: WatchOptions = {}): AsyncGenerator<RunEvent> {
    let last = options.afterSeq ?? 0n;
    const maxRetries = options.maxRetries ?? 10;
    let delay = options.retryDelayMs ?? 200;
    let failures = 0;
    while (!options.signal?.aborted) {
      try {
        for await (const event of this.router.watchRun(
          { runId, afterSeq: last },
          { signal: options.signal, onHeader: options.onOpen && (() => options.onOpen?.()) },
        )) {
          if (event.seq <= last) continue;  // never twice
          last = event.seq;
          failures = 0;
          yield event;
        }
        return;  // the server ends the stream after the terminal event
      } catch (error) {
        const e = ConnectError.from(error);
        if (options.signal?.aborted || e.code === Code.Canceled) return;
        if (!RESUMABLE.has(e.code) || ++failures > maxRetries) throw e;
        options.onRetry?.(e, failures);
        await sleep(delay, options.signal);
        delay = Math.min(delay * 2, 5000);
      }
    }
  }

  // Applies one review to a paused run, against the version `run` was read at. When the run
  // moved on meanwhile, throws ReviewConflictError with the fresh run; nothing was applied.
  async review(run: Run, review: MessageInitShape<typeof ReviewSchema> | Review): Promise<Run> {
    const expectedVersion = run.state?.version ?? 0n;
    try {
      return await this.router.resumeRun({
        runId: run.runId,
        expectedVersion,
        review: create(ReviewSchema, review as MessageInitShape<typeof ReviewSchema>),
      });
    } catch (error) {
      const e = ConnectError.from(error);
      if (e.code !== Code.FailedPrecondition) throw e;
      let fresh: Run | undefined;
      try {
        fresh = await this.get(run.runId);
      } catch {
        fresh = undefined;
      }
      const now = fresh?.state?.version;
      throw new ReviewConflictError(
        `run ${run.runId} moved on: you reviewed version ${expectedVersion}` +
          (now !== undefined ? `, it is at version ${now}` : "") +
          `; nothing was applied (${e.rawMessage})`,
        fresh,
        e,
      );
    }
  }

  approve(run: Run, reviewer = ""): Promise<Run> {
    return this.review(run, { kind: { case: "approve", value: {} }, reviewer });
  }

  // Rejects with feedback: back to planning with it, or, with `abort`, the run fails.
  reject(run: Run, feedback: string, abort = false, reviewer = ""): Promise<Run> {
    return this.review(run, { kind: { case: "reject", value: { feedback, abort } }, reviewer });
  }

  // Approves the pending call with other arguments (an object, or its JSON text).
  editCall(run: Run, tool: string, args: unknown, reviewer = ""): Promise<Run> {
    const argsJson = typeof args === "string" ? args : JSON.stringify(args);
    return this.review(run, { kind: { case: "editToolCall", value: { tool, argsJson } }, reviewer });
  }

  // Replaces the pending subtasks (top first).
  editPlan(run: Run, subtasks: MessageInitShape<typeof SubTaskSchema>[], reviewer = ""): Promise<Run> {
    return this.review(run, { kind: { case: "editPlan", value: { subtasks } }, reviewer });
  }

  // Answers the question a run paused with (NEED_HUMAN).
  answer(run: Run, text: string, reviewer = ""): Promise<Run> {
    return this.review(run, { kind: { case: "answer", value: { text } }, reviewer });
  }

  // Forks the run from the state right after event `seq`.
  fork(runId: string, seq: bigint, workspaceAtFork = false, requestId: string = randomKey()): Promise<Run> {
    return this.router.forkRun({ runId, at: { case: "seq", value: seq }, workspaceAtFork, requestId });
  }
}
