// A run's page: its facts against its budgets, the plan, the timeline (live), and the actions
// its pause allows. Every review carries the version the page shows.
import { useCallback, useEffect, useMemo, useState } from "preact/hooks";
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
import { ArgsForm, checkArgs, schemaFields } from "./args_form";
import { describe, lineDiff, prettyJson, rawJson, stageName, time } from "./format";
import { useRunLog } from "./run_log";

// The JSON text as an object, or null when it is not one.
function argsObject(text: string): Record<string, unknown> | null {
  try {
    const v = JSON.parse(text);
    return v && typeof v === "object" && !Array.isArray(v) ? v : null;
  } catch {
    return null;
  }
}

const PAGE = 200;  // events rendered at once: a 10,000-event run renders 200 rows, not 10,000

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
  const schema = run.state?.tools.find((t) => t.name === call?.tool)?.inputSchemaJson ?? "";
  const fields = useMemo(() => schemaFields(schema), [schema]);
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
              <ArgsForm tool={call.tool} fields={fields} args={argsObject(args)} onChange={(next) => { setArgs(JSON.stringify(next, null, 2)); setReviewing(false); }} />
              <label>
                Arguments of {call.tool} (JSON)
                <textarea id="edit-args" rows={6} value={args} onInput={(e) => { setArgs(e.currentTarget.value); setReviewing(false); }} />
              </label>
              {!reviewing ? (
                <button disabled={busy || args === original} id="review-edit" onClick={() => {
                  let parsed: unknown;
                  try {
                    parsed = JSON.parse(args);
                  } catch (e) {
                    setError(`The arguments are not valid JSON: ${(e as Error).message}`);
                    return;
                  }
                  const wrong = argsObject(args) ? checkArgs(fields, parsed as Record<string, unknown>) : "The arguments must be a JSON object.";
                  if (wrong) {
                    setError(`The arguments do not fit ${call.tool}'s schema: ${wrong}`);
                    return;
                  }
                  setReviewing(true);
                  setError("");
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

// The index of the event with `seq` (the log is in seq order), or -1.
function indexOfSeq(events: RunEvent[], seq: bigint): number {
  let lo = 0, hi = events.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (events[mid].seq === seq) return mid;
    if (events[mid].seq < seq) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

// The timeline shows one page of at most PAGE events at a time (the newest, following the run
// live, unless the reader went to earlier ones), so a run of any length renders PAGE rows.
function Timeline(props: { client: ReinClient; roles: Roles; run: Run; events: RunEvent[]; focusSeq?: bigint; setError: (t: string) => void }) {
  const { events, focusSeq } = props;
  const [view, setView] = useState<View>("compact");
  const [end, setEnd] = useState<number | null>(null);  // null: the newest page, live
  const [atFork, setAtFork] = useState(false);
  const focusIndex = focusSeq ? indexOfSeq(events, focusSeq) : -1;
  useEffect(() => {
    // A deep link to an event: the page around it, once it has arrived.
    if (focusIndex >= 0) setEnd(Math.min(events.length, focusIndex + PAGE / 2));
  }, [focusIndex >= 0, focusSeq]);
  const last = end === null ? events.length : Math.min(end, events.length);
  const first = Math.max(0, last - PAGE);
  const window = events.slice(first, last);
  const groups = useMemo(() => {
    const out: { events: RunEvent[] }[] = [];
    for (const e of window) {
      if (out.length === 0 || e.body.case === "plan" || e.body.case === "decision") out.push({ events: [] });
      out[out.length - 1].events.push(e);
    }
    return out;
  }, [events, first, last]);
  useEffect(() => {
    if (focusSeq) document.getElementById(`event-${focusSeq}`)?.scrollIntoView();
  }, [focusSeq, focusIndex >= 0, end]);
  const fork = async (seq: bigint) => {
    try {
      const fork = await props.client.fork(props.run.runId, seq, atFork);
      location.hash = `#/run/${fork.runId}`;
    } catch (e) {
      props.setError(`Fork failed. ${errorText(e)}`);
    }
  };
  const pager = (
    <p class="pager">
      <span id="timeline-range">events {events.length ? first + 1 : 0}–{last} of {events.length}</span>{" "}
      <button id="timeline-earlier" disabled={first === 0} onClick={() => setEnd(Math.max(PAGE, first))}>Earlier {PAGE}</button>{" "}
      <button id="timeline-later" disabled={end === null} onClick={() => setEnd(last + PAGE >= events.length ? null : last + PAGE)}>Later {PAGE}</button>{" "}
      <button id="timeline-newest" disabled={end === null} onClick={() => setEnd(null)}>Newest (live)</button>
    </p>
  );
  return (
    <section class="panel" aria-label="Timeline">
      <h2>Timeline ({events.length} events)</h2>
      <label>
        View{" "}
        <select id="timeline-view" value={view} onChange={(e) => setView(e.currentTarget.value as View)}>
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
      {events.length > PAGE && pager}
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

// Opens the side-by-side comparison of this run with another (its source, for a fork).
function CompareWith({ run }: { run: Run }) {
  const [other, setOther] = useState(run.state?.forkedFrom?.runId ?? "");
  return (
    <form class="compare-with" onSubmit={(e) => {
      e.preventDefault();
      if (other.trim()) location.hash = `#/compare/${run.runId}/${other.trim()}`;
    }}>
      <label>
        Compare with run <input id="compare-with" value={other} onInput={(e) => setOther(e.currentTarget.value)} />
      </label>
      <button type="submit" id="compare" disabled={!other.trim()}>Compare</button>
    </form>
  );
}

export function RunPage({ client, roles, runId, focusSeq }: { client: ReinClient; roles: Roles; runId: string; focusSeq?: bigint }) {
  const { run, events, live, error, setError, onFresh } = useRunLog(client, runId);
  const [notice, setNotice] = useState("");
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
      <CompareWith run={run} />
      <Timeline client={client} roles={roles} run={run} events={events} focusSeq={focusSeq} setError={setError} />
    </main>
  );
}
