// The four-node loop (plan, decide, execute, evaluate) on LangGraph.js with its SQLite
// checkpointer: the same work per iteration as rein's router benchmark, for comparison.
import { StateGraph, Annotation, START, END } from "@langchain/langgraph";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import fs from "node:fs";

const iterations = Number(process.argv[2] || 300);
const State = Annotation.Root({
  iteration: Annotation({ reducer: (_, b) => b, default: () => 0 }),
  subtasks: Annotation({ reducer: (_, b) => b, default: () => [] }),
  call: Annotation({ reducer: (_, b) => b, default: () => null }),
  observation: Annotation({ reducer: (_, b) => b, default: () => "" }),
  actions: Annotation({ reducer: (a, b) => a.concat(b).slice(-20), default: () => [] }),
  done: Annotation({ reducer: (_, b) => b, default: () => false }),
});
const times = [];
let last = 0;
const graph = new StateGraph(State)
  .addNode("plan", () => ({ subtasks: [{ id: "work", description: "loop" }] }))
  .addNode("decide", (s) => {
    const now = performance.now();
    if (last) times.push(now - last);
    last = now;
    return { iteration: s.iteration + 1, call: { tool: "list_files", args: { path: `d${s.iteration}` } } };
  })
  .addNode("execute", (s) => ({ observation: `listing of ${JSON.stringify(s.call.args)}`,
                                actions: [{ call: s.call, ok: true }] }))
  .addNode("evaluate", (s) => ({ done: s.iteration >= iterations }))
  .addEdge(START, "plan")
  .addEdge("plan", "decide")
  .addEdge("decide", "execute")
  .addEdge("execute", "evaluate")
  .addConditionalEdges("evaluate", (s) => (s.done ? END : "decide"));
const path = `/tmp/lg-bench-${process.pid}.db`;
const app = graph.compile({ checkpointer: SqliteSaver.fromConnString(path) });
const start = performance.now();
await app.invoke({}, { configurable: { thread_id: "bench" }, recursionLimit: iterations * 4 + 10 });
const total = performance.now() - start;
times.sort((a, b) => a - b);
const pct = (p) => times[Math.min(times.length - 1, Math.round(p * (times.length - 1)))];
console.log(`LangGraph.js ${iterations} iterations: p50 ${(pct(0.5) * 1000).toFixed(0)} us, ` +
            `p99 ${(pct(0.99) * 1000).toFixed(0)} us, ${(iterations / (total / 1000)).toFixed(0)} iterations/s`);
for (const f of [path, path + "-wal", path + "-shm"]) fs.rmSync(f, { force: true });
