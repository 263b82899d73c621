// Two runs side by side (#/compare/<a>/<b>), the steps `reinctl diff` shows, live while
// either run moves.
import { useMemo } from "preact/hooks";
import { ReinClient } from "./api";
import { stageName } from "./format";
import { diffRuns, type Mark } from "./run_diff";
import { useRunLog } from "./run_log";

const MARK_WORDS: Record<Mark, string> = {
  " ": "same",
  "|": "differs",
  "<": "only in the left run",
  ">": "only in the right run",
};

export function ComparePage({ client, a, b }: { client: ReinClient; a: string; b: string }) {
  const left = useRunLog(client, a);
  const right = useRunLog(client, b);
  const diff = useMemo(
    () => (left.run && right.run ? diffRuns(left.run, left.events, right.run, right.events) : null),
    [left.run, left.events, right.run, right.events],
  );
  const error = left.error || right.error;
  const head = (log: typeof left, id: string) => (
    <th scope="col">
      <a href={`#/run/${id}`}>{id}</a>
      <div class="muted">
        {log.run ? `${stageName(log.run.state?.stage ?? 0)}, iteration ${log.run.state?.iteration ?? 0}` : "loading…"} ·{" "}
        {log.events.length} events · stream: {log.live}
      </div>
      {log.run && <div class="goal">{log.run.spec?.goal.slice(0, 160)}</div>}
    </th>
  );
  return (
    <main>
      <h2>Compare two runs</h2>
      {error && <p class="error" role="alert">{error}</p>}
      {diff && <p id="diff-summary" role="status">{diff.summary}</p>}
      <table class="compare" aria-label="The two runs' steps side by side">
        <thead>
          <tr>
            <th scope="col">step</th>
            {head(left, a)}
            <th scope="col">
              <span class="sr-only">mark</span>
            </th>
            {head(right, b)}
          </tr>
        </thead>
        <tbody>
          {diff?.rows.map((row, i) => (
            <tr key={i} class={`mark-${row.mark === " " ? "same" : row.mark === "|" ? "differs" : "one"}`} data-mark={row.mark}>
              <td class="muted">{i + 1}</td>
              <td class="step">{row.left ?? ""}</td>
              <td class="mark" title={MARK_WORDS[row.mark]} aria-label={MARK_WORDS[row.mark]}>{row.mark}</td>
              <td class="step">{row.right ?? ""}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </main>
  );
}
