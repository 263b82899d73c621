// The four-node loop (plan, decide, execute, evaluate) on LangGraph.js with its SQLite
// checkpointer: the same work per iteration as rein's router benchmark, for comparison.
//   node loop.mjs [--iterations N] [--threads T] [--synchronous_normal] [--quick]
// runs T threads (LangGraph's name for a run) of N iterations at once in this one process,
// sharing one SqliteSaver file, as a user would; prints the per-thread iteration time (p50,
// p99) and the throughput of all threads together, and BENCH lines (keys langgraph.*).
// The saver runs as shipped (WAL, SQLite's default synchronous=FULL); --synchronous_normal sets
// synchronous=NORMAL, rein's default, for a like-for-like durability comparison (keys
// langgraph.normal.*).
import { StateGraph, Annotation, START, END } from "@langchain/langgraph";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import fs from "node:fs";

function flag(name, dflt) {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
}
const quick = process.argv.includes("--quick");
const iterations = flag("iterations", quick ? 50 : 300);
const threads = flag("threads", 1);
const normal = process.argv.includes("--synchronous_normal");

const State = Annotation.Root({
  iteration: Annotation({ reducer: (_, b) => b, default: () => 0 }),
  subtasks: Annotation({ reducer: (_, b) => b, default: () => [] }),
  call: Annotation({ reducer: (_, b) => b, default: () => null }),
  observation: Annotation({ reducer: (_, b) => b, default: () => "" }),
  actions: Annotation({ reducer: (a, b) => a.concat(b).slice(-20), default: () => [] }),
  done: Annotation({ reducer: (_, b) => b, default: () => false }),
});
// Per thread: the time the last decide node started; gaps between them are iterations.
const last = new Map();
const times = [];
const graph = new StateGraph(State)
  .addNode("plan", () => ({ subtasks: [{ id: "work", description: "loop" }] }))
  .addNode("decide", (s, config) => {
    const id = config.configurable.thread_id;
    const now = performance.now();
    if (last.has(id)) times.push(now - last.get(id));
    last.set(id, now);
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
const saver = SqliteSaver.fromConnString(path);
if (normal) saver.db.pragma("synchronous=NORMAL");
const app = graph.compile({ checkpointer: saver });
const start = performance.now();
const cpu0 = process.cpuUsage();
await Promise.all(Array.from({ length: threads }, (_, t) =>
  app.invoke({}, { configurable: { thread_id: `bench-${t}` }, recursionLimit: iterations * 4 + 10 })));
const total = performance.now() - start;
const cpu = process.cpuUsage(cpu0);
const cpuPerIt = (cpu.user + cpu.system) / (iterations * threads);
times.sort((a, b) => a - b);
const pct = (p) => times[Math.min(times.length - 1, Math.round(p * (times.length - 1)))] * 1000;
const perS = (iterations * threads) / (total / 1000);
console.log(`LangGraph.js (synchronous=${normal ? "NORMAL" : "FULL"}), ${threads} thread(s) of ${iterations} iterations: per-thread iteration ` +
            `p50 ${pct(0.5).toFixed(0)} us, p99 ${pct(0.99).toFixed(0)} us, ${perS.toFixed(0)} iterations/s, ` +
            `CPU ${cpuPerIt.toFixed(0)} us/iteration`);
const key = (normal ? "langgraph.normal." : "langgraph.") + (threads === 1 ? "1run" : `c${threads}`);
console.log(`BENCH\t${key}.p50\t${pct(0.5).toFixed(1)}\tus`);
console.log(`BENCH\t${key}.p99\t${pct(0.99).toFixed(1)}\tus`);
console.log(`BENCH\t${key}.it_per_s\t${perS.toFixed(1)}\tit/s`);
console.log(`BENCH\t${key}.cpu_per_it\t${cpuPerIt.toFixed(1)}\tus`);
console.log(`BENCH\t${key}.rss\t${(process.memoryUsage().rss / 1048576).toFixed(1)}\tMiB`);
for (const f of [path, path + "-wal", path + "-shm"]) fs.rmSync(f, { force: true });
