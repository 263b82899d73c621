// The HTTP port in mutual TLS against a real router (started by node_e2e_test.cc --tls, with
// --require_client_cert --client_ca): the TypeScript client and the official Connect client
// with a certificate of the clients' CA, curl over https, and the clients it refuses.
// Exits non-zero on the first failure.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { nodeClient } from "../dist/node.js";
import { Router, PausePoint, Stage } from "../dist/index.js";

const baseUrl = process.env.REIN_HTTP_URL;
const root = process.env.REIN_WORKSPACE_ROOT;
const dir = process.env.REIN_TLS_DIR;
assert.ok(baseUrl?.startsWith("https://") && root && dir, "REIN_HTTP_URL (https), REIN_WORKSPACE_ROOT and REIN_TLS_DIR must be set");
const file = (name) => `${dir}/${name}`;
const ca = readFileSync(file("ca.pem"), "utf8");
const cert = readFileSync(file("public-client.pem"), "utf8");
const key = readFileSync(file("public-client.key"), "utf8");

// Our client, with the clients' CA certificate: a run pauses, is approved, and is watched to
// its end over TLS.
const operator = nodeClient({ baseUrl, token: "t-both", ca, cert, key });
const viewer = nodeClient({ baseUrl, token: "t-viewer", ca, cert, key, binary: true });
const spec = { goal: "write a.txt (tls)", workspace: "repo", tools: ["write_file"], pausePoints: [PausePoint.BEFORE_MUTATING_TOOL] };
const run = await operator.start(spec, "key-tls");
let paused;
for await (const event of viewer.watch(run.runId)) {
  if (event.body.case === "paused") {
    paused = await viewer.get(run.runId);
    break;
  }
}
assert.equal(paused?.state.stage, Stage.PAUSED, "the run paused before the call");
await operator.approve(paused);
let last;
for await (const event of viewer.watch(run.runId)) last = event;
assert.equal(last.body.case, "finished");
assert.equal(readFileSync(`${root}/repo/a.txt`, "utf8"), "v1");
const resumed = (await viewer.get(run.runId)).state;
console.log(`tls: run ${run.runId} ${Stage[resumed.stage]}`);

// The official client on its own, with the same certificate.
const raw = createClient(
  Router,
  createConnectTransport({
    baseUrl,
    httpVersion: "1.1",
    nodeOptions: { ca, cert, key },
    interceptors: [(next) => (req) => (req.header.set("Authorization", "Bearer t-viewer"), next(req))],
  }),
);
assert.ok((await raw.listRuns({ pageSize: 10 })).runs.some((r) => r.runId === run.runId));

// Refused in the handshake: no certificate, another CA's, and a router certificate the
// client does not trust. No answer comes back, only a transport error.
async function refused(options, what) {
  try {
    await nodeClient({ baseUrl, token: "t-viewer", ...options }).get(run.runId);
  } catch (error) {
    console.log(`refused (${what}): ${String(error.message).split("\n")[0]}`);
    return;
  }
  assert.fail(`${what}: served`);
}
await refused({ ca }, "no client certificate");
await refused({ ca, cert: readFileSync(file("stranger.pem"), "utf8"), key: readFileSync(file("stranger.key"), "utf8") }, "another CA's certificate");
await refused({ ca: readFileSync(file("other-ca.pem"), "utf8"), cert, key }, "the router's certificate not trusted");

// curl over https, as docs/HTTP_API.md shows it.
function curl(args) {
  const out = spawnSync("curl", ["-sS", "-w", "\n%{http_code}", "--cacert", file("ca.pem"), ...args], { encoding: "utf8" });
  const lines = out.stdout.trimEnd().split("\n");
  return { exit: out.status, status: Number(lines.pop()), body: lines.join("\n"), stderr: out.stderr };
}
const getRun = [`${baseUrl}/rein.v1.Router/GetRun`, "-H", "Content-Type: application/json", "-d", JSON.stringify({ runId: run.runId })];
const withCert = ["--cert", file("public-client.pem"), "--key", file("public-client.key")];
const ok = curl([...withCert, "-H", "Authorization: Bearer t-viewer", ...getRun]);
assert.equal(ok.status, 200, ok.body + ok.stderr);
assert.equal(JSON.parse(ok.body).state.stage, "FINISHED");
const noCert = curl(["-H", "Authorization: Bearer t-viewer", ...getRun]);
assert.notEqual(noCert.exit, 0, "curl without a certificate was served");
assert.notEqual(noCert.status, 200);
// A certificate is not a principal where the router has tokens, whatever headers claim.
const forged = curl([...withCert, "-H", "X-Forwarded-Client-Cert: URI=spiffe://rein/admin", "-H", "X-Rein-Principal: bo", ...getRun]);
assert.equal(forged.status, 401, forged.body);
assert.equal(JSON.parse(forged.body).code, "unauthenticated");
console.log("tls_test: all passed");
