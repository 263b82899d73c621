// What the Node scripts run by clients/ts/node_e2e_test.cc share: asking the test for a router
// restart, and retrying a call while the router comes back.
import assert from "node:assert/strict";
import { existsSync, writeFileSync } from "node:fs";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Asks node_e2e_test.cc to kill the router (SIGKILL) and start it again on the same ports and
// store; returns once it serves again.
export async function restartRouter() {
  const control = process.env.REIN_CONTROL_DIR;
  assert.ok(control, "REIN_CONTROL_DIR must be set");
  writeFileSync(`${control}/restart-router`, "");
  for (let i = 0; !existsSync(`${control}/router-restarted`); i++) {
    assert.ok(i < 600, "the router was not restarted");
    await sleep(100);
  }
}

// `call()`, tried again every 200 ms while it fails, up to `attempts` times.
export async function retried(call, attempts = 50) {
  for (let i = 0; ; i++) {
    try {
      return await call();
    } catch (error) {
      if (i + 1 >= attempts) throw error;
      await sleep(200);
    }
  }
}
