// The console in a real headless Chromium (Debian's, driven by puppeteer-core) against the
// three real services, started by clients/ts/node_e2e_test.cc. Screenshots go to the test's
// outputs. Exits non-zero on the first failure.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import puppeteer from "puppeteer-core";
import { nodeClient } from "../../../clients/ts/dist/node.js";
import { PausePoint, Stage, SubTask_Status } from "../../../clients/ts/dist/index.js";
import { restartRouter, retried } from "../../../clients/ts/test/harness.mjs";

const require = createRequire(import.meta.url);
const baseUrl = process.env.REIN_HTTP_URL;
const root = process.env.REIN_WORKSPACE_ROOT;
const out = process.env.REIN_OUTPUT_DIR ?? "/tmp";
const axeSource = readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");
const api = nodeClient({ baseUrl, token: "t-both" });

const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});

function step(text) {
  console.log(`--- ${text}`);
}

async function signedIn(token) {
  const context = await browser.createBrowserContext();
  const page = await context.newPage();
  await page.setBypassCSP(true);  // lets the test inject axe-core; the console needs no bypass
  page.on("pageerror", (e) => console.log(`page error: ${e.message}`));
  await page.goto(`${baseUrl}/`);
  await page.waitForSelector("input[type=password]");
  await page.type("input[type=password]", token);
  await click(page, "button[type=submit]");
  await page.waitForSelector("#roles");
  return page;
}

async function axe(page, name) {
  await page.addScriptTag({ content: axeSource });
  const bad = await page.evaluate(async () => {
    const result = await globalThis.axe.run();
    return result.violations
      .filter((v) => v.impact === "serious" || v.impact === "critical")
      .map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(" ")).join("; ")}`);
  });
  assert.deepEqual(bad, [], `axe-core on ${name}`);
}

// Clicks `selector` once it is there. The page re-renders as live events arrive, and a node
// replaced between finding it and clicking it is found again (a few times, then the error).
async function click(page, selector) {
  for (let attempt = 0; ; attempt++) {
    try {
      await page.waitForSelector(selector);
      return await page.click(selector);
    } catch (e) {
      if (attempt >= 20 || !/detached|not clickable|no node/i.test(String(e))) throw e;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

async function textOf(page, selector) {
  return page.$eval(selector, (e) => e.textContent);
}

async function waitText(page, selector, pattern, timeout = 20000) {
  await page.waitForFunction(
    (s, p) => new RegExp(p).test(document.querySelector(s)?.textContent ?? ""),
    { timeout },
    selector,
    pattern.source,
  );
}

async function pausedRun(goal, workspace) {
  const run = await api.start({ goal, workspace, tools: ["write_file"], pausePoints: [PausePoint.BEFORE_MUTATING_TOOL] });
  for await (const event of api.watch(run.runId)) if (event.body.case === "paused") break;
  return api.get(run.runId);
}

try {
  step("a run pauses before a mutating call and shows in the inbox");
  const run = await pausedRun("write a.txt from the browser", "repo");
  const a = await signedIn("t-both");
  assert.match(await textOf(a, "#roles"), /operator, reviewer/);
  await a.waitForSelector(`tr[data-run="${run.runId}"]`);
  assert.match(await textOf(a, "main"), /Before a mutating tool call/);
  await a.screenshot({ path: `${out}/inbox.png`, fullPage: true });
  await axe(a, "the inbox");

  step("the run page, in two reviewers' browsers");
  await click(a, `tr[data-run="${run.runId}"] a`);
  await a.waitForSelector("#approve");
  await waitText(a, "#live", /live/);
  const b = await signedIn("t-reviewer");
  await b.goto(`${baseUrl}/#/run/${run.runId}`);
  await b.waitForSelector("#approve");
  await waitText(b, "#run-stage", /PAUSED/);
  await a.screenshot({ path: `${out}/run-paused.png`, fullPage: true });
  await axe(a, "a paused run's page");

  step("a viewer sees no action controls, and the API refuses a crafted approval");
  const v = await signedIn("t-viewer");
  await v.goto(`${baseUrl}/#/run/${run.runId}`);
  await waitText(v, "#run-stage", /PAUSED/);
  await v.waitForSelector("section[aria-label=Actions]");
  assert.equal(await v.$("#approve"), null, "a viewer's page has an Approve button");
  assert.equal(await v.$("#cancel"), null, "a viewer's page has a Cancel button");
  const crafted = await v.evaluate(async (runId, version) => {
    const r = await fetch("/rein.v1.Router/ResumeRun", {
      method: "POST",
      headers: { "Content-Type": "application/json", Authorization: "Bearer t-viewer" },
      body: JSON.stringify({ runId, expectedVersion: version, review: { approve: {} } }),
    });
    return { status: r.status, body: await r.json() };
  }, run.runId, String(run.state.version));
  assert.equal(crafted.status, 403);
  assert.equal(crafted.body.code, "permission_denied");
  await axe(v, "a viewer's run page");

  step("both reviewers approve the same pause: one wins, the other sees the conflict");
  // b's page goes stale: loaded again with its live stream refused, it shows the pause as it
  // was and nothing moves it on (a stream, even one cut late, would re-render it under the
  // click or remove the button).
  await b.setRequestInterception(true);
  const cutWatch = (req) => (req.url().includes("/WatchRun") ? req.abort() : req.continue());
  b.on("request", cutWatch);
  await b.reload();
  await b.waitForSelector("#approve");
  await click(a, "#approve");
  await waitText(a, "#notice", /Approve: done/);
  await click(b, "#approve");
  await waitText(b, "#error", /Conflict: run .* moved on/);
  b.off("request", cutWatch);
  await b.setRequestInterception(false);
  await b.reload();

  step("the run goes on live to FINISHED in the browser");
  await waitText(a, "#run-stage", /FINISHED/);
  await waitText(b, "#run-stage", /FINISHED/);
  assert.equal(readFileSync(`${root}/repo/a.txt`, "utf8"), "v1");
  assert.equal((await api.get(run.runId)).state.stage, Stage.FINISHED);
  await a.screenshot({ path: `${out}/run-finished.png`, fullPage: true });

  step("arguments edited in the form from the tool's schema are the ones the executor runs");
  const edited = await pausedRun("write an edited a.txt", "repo-json");
  await a.goto(`${baseUrl}/#/run/${edited.runId}`);
  await a.waitForSelector("#edit-args");
  // One field per property of write_file's schema, the required ones marked.
  await a.waitForSelector("#arg-path");
  const form = await textOf(a, "fieldset.args-form");
  assert.match(form, /path \*.*\(required\)/s);
  assert.match(form, /content \*.*\(required\)/s);
  // A required field left empty is refused naming it, before anything is sent.
  const setField = (selector, value) => a.$eval(selector, (e, v) => {
    e.value = v;
    e.dispatchEvent(new Event("input", { bubbles: true }));
  }, value);
  await setField("#arg-path", "");
  await click(a, "#review-edit");
  await waitText(a, "#error", /"path" is required/);
  await setField("#arg-path", "a.txt");
  await setField("#arg-content", "edited in the browser");
  // The raw JSON follows the form.
  assert.deepEqual(JSON.parse(await a.$eval("#edit-args", (e) => e.value)), { path: "a.txt", content: "edited in the browser" });
  await axe(a, "a paused run's page with the arguments form");
  await click(a, "#review-edit");
  await a.waitForSelector("pre[aria-label='Change to the arguments'] .diff-add");
  assert.match(await textOf(a, "pre[aria-label='Change to the arguments']"), /\+\s+"content": "edited in the browser"/);
  await click(a, "#send-edit");
  await waitText(a, "#run-stage", /FINISHED/);
  assert.equal(readFileSync(`${root}/repo-json/a.txt`, "utf8"), "edited in the browser");

  step("a fork made in the browser from an earlier event finishes");
  await a.select("select", "detailed");
  await a.waitForSelector("button.fork");
  await click(a, "button.fork");  // from the first event
  await a.waitForFunction((id) => !location.hash.includes(id), {}, edited.runId);
  const forkId = (await a.evaluate(() => location.hash)).split("/")[2];
  assert.ok(forkId && forkId !== edited.runId);
  await waitText(a, "#run-stage", /PAUSED|FINISHED/);
  console.log(`fork ${forkId} made from ${edited.runId}`);

  step("the fork and its source side by side, as reinctl diff shows them");
  await waitText(a, "#run-stage", /PAUSED|FINISHED/);
  await click(a, "#compare");  // the field holds the fork's source
  await a.waitForFunction(() => location.hash.startsWith("#/compare/"));
  const reinctl = execFileSync("cli/reinctl", [`--router=${process.env.REIN_ROUTER_TARGET}`, "diff", forkId, edited.runId], {
    env: { ...process.env, REIN_TOKEN: "t-both" },
    encoding: "utf8",
  }).trimEnd().split("\n");
  const summary = reinctl[reinctl.length - 1];
  await waitText(a, "#diff-summary", new RegExp(`^${summary.replace(/[()]/g, "\\$&")}$`));
  // reinctl's rows: 60 characters of the left step, the mark, the right step.
  const fit = (t) => (t.length <= 60 ? t : `${t.slice(0, 57)}...`);
  const expected = reinctl.slice(3, -1).map((line) => [line.slice(0, 60).trimEnd(), line[61], line.slice(63)]);
  const shown = await a.$$eval("table.compare tbody tr", (rows) => rows.map((r) => [...r.querySelectorAll("td")].map((td) => td.textContent)));
  assert.deepEqual(shown.map(([, l, m, r]) => [fit(l).trimEnd(), m, r]), expected);
  assert.ok(expected.some(([, m]) => m !== " "), "the fork and its source differ somewhere");
  await a.screenshot({ path: `${out}/compare.png`, fullPage: true });
  await axe(a, "the comparison of two runs");

  step("a plan is edited in the browser (a subtask added) and the run follows it; a question is answered");
  const planned = await api.start({ goal: "write by plan", workspace: "repo-plan", tools: ["write_file"], pausePoints: [PausePoint.AFTER_PLAN] });
  await a.goto(`${baseUrl}/#/run/${planned.runId}`);
  await waitText(a, "#run-stage", /PAUSED/);
  await a.waitForSelector("#edit-plan");
  await a.$eval("#edit-plan", (e) => {
    e.value = "write: write a.txt\nask: ask a person which file to write";
    e.dispatchEvent(new Event("input", { bubbles: true }));
  });
  await click(a, "#send-plan");
  await a.waitForSelector("#answer", { timeout: 20000 });
  assert.match(await textOf(a, "section[aria-label=Actions]"), /Which file should I write\?/);
  await a.type("#answer", "write b.txt please");
  await click(a, "#send-answer");
  await waitText(a, "#run-stage", /FINISHED/);
  const plannedRun = await api.get(planned.runId);
  // The planned stack is dropped (ended as FAILED, "replaced by the reviewer's plan"), then
  // the reviewer's two subtasks run.
  const completed = plannedRun.state.completedSubtasks.map((t) => `${t.id}:${SubTask_Status[t.status]}`);
  assert.deepEqual(completed, ["write:FAILED", "write:COMPLETED", "ask:COMPLETED"]);
  assert.equal(readFileSync(`${root}/repo-plan/b.txt`, "utf8"), "after the answer");

  step("a rejection's feedback reaches the next decision");
  const rejected = await pausedRun("write, rejected once", "repo-reject");
  await a.goto(`${baseUrl}/#/run/${rejected.runId}`);
  await a.waitForSelector("#reject-feedback");
  await a.type("#reject-feedback", "not a.txt; write c.txt instead");
  await click(a, "#reject");
  await waitText(a, "#notice", /Reject: done/);
  // Planned again with the feedback; the next decision writes c.txt, paused before it.
  await a.waitForFunction(() => /c\.txt/.test(document.querySelector("section[aria-label=Actions]")?.textContent ?? ""), { timeout: 20000 });
  await click(a, "#approve");
  await waitText(a, "#run-stage", /FINISHED/);
  assert.equal(readFileSync(`${root}/repo-reject/c.txt`, "utf8"), "after the rejection");

  step("deep link to an event");
  await a.goto(`${baseUrl}/#/run/${run.runId}/e/2`);
  await a.waitForSelector("#event-2.target");

  step("a long run's page renders one page of events, whichever page is shown");
  const long = await api.start({ goal: "a long run", workspace: "repo-long", tools: ["write_file"], limits: { maxIterations: 200 } });
  let longEvents = 0;
  for await (const _ of api.watch(long.runId)) longEvents++;
  assert.ok(longEvents > 400, `the long run logged ${longEvents} events`);
  const rows = () => a.$$eval("div.event", (e) => e.length);
  await a.goto(`${baseUrl}/#/run/${long.runId}`);
  await waitText(a, "section[aria-label=Timeline] h2", new RegExp(`\\(${longEvents} events\\)`));
  await a.waitForSelector(`#event-${longEvents}`);
  assert.ok((await rows()) <= 200, `${await rows()} event rows in the page`);
  await click(a, "#timeline-earlier");
  await a.waitForFunction((n) => !document.getElementById(`event-${n}`), {}, longEvents);
  assert.ok((await rows()) <= 200);
  await a.goto(`${baseUrl}/#/run/${long.runId}/e/1`);
  await a.waitForSelector("#event-1.target");
  assert.ok((await rows()) <= 200, `${await rows()} event rows around event 1`);

  step("a router restart while a run's page is open: the page resumes from the last seq");
  const restarted = await pausedRun("write across a restart", "repo-restart");
  await a.goto(`${baseUrl}/#/run/${restarted.runId}`);
  await a.waitForSelector("#approve");
  await waitText(a, "#live", /^live$/);
  const before = await a.$$eval("div.event", (e) => e.length);
  await restartRouter();
  await waitText(a, "#live", /^live$/, 30000);  // the page's stream is open again
  // Approved from outside the page: the events after the restart arrive on the resumed stream.
  await retried(async () => api.approve(await api.get(restarted.runId), "test"));
  await waitText(a, "#run-stage", /FINISHED/, 30000);
  const seqs = [];
  for await (const e of api.watch(restarted.runId)) seqs.push(Number(e.seq));
  await waitText(a, "section[aria-label=Timeline] h2", new RegExp(`\\(${seqs.length} events\\)`));
  const shownSeqs = await a.$$eval("div.event", (e) => e.map((d) => Number(d.id.slice("event-".length))));
  assert.deepEqual(shownSeqs, seqs, "every seq exactly once, in order");
  assert.ok(shownSeqs.length > before, "events arrived after the restart");
  console.log("console_test: all passed");
} finally {
  await browser.close();
}
