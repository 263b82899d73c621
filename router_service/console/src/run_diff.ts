// Two runs side by side, as `reinctl diff` shows them (cli/run_diff.cc): each run's steps one
// line each, aligned line by line, a fork's column starting with its source's steps up to the
// fork point. The words are reinctl's, so a line here is a line there (reinctl cuts long lines
// at 80 bytes, this at 80 characters: the same for ASCII).
import {
  PauseReason,
  RunEvent_Evaluation_Status,
  Stage,
  TerminationReason,
  type Run,
  type RunEvent,
} from "./api";

function firstLine(text: string, max: number): string {
  const cut = text.indexOf("\n");
  const line = (cut < 0 ? text : text.slice(0, cut)).replace(/\t/g, " ");
  return line.length > max ? `${line.slice(0, max)}...` : line;
}

function name<E extends Record<number, string>>(names: E, value: number): string {
  return names[value] ?? "";
}

// One line per step of a run, from its log (reinctl's RunSteps).
export function runSteps(events: RunEvent[]): string[] {
  const steps: string[] = [];
  for (const e of events) {
    const b = e.body;
    switch (b.case) {
      case "forked":
        steps.push(`forked: from ${b.value.from?.runId ?? ""} seq ${b.value.from?.seq ?? 0n}`);
        break;
      case "plan":
        steps.push(`plan: [${b.value.subtasks.map((t) => t.id).join(", ")}]${b.value.goalAchieved ? " done" : ""}`);
        break;
      case "decision":
        steps.push(
          b.value.toolCall
            ? `call: ${b.value.toolCall.tool} ${firstLine(b.value.toolCall.argsJson, 80)}`
            : `ask: ${firstLine(b.value.humanQuery, 80)}`,
        );
        break;
      case "toolResult": {
        const a = b.value.action;
        steps.push(`  -> ${a?.ok ? "ok: " : "failed: "}${firstLine((a?.ok ? a?.observation : a?.error) ?? "", 80)}`);
        break;
      }
      case "evaluation":
        steps.push(`eval: ${b.value.subtaskId} ${name(RunEvent_Evaluation_Status, b.value.status)}`);
        break;
      case "paused":
        steps.push(`paused: ${name(PauseReason, b.value.pause?.reason ?? 0)}`);
        break;
      case "resumed":
        steps.push(`resumed: to ${name(Stage, b.value.to)}`);
        break;
      case "error":
        steps.push(`error: ${name(Stage, b.value.stage)} ${b.value.code}`);
        break;
      case "finished":
        steps.push(`end: ${name(Stage, b.value.outcome?.status ?? 0)} ${name(TerminationReason, b.value.outcome?.reason ?? 0)}`);
        break;
      default:
        break;
    }
  }
  return steps;
}

// ' ' both sides say the same, '|' they differ, '<' only the left has a line, '>' the right.
export type Mark = " " | "|" | "<" | ">";

export interface RunDiff {
  rows: { left?: string; right?: string; mark: Mark }[];
  same: number;
  firstDifference: number;  // 1-based step; 0 when the runs took the same steps
  summary: string;          // reinctl's last line
}

export function diffRuns(a: Run, aEvents: RunEvent[], b: Run, bEvents: RunEvent[]): RunDiff {
  let left = runSteps(aEvents);
  let right = runSteps(bEvents);
  const sharedPrefix = (source: RunEvent[], seq: bigint, fork: RunEvent[]) => [
    ...runSteps(source.filter((e) => e.seq <= seq)),
    ...runSteps(fork),
  ];
  const bFrom = b.state?.forkedFrom;
  const aFrom = a.state?.forkedFrom;
  if (a.runId && bFrom?.runId === a.runId) right = sharedPrefix(aEvents, bFrom.seq, bEvents);
  else if (b.runId && aFrom?.runId === b.runId) left = sharedPrefix(bEvents, aFrom.seq, aEvents);
  const rows: RunDiff["rows"] = [];
  let same = 0;
  let firstDifference = 0;
  for (let i = 0; i < Math.max(left.length, right.length); i++) {
    const l = i < left.length ? left[i] : undefined;
    const r = i < right.length ? right[i] : undefined;
    const mark: Mark = l !== undefined && r !== undefined ? (l === r ? " " : "|") : l !== undefined ? "<" : ">";
    if (mark === " ") same++;
    else if (!firstDifference) firstDifference = i + 1;
    rows.push({ left: l, right: r, mark });
  }
  const summary = firstDifference
    ? `same steps: ${same}, first difference at step ${firstDifference}`
    : `the runs took the same steps (${same})`;
  return { rows, same, firstDifference, summary };
}
