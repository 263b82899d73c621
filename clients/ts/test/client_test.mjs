// The TypeScript client and the official Connect client for Node against a real router
// (started by node_e2e_test.cc): JSON and binary, unary and streaming, reviews with the
// expected-version check, roles, resume from a seq. Exits non-zero on the first failure.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createClient, Code, ConnectError } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { nodeClient } from "../dist/node.js";
import { ReviewConflictError, Router, PausePoint, Stage } from "../dist/index.js";
import { restartRouter, retried } from "./harness.mjs";

const baseUrl = process.env.REIN_HTTP_URL;
const root = process.env.REIN_WORKSPACE_ROOT;
assert.ok(baseUrl && root, "REIN_HTTP_URL and REIN_WORKSPACE_ROOT must be set");

async function expectCode(promise, code, what) {
  try {
    await promise;
  } catch (error) {
    const e = ConnectError.from(error);
    assert.equal(e.code, code, `${what}: ${Code[e.code]} (${e.rawMessage}), expected ${Code[code]}`);
    return e;
  }
  assert.fail(`${what}: succeeded, expected ${Code[code]}`);
}

async function pausedRun(client, runId) {
  for await (const event of client.watch(runId)) {
    if (event.body.case === "paused") return client.get(runId);
  }
  assert.fail(`run ${runId} ended without pausing`);
}

for (const binary of [false, true]) {
  const wire = binary ? "binary" : "JSON";
  console.log(`--- ${wire}`);
  const operator = nodeClient({ baseUrl, token: "t-both", binary });
  const viewer = nodeClient({ baseUrl, token: "t-viewer", binary });

  // Unary, with the idempotency key.
  const spec = {
    goal: `write a.txt (${wire})`,
    workspace: binary ? "repo-binary" : "repo-json",
    tools: ["write_file"],
    pausePoints: [PausePoint.BEFORE_MUTATING_TOOL],
  };
  const run = await operator.start(spec, `key-${wire}`);
  assert.equal((await operator.start(spec, `key-${wire}`)).runId, run.runId, "same key, same run");
  assert.equal((await viewer.get(run.runId)).spec.goal, spec.goal);

  // Roles: a viewer may not start nor review, and says so.
  await expectCode(viewer.start(spec), Code.PermissionDenied, "viewer starts");
  await expectCode(nodeClient({ baseUrl, binary }).get(run.runId), Code.Unauthenticated, "no token");
  await expectCode(viewer.get("0123456789abcdef0123456789abcdef"), Code.NotFound, "unknown run");

  // Streaming: the run pauses before the mutating call; the file is not written yet.
  const paused = await pausedRun(viewer, run.runId);
  assert.equal(paused.state.stage, Stage.PAUSED);
  assert.equal(paused.state.pause.pendingCall.tool, "write_file");
  await expectCode(viewer.approve(paused), Code.PermissionDenied, "viewer approves");

  // The edited arguments are the ones the executor runs; a second review of the same pause
  // is a conflict that carries the fresh run.
  await operator.editCall(paused, "write_file", { path: "a.txt", content: `edited ${wire}` }, "node test");
  try {
    await operator.approve(paused);
    assert.fail("a second review of the same pause succeeded");
  } catch (error) {
    assert.ok(error instanceof ReviewConflictError, `expected ReviewConflictError, got ${error}`);
    assert.ok(error.fresh.state.version > paused.state.version);
    assert.match(error.message, /moved on/);
  }

  // Watch to the end: every seq once, in order, the last one the terminal event.
  const seqs = [];
  let last;
  for await (const event of viewer.watch(run.runId)) {
    seqs.push(event.seq);
    last = event;
  }
  seqs.forEach((seq, i) => assert.equal(seq, BigInt(i + 1), "seqs without gap or repeat"));
  assert.equal(last.body.case, "finished");
  assert.equal((await viewer.get(run.runId)).state.stage, Stage.FINISHED);
  assert.equal(readFileSync(`${root}/${spec.workspace}/a.txt`, "utf8"), `edited ${wire}`);
  const reviewed = seqs.length;

  // Resumed from a seq: the rest only.
  const tail = [];
  for await (const event of viewer.watch(run.runId, { afterSeq: 3n })) tail.push(event.seq);
  assert.deepEqual(tail, seqs.slice(3));

  // The official client on its own, without the helpers: ExportRun streams snapshots.
  const raw = createClient(
    Router,
    createConnectTransport({
      baseUrl,
      httpVersion: "1.1",
      useBinaryFormat: binary,
      interceptors: [(next) => (req) => (req.header.set("Authorization", "Bearer t-viewer"), next(req))],
    }),
  );
  let snapshots = 0;
  for await (const snapshot of raw.exportRun({ runId: run.runId })) {
    assert.equal(snapshot.runId, run.runId);
    assert.ok(JSON.parse(snapshot.stateJson));
    snapshots++;
  }
  assert.ok(snapshots > 0, "ExportRun streamed snapshots");
  const page = await raw.listRuns({ pageSize: 10 });
  assert.ok(page.runs.some((r) => r.runId === run.runId));
  console.log(`${wire}: ${reviewed} events, ${snapshots} snapshots, edited call ran`);
}
// watch() across a router restart (SIGKILL, started again on the same ports and store): the
// stream is resumed from the last seq, onRetry and onOpen say so, no event is missed or repeated.
{
  console.log("--- watch across a router restart");
  const client = nodeClient({ baseUrl, token: "t-both" });
  const run = await client.start({ goal: "write a.txt across a restart", workspace: "repo-restart",
                                   tools: ["write_file"], pausePoints: [PausePoint.BEFORE_MUTATING_TOOL] });
  const seqs = [];
  let opens = 0, retries = 0;
  let paused;
  const pausedSeen = new Promise((resolve) => (paused = resolve));
  const watching = (async () => {
    for await (const event of client.watch(run.runId, {
      maxRetries: 100,
      onOpen: () => opens++,
      onRetry: () => retries++,
    })) {
      seqs.push(event.seq);
      if (event.body.case === "paused") paused();
    }
  })();
  await pausedSeen;
  await restartRouter();
  await retried(async () => client.approve(await client.get(run.runId), "node test"));
  await watching;
  seqs.forEach((seq, i) => assert.equal(seq, BigInt(i + 1), "seqs without gap or repeat"));
  assert.ok(retries >= 1, "the broken stream was retried");
  assert.ok(opens >= 2, `the stream was opened ${opens} times`);
  assert.equal((await client.get(run.runId)).state.stage, Stage.FINISHED);
  console.log(`restart: ${seqs.length} events, ${retries} retries, ${opens} opens`);
}
console.log("client_test: all passed");
