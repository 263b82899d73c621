// A run's page: its facts against its budgets, the plan, the timeline (live), and the actions
// its pause allows. Every review carries the version the page shows.
import { useCallback, useEffect, useMemo, useRef, useState } from "preact/hooks";
import {
  errorText,
  PauseReason,
  ReinClient,
  ReviewConflictError,
  Stage,
  type Roles,
  type Run,
  type RunEvent,
} from "./api";
import { describe, lineDiff, prettyJson, rawJson, stageName, time } from "./format";

const PAGE = 200;  // events rendered per step: a 10,000-event run renders 200 rows, not 10,000

function Facts({ run }: { run: Run }) {
  const s = run.state!;
  const l = run.spec?.limits;
  const fact = (name: string, value: string) => (
    <div>
      <span class="muted">{name}:</span> {value}
    </div>
  );
  return (
    <div class="grid" aria-label="Run facts">
      {fact("stage", stageName(s.stage))}
      {fact("owner", `${run.owner || "-"} (epoch ${run.leaseEpoch})`)}
      {fact("iteration", `${s.iteration} of ${l?.maxIterations ?? "?"}`)}
      {fact("retries", `${s.retriesUsed} of ${l?.retryBudget ?? "?"}`)}
      {fact("tokens", `${s.tokensUsed}${l?.tokenBudget ? ` of ${l.tokenBudget}` : " (no budget)"}`)}
      {fact("cost", `$${s.costUsedUsd.toFixed(4)}${l?.costBudgetUsd ? ` of $${l.costBudgetUsd}` : " (no budget)"}`)}
      {fact("deadline", time(s.deadline))}
      {fact("version", String(s.version))}
      {s.outcome && s.outcome.status !== 0 && fact("outcome", `${stageName(s.outcome.status)} ${s.outcome.message}`)}
    </div>
  );
}

function Plan({ run }: { run: Run }) {
  const s = run.state!;
  return (
    <section class="panel" aria-label="Plan">
      <h2>Plan</h2>
      <h3>Stack (top first)</h3>
      <ol>
        {s.subtasks.map((t) => (
          <li key={t.id}>
            <b>{t.id}</b>: {t.description} <span class="muted">[{t.allowedTools.join(", ")}]</span>
          </li>
        ))}
      </ol>
      {s.completedSubtasks.length > 0 && (
        <>
          <h3>Completed</h3>
          <ul>
            {s.completedSubtasks.map((t) => (
              <li key={t.id}>
                {t.id}: {t.summary || t.description}
              </li>
            ))}
          </ul>
        </>
      )}
    </section>
  );
}

interface ActProps {
  client: ReinClient;
  roles: Roles;
  run: Run;
  onFresh: (run: Run) => void;
  setError: (text: string) => void;
  setNotice: (text: string) => void;
}

// What a person can do here. The form's text survives a refresh and a conflict.
function Actions({ client, roles, run, onFresh, setError, setNotice }: ActProps) {
  const pause = run.state?.pause;
  const call = pause?.pendingCall;
  const original = call ? prettyJson(call.argsJson) : "";
  const [args, setArgs] = useState(original);
  const [reviewing, setReviewing] = useState(false);
  const [feedback, setFeedback] = useState("");
  const [abort, setAbort] = useState(false);
  const [answer, setAnswer] = useState("");
  const [plan, setPlan] = useState(() => (run.state?.subtasks ?? []).map((t) => `${t.id}: ${t.description}`).join("\n"));
  const [busy, setBusy] = useState(false);
  const act = useCallback(
    async (what: string, call: () => Promise<Run>) => {
      setBusy(true);
      setError("");
      try {
        const fresh = await call();
        setNotice(`${what}: done (version ${fresh.state?.version}).`);
        setReviewing(false);
        onFresh(fresh);
      } catch (e) {
        if (e instanceof ReviewConflictError) {
          setError(`Conflict: ${e.message}. The page now shows the fresh state; your edits are still in the form.`);
          if (e.fresh) onFresh(e.fresh);
        } else {
          setError(`${what} failed. ${errorText(e)}`);
        }
      } finally {
        setBusy(false);
      }
    },
    [onFresh, setError, setNotice],
  );
  const paused = run.state?.stage === Stage.PAUSED;
  const approve = () => act("Approve", () => client.approve(run, "console"));
  // Keyboard: "a" approves, "r" goes to the rejection's feedback.
  useEffect(() => {
    if (!paused || !roles.reviewer) return;
    const onKey = (e: KeyboardEvent) => {
      const t = e.target as HTMLElement;
      if (e.ctrlKey || e.metaKey || e.altKey || /INPUT|TEXTAREA|SELECT/.test(t.tagName)) return;
      if (e.key === "a" && !busy) approve();
      if (e.key === "r") {
        e.preventDefault();
        document.getElementById("reject-feedback")?.focus();
      }
    };
    addEventListener("keydown", onKey);
    return () => removeEventListener("keydown", onKey);
  });
  const terminal = [Stage.FINISHED, Stage.FAILED, Stage.CANCELLED].includes(run.state?.stage ?? 0);
  return (
    <section class="panel actions" aria-label="Actions">
      <h2>Actions</h2>
      {paused && (
        <p>
          <b>Paused:</b> {pause?.detail}
        </p>
      )}
      {paused && pause?.reason === PauseReason.NEED_HUMAN && <p><b>Question:</b> {pause.question}</p>}
      {paused && call && (
        <p>
          <b>Pending call:</b> {call.tool} {call.mutating ? "(mutating)" : ""}
        </p>
      )}
      {paused && roles.reviewer && (
        <>
          <button disabled={busy} id="approve" onClick={approve} aria-keyshortcuts="a">
            Approve
          </button>
          {call && (
            <div>
              <label>
                Arguments of {call.tool} (JSON)
                <textarea id="edit-args" rows={6} value={args} onInput={(e) => { setArgs(e.currentTarget.value); setReviewing(false); }} />
              </label>
              {!reviewing ? (
                <button disabled={busy || args === original} id="review-edit" onClick={() => {
                  try {
                    JSON.parse(args);
                    setReviewing(true);
                    setError("");
                  } catch (e) {
                    setError(`The arguments are not valid JSON: ${(e as Error).message}`);
                  }
                }}>
                  Review the change
                </button>
              ) : (
                <>
                  <pre aria-label="Change to the arguments">
                    {lineDiff(original, prettyJson(args)).map((l) => (
                      <div class={l.sign === "-" ? "diff-del" : l.sign === "+" ? "diff-add" : ""}>
                        {l.sign} {l.text}
                      </div>
                    ))}
                  </pre>
                  <button disabled={busy} id="send-edit" onClick={() => act("Edited call", () => client.editCall(run, call.tool, args, "console"))}>
                    Approve with these arguments
                  </button>
                </>
              )}
            </div>
          )}
          {pause?.reason === PauseReason.NEED_HUMAN && (
            <div>
              <label>
                Answer
                <textarea id="answer" rows={3} value={answer} onInput={(e) => setAnswer(e.currentTarget.value)} />
              </label>
              <button disabled={busy || !answer.trim()} id="send-answer" onClick={() => act("Answer", () => client.answer(run, answer, "console"))}>
                Answer
              </button>
            </div>
          )}
          <div>
            <label>
              Plan: one subtask per line, "id: description", top first
              <textarea id="edit-plan" rows={4} value={plan} onInput={(e) => setPlan(e.currentTarget.value)} />
            </label>
            <button disabled={busy} id="send-plan" onClick={() => {
              const known = new Map((run.state?.subtasks ?? []).map((t) => [t.id, t]));
              const subtasks = plan.split("\n").map((l) => l.trim()).filter(Boolean).map((line) => {
                const at = line.indexOf(":");
                const id = (at > 0 ? line.slice(0, at) : line).trim();
                const description = (at > 0 ? line.slice(at + 1) : line).trim();
                return { id, description, allowedTools: known.get(id)?.allowedTools ?? run.spec?.tools ?? [] };
              });
              act("Edited plan", () => client.editPlan(run, subtasks, "console"));
            }}>
              Approve with this plan
            </button>
          </div>
          <div>
            <label>
              Feedback for a rejection
              <textarea id="reject-feedback" rows={2} value={feedback} onInput={(e) => setFeedback(e.currentTarget.value)} />
            </label>
            <label>
              <input type="checkbox" checked={abort} onChange={(e) => setAbort(e.currentTarget.checked)} /> End the run (FAILED) instead of planning again
            </label>
            <button disabled={busy} id="reject" onClick={() => act("Reject", () => client.reject(run, feedback, abort, "console"))}>
              Reject
            </button>
          </div>
        </>
      )}
      {paused && !roles.reviewer && <p class="muted">Only a reviewer may review this pause.</p>}
      {roles.operator && !terminal && (
        <p>
          <button disabled={busy} id="cancel" onClick={() => act("Cancel", () => client.cancel(run.runId, "cancelled from the console"))}>
            Cancel the run
          </button>
        </p>
      )}
    </section>
  );
}

type View = "compact" | "detailed" | "raw";

function Timeline(props: { client: ReinClient; roles: Roles; run: Run; events: RunEvent[]; focusSeq?: bigint; setError: (t: string) => void }) {
  const { events, focusSeq } = props;
  const [view, setView] = useState<View>("compact");
  const [shown, setShown] = useState(PAGE);
  const [atFork, setAtFork] = useState(false);
  const want = focusSeq ? events.length - Number(focusSeq) + 1 : 0;
  const count = Math.min(events.length, Math.max(shown, want));
  const window = events.slice(events.length - count);
  const groups = useMemo(() => {
    const out: { n: number; events: RunEvent[] }[] = [];
    let n = 0;
    for (const e of window) {
      if (out.length === 0 || e.body.case === "plan" || e.body.case === "decision") out.push({ n: ++n, events: [] });
      out[out.length - 1].events.push(e);
    }
    return out;
  }, [window]);
  useEffect(() => {
    if (focusSeq) document.getElementById(`event-${focusSeq}`)?.scrollIntoView();
  }, [focusSeq, events.length > 0]);
  const fork = async (seq: bigint) => {
    try {
      const fork = await props.client.fork(props.run.runId, seq, atFork);
      location.hash = `#/run/${fork.runId}`;
    } catch (e) {
      props.setError(`Fork failed. ${errorText(e)}`);
    }
  };
  return (
    <section class="panel" aria-label="Timeline">
      <h2>Timeline ({events.length} events)</h2>
      <label>
        View{" "}
        <select value={view} onChange={(e) => setView(e.currentTarget.value as View)}>
          <option value="compact">compact</option>
          <option value="detailed">detailed</option>
          <option value="raw">raw JSON</option>
        </select>
      </label>
      {props.roles.operator && (
        <label>
          <input type="checkbox" checked={atFork} onChange={(e) => setAtFork(e.currentTarget.checked)} /> Forks take the workspace as it was at the event
        </label>
      )}
      {count < events.length && (
        <button onClick={() => setShown(shown + PAGE)}>Show {Math.min(PAGE, events.length - count)} earlier events</button>
      )}
      {groups.map((g) => (
        <div class="iteration" key={`${g.events[0].seq}`}>
          <h3>step from event {String(g.events[0].seq)}</h3>
          {g.events.map((e) => {
            const result = e.body.case === "toolResult" ? e.body.value.action : undefined;
            return (
              <div
                id={`event-${e.seq}`}
                key={`${e.seq}`}
                class={`event${e.body.case === "error" || (result && !result.ok) ? " error-event" : ""}${focusSeq === e.seq ? " target" : ""}`}
              >
                <a href={`#/run/${props.run.runId}/e/${e.seq}`} class="muted">#{String(e.seq)}</a> {describe(e)}
                {e.principal && <span class="muted"> by {e.principal}</span>}
                {view !== "compact" && <span class="muted"> {time(e.time)}</span>}
                {view === "detailed" && result && (
                  <details>
                    <summary>observation ({result.observation.length} bytes)</summary>
                    <pre>{result.observation || result.error}</pre>
                  </details>
                )}
                {view === "detailed" && props.roles.operator && (
                  <button class="fork" onClick={() => fork(e.seq)}>Fork from here</button>
                )}
                {view === "raw" && <pre>{rawJson(e)}</pre>}
              </div>
            );
          })}
        </div>
      ))}
    </section>
  );
}

export function RunPage({ client, roles, runId, focusSeq }: { client: ReinClient; roles: Roles; runId: string; focusSeq?: bigint }) {
  const [run, setRun] = useState<Run | null>(null);
  const [events, setEvents] = useState<RunEvent[]>([]);
  const [error, setError] = useState("");
  const [notice, setNotice] = useState("");
  const [live, setLive] = useState("connecting");
  const latest = useRef(0n);
  const onFresh = useCallback((fresh: Run) => {
    if (!run || (fresh.state?.version ?? 0n) >= latest.current) {
      latest.current = fresh.state?.version ?? 0n;
      setRun(fresh);
    }
  }, [run]);
  const refresh = useCallback(() => {
    client.get(runId).then((r) => {
      latest.current = r.state?.version ?? 0n;
      setRun(r);
    }).catch((e) => setError(errorText(e)));
  }, [client, runId]);
  useEffect(() => {
    refresh();
    const stop = new AbortController();
    let buffer: RunEvent[] = [];
    let timer: ReturnType<typeof setTimeout> | undefined;
    // Events arrive in bursts (a whole log on open): render them in batches.
    const flush = () => {
      timer = undefined;
      const batch = buffer;
      buffer = [];
      setEvents((prev) => prev.concat(batch));
      refresh();
    };
    (async () => {
      try {
        setLive("live");
        for await (const event of client.watch(runId, { signal: stop.signal, maxRetries: 1000 })) {
          buffer.push(event);
          if (!timer) timer = setTimeout(flush, 60);
        }
        if (!stop.signal.aborted) setLive("ended");
      } catch (e) {
        if (!stop.signal.aborted) {
          setLive("disconnected");
          setError(`The live stream stopped. ${errorText(e)}`);
        }
      }
    })();
    return () => {
      stop.abort();
      if (timer) clearTimeout(timer);
    };
  }, [client, runId]);
  if (!run) {
    return <main>{error ? <p class="error" role="alert">{error}</p> : "Loading…"}</main>;
  }
  return (
    <main>
      <h2 id="run-goal">{run.spec?.goal}</h2>
      <p class="muted">
        run {run.runId} · <span id="run-stage">{stageName(run.state?.stage ?? 0)}</span> · stream: <span id="live">{live}</span>
      </p>
      {error && <p class="error" role="alert" id="error">{error}</p>}
      {notice && <p class="notice" role="status" id="notice">{notice}</p>}
      <Facts run={run} />
      <Actions client={client} roles={roles} run={run} onFresh={onFresh} setError={setError} setNotice={setNotice} />
      <Plan run={run} />
      <Timeline client={client} roles={roles} run={run} events={events} focusSeq={focusSeq} setError={setError} />
    </main>
  );
}
