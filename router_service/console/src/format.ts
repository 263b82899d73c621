// Words and numbers for runs and events.
import { toJson } from "@bufbuild/protobuf";
import type { Timestamp } from "@bufbuild/protobuf/wkt";
import {
  PausePoint,
  PauseReason,
  RunEventSchema,
  Stage,
  type Pause,
  type RunEvent,
} from "./api";

export function pauseLabel(pause: Pause | undefined): string {
  if (!pause) return "Paused";
  switch (pause.reason) {
    case PauseReason.PAUSE_POINT:
      switch (pause.point) {
        case PausePoint.BEFORE_TOOL:
          return "Before a tool call";
        case PausePoint.BEFORE_MUTATING_TOOL:
          return "Before a mutating tool call";
        case PausePoint.AFTER_PLAN:
          return "After a plan";
        case PausePoint.AFTER_EVALUATE:
          return "After an evaluation";
        default:
          return "At a pause point";
      }
    case PauseReason.NEED_HUMAN:
      return "A question";
    case PauseReason.NOTES:
      return "Notes";
    case PauseReason.STAGNATED:
      return "Stagnation";
    case PauseReason.RECOVERY:
      return "Recovery (outcome unknown)";
    default:
      return PauseReason[pause.reason] ?? "Paused";
  }
}

export function stageName(stage: Stage): string {
  return Stage[stage] ?? String(stage);
}

export function millis(t: Timestamp | undefined): number {
  return t ? Number(t.seconds) * 1000 + Math.floor(t.nanos / 1e6) : 0;
}

export function age(t: Timestamp | undefined, now = Date.now()): string {
  const s = Math.max(0, Math.round((now - millis(t)) / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86400)}d ${Math.floor((s % 86400) / 3600)}h`;
}

export function time(t: Timestamp | undefined): string {
  return t ? new Date(millis(t)).toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z") : "";
}

export function rawJson(event: RunEvent): string {
  return JSON.stringify(toJson(RunEventSchema, event), null, 2);
}

function short(text: string, max = 160): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

// One line about an event.
export function describe(event: RunEvent): string {
  const b = event.body;
  switch (b.case) {
    case "stageChanged":
      return `${stageName(b.value.from)} → ${stageName(b.value.to)}`;
    case "plan":
      return b.value.goalAchieved && b.value.subtasks.length === 0
        ? "plan: goal achieved"
        : `plan: ${b.value.subtasks.map((s) => `${s.id} (${short(s.description, 60)})`).join(", ")}`;
    case "decision":
      return b.value.toolCall
        ? `decision on ${b.value.subtaskId}: ${b.value.toolCall.tool} ${short(b.value.toolCall.argsJson, 100)}`
        : `question: ${short(b.value.humanQuery)}`;
    case "toolResult": {
      const a = b.value.action;
      return `${a?.tool} ${a?.ok ? "ok" : `failed: ${short(a?.error ?? "")}`}`;
    }
    case "evaluation":
      return `evaluation of ${b.value.subtaskId}: ${b.value.status === 1 ? "COMPLETED" : b.value.status === 2 ? "FAILED" : "NEEDS_MORE_WORK"} ${short(b.value.summary, 100)}`;
    case "paused":
      return `paused: ${pauseLabel(b.value.pause)} ${short(b.value.pause?.detail ?? "")}`;
    case "resumed":
      return `resumed (${b.value.review?.kind.case ?? "review"}) → ${stageName(b.value.to)}`;
    case "error":
      return `error in ${stageName(b.value.stage)}: ${b.value.code} ${short(b.value.message)}${b.value.retrySpent ? " (retry spent)" : ""}`;
    case "finished":
      return `finished: ${stageName(b.value.outcome?.status ?? 0)} ${b.value.outcome?.message ?? ""}`;
    case "cancelRequested":
      return `cancel requested${b.value.reason ? `: ${short(b.value.reason)}` : ""} (ends once its call returns or its children end)`;
    default:
      return b.case ?? "event";
  }
}

// A line diff of two texts (enough for JSON arguments): "-" removed, "+" added, " " kept.
export function lineDiff(before: string, after: string): { sign: string; text: string }[] {
  const a = before.split("\n");
  const b = after.split("\n");
  const n = a.length, m = b.length;
  const lcs: number[][] = Array.from({ length: n + 1 }, () => new Array(m + 1).fill(0));
  for (let i = n - 1; i >= 0; i--)
    for (let j = m - 1; j >= 0; j--)
      lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
  const out: { sign: string; text: string }[] = [];
  let i = 0, j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) { out.push({ sign: " ", text: a[i] }); i++; j++; }
    else if (lcs[i + 1][j] >= lcs[i][j + 1]) out.push({ sign: "-", text: a[i++] });
    else out.push({ sign: "+", text: b[j++] });
  }
  while (i < n) out.push({ sign: "-", text: a[i++] });
  while (j < m) out.push({ sign: "+", text: b[j++] });
  return out;
}

export function prettyJson(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}
