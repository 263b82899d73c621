// The console's figures on a run of 10,000 events, printed (a benchmark, not a test): the
// bundle's size, and in Debian's headless Chromium the run page's first paint, the time until
// the whole log is in the page, time to interactive, the longest task, and paging through it.
// The run is made by the real router (the scripted planner loops writing a file; started by
// clients/ts/node_e2e_test.cc, which the console_bench target links): see docs/HTTP_API.md.
import { readFileSync, readdirSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import puppeteer from "puppeteer-core";
import { nodeClient } from "../../../clients/ts/dist/node.js";

const baseUrl = process.env.REIN_HTTP_URL;
const target = Number(process.env.REIN_BENCH_EVENTS ?? 10000);
const loads = Number(process.env.REIN_BENCH_LOADS ?? 5);
const api = nodeClient({ baseUrl, token: "t-both" });

const dist = join(dirname(fileURLToPath(import.meta.url)), "..", "dist");
console.log("bundle (router_service/console/dist):");
for (const name of readdirSync(dist).sort()) {
  const bytes = readFileSync(join(dist, name));
  console.log(`  ${name.padEnd(11)} ${String(statSync(join(dist, name)).size).padStart(8)} bytes, ${String(gzipSync(bytes).length).padStart(7)} gzipped`);
}

async function loop(iterations) {
  const run = await api.start({ goal: "a long run", workspace: "repo-long", tools: ["write_file"], limits: { maxIterations: iterations, deadline: { seconds: 3600n } } });
  let events = 0;
  for await (const _ of api.watch(run.runId, { maxRetries: 100 })) events++;
  return { run, events };
}

// Events per iteration and the fixed part, from two short runs; then the long one.
const small = await loop(10), larger = await loop(30);
const per = (larger.events - small.events) / 20;
const fixed = small.events - 10 * per;
const iterations = Math.ceil((target - fixed) / per);
const t0 = Date.now();
const { run, events } = await loop(iterations);
console.log(`run ${run.runId}: ${events} events in ${iterations} iterations, made through the router in ${((Date.now() - t0) / 1000).toFixed(1)} s`);

// The same log read by the Node client, for what the page's time owes to the router.
for (const binary of [false, true]) {
  const client = nodeClient({ baseUrl, token: "t-both", binary });
  const t = performance.now();
  let n = 0;
  for await (const _ of client.watch(run.runId)) n++;
  console.log(`the log read by the Node client over HTTP (${binary ? "binary" : "JSON"}): ${n} events in ${(performance.now() - t).toFixed(0)} ms`);
}

const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
const page = await browser.newPage();
await page.setViewport({ width: 1280, height: 900 });
await page.evaluateOnNewDocument(() => {
  globalThis.__long = [];
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) globalThis.__long.push([e.startTime, e.duration]);
  }).observe({ type: "longtask", buffered: true });
});
await page.goto(`${baseUrl}/`);
await page.waitForSelector("input[type=password]");
await page.type("input[type=password]", "t-both");
await page.click("button[type=submit]");
await page.waitForSelector("#roles");  // the token is in this tab's sessionStorage from now on

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const samples = [];
for (let i = 0; i < loads; i++) {
  await page.goto("about:blank");
  await page.goto(`${baseUrl}/#/run/${run.runId}`);
  // The whole log in the page: the count in the heading and the last event's row.
  const whole = await page.waitForFunction(
    (n) => document.getElementById(`event-${n}`) && document.querySelector("section[aria-label=Timeline] h2")?.textContent?.includes(`(${n} events)`) && performance.now(),
    { timeout: 120000, polling: "raf" },
    events,
  ).then((h) => h.jsonValue());
  await new Promise((r) => setTimeout(r, 1500));  // a quiet window after it
  const m = await page.evaluate(() => ({
    fp: performance.getEntriesByName("first-paint")[0]?.startTime ?? NaN,
    fcp: performance.getEntriesByName("first-contentful-paint")[0]?.startTime ?? NaN,
    first: performance.getEntriesByName("rein-first-event")[0]?.startTime ?? NaN,
    received: performance.getEntriesByName("rein-log-received")[0]?.startTime ?? NaN,
    long: globalThis.__long,
    rows: document.querySelectorAll("div.event").length,
  }));
  // Time to interactive: the whole log shown and no long task (> 50 ms) after it, else the end
  // of the last long task.
  const lastLongEnd = Math.max(0, ...m.long.map(([s, d]) => s + d));
  samples.push({ fp: m.fp, fcp: m.fcp, first: m.first, received: m.received, whole, tti: Math.max(whole, lastLongEnd), longest: Math.max(0, ...m.long.map(([, d]) => d)), rows: m.rows });
}
const fmt = (key) => `median ${median(samples.map((s) => s[key])).toFixed(0).padStart(6)} ms, max ${Math.max(...samples.map((s) => s[key])).toFixed(0).padStart(6)} ms`;
console.log(`run page of ${events} events, ${loads} loads (from navigation start):`);
console.log(`  first paint            ${fmt("fp")}`);
console.log(`  first contentful paint ${fmt("fcp")}`);
console.log(`  first event received   ${fmt("first")}`);
console.log(`  whole log received     ${fmt("received")}`);
console.log(`  whole log in the page  ${fmt("whole")}`);
console.log(`  time to interactive    ${fmt("tti")}`);
console.log(`  longest task           ${fmt("longest")}`);
console.log(`  event rows in the DOM  ${Math.max(...samples.map((s) => s.rows))} at most`);

// Paging to the first event and back, a page (200 events) a click.
const clicks = [];
await page.evaluate(() => (globalThis.__long = []));
for (;;) {
  const disabled = await page.$eval("#timeline-earlier", (b) => b.disabled);
  if (disabled) break;
  const before = await page.$eval("div.event", (d) => d.id);
  const t = await page.evaluate(() => performance.now());
  await page.click("#timeline-earlier");
  const done = await page.waitForFunction((id) => document.querySelector("div.event")?.id !== id && performance.now(), { polling: "raf" }, before).then((h) => h.jsonValue());
  clicks.push(done - t);
}
const pagingLong = await page.evaluate(() => Math.max(0, ...globalThis.__long.map((e) => e[1])));
console.log(`paging to event 1: ${clicks.length} clicks, each shown in median ${median(clicks).toFixed(0)} ms, max ${Math.max(...clicks).toFixed(0)} ms; longest task ${pagingLong.toFixed(0)} ms`);
await browser.close();
