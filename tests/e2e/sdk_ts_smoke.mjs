// The official TypeScript SDK's client and sandbox methods against the fake.
// Usage: CREATEOS_SANDBOX_BASE_URL=... CREATEOS_API_KEY=... node sdk_ts_smoke.mjs
// (with @nodeops-createos/sandbox resolvable, e.g. NODE_PATH=<dir>/node_modules).
import assert from "node:assert/strict";
import path from "node:path";
import { pathToFileURL } from "node:url";

// The package is ESM-only with an `exports` map; load its entry from NODE_PATH directly.
const entry = path.join(process.env.NODE_PATH ?? "node_modules", "@nodeops-createos/sandbox/dist/index.js");
const sdk = await import(pathToFileURL(entry).href);
const client = new sdk.CreateosSandboxClient({
  apiKey: process.env.CREATEOS_API_KEY,
  baseUrl: process.env.CREATEOS_SANDBOX_BASE_URL,
});
const checked = [];
const check = (name) => checked.push(name);
const all = async (generator) => {
  const items = [];
  for await (const item of generator) items.push(item);
  return items;
};
const rejects = async (call, kind, message) => {
  await assert.rejects(call, (err) => err instanceof kind && err.message === message);
};

if (typeof client.prewarm === "function") { // 0.8: opens the HTTP/2 session, calls nothing
  await client.prewarm(); check("prewarm");
}
assert.equal((await client.healthz()).up, true); check("healthz");
assert.equal((await client.readyz()).ready, true); check("readyz");
assert.ok((await client.whoami()).user_id.startsWith("usr-")); check("whoami");
assert.ok((await client.listShapes()).some((s) => s.id === "s-1vcpu-1gb")); check("listShapes");
assert.equal((await client.listRootfs()).default, "devbox:1"); check("listRootfs");
assert.equal((await client.listHosts()).length, 2); check("listHosts");
assert.deepEqual((await all(client.iterateHosts())).map((h) => h.id), ["host-eu-1", "host-us-1"]);
check("iterateHosts");

const box = await client.createSandbox({ shape: "s-1vcpu-1gb", rootfs: "devbox:1" });
assert.equal(box.status, "running"); check("createSandbox");
assert.equal((await client.getSandbox(box.id)).id, box.id); check("getSandbox");
assert.equal((await client.getSandboxByIP(box.ip)).id, box.id); check("getSandboxByIP");
assert.ok((await client.listSandboxes()).some((s) => s.id === box.id)); check("listSandboxes");
assert.deepEqual((await all(client.iterateSandboxes())).map((s) => s.id), [box.id]);
check("iterateSandboxes");
await box.refresh(); check("refresh");
assert.equal(box.data.paused_at, undefined);
const view = box.toJSON(); check("toJSON");
assert.equal(view.id, box.id);
assert.equal(view.status, "running");
assert.equal(view.bandwidth_quota_bytes, 10 * 1024 ** 3);
assert.ok(!("paused_at" in view) && !("forked_from" in view));
assert.equal((await box.sh("echo $0; pwd")).result.stdout, "bash\n/root\n"); check("sh");
await rejects(() => box.sh("echo out; exit 3", { label: "step" }), sdk.CreateosSandboxError,
  "step: command exited 3 after 0ms\nstdout: out\n");
await rejects(() => box.waitForPortReady(8080, { timeoutMs: 1000 }), sdk.CreateosSandboxTimeoutError,
  `Port 8080 did not become ready on sandbox ${box.id} within 1s.`);
check("waitForPortReady");
assert.equal((await box.runCommand("echo", ["hi"])).result.stdout, "hi\n"); check("runCommand");
const events = [];
for await (const e of box.streamCommand("bash", ["-c", "echo s; exit 2"])) events.push(e);
assert.ok(events.length > 0); check("streamCommand");
await box.files.upload("/root/seed.txt", "seed\n"); check("files.upload");
const bytes = new TextDecoder().decode(await box.files.download("/root/seed.txt"));
assert.equal(bytes, "seed\n"); check("files.download");
assert.equal((await box.resize(20480)).disk_mib, 20480); check("resize");
await box.setIngress(true); check("setIngress");
assert.ok(box.previewUrl(8080).includes(`/_ingress/${box.id}/8080/`)); check("previewUrl");
await box.setAutoPause(600); check("setAutoPause");
assert.equal(box.data.auto_pause_after_seconds, 600);
const key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExampleKeyMaterial user@host";
assert.equal((await box.addSSHPubkeys([key])).count, 1); check("addSSHPubkeys");
assert.deepEqual((await box.setEgress(["pypi.org"])).egress, ["pypi.org"]); check("setEgress");
assert.deepEqual((await box.getEgress()).egress, ["pypi.org"]); check("getEgress");
const bw = await box.getBandwidth(); check("getBandwidth");
assert.equal((await box.rechargeBandwidth(10)).quota_bytes, bw.quota_bytes + 10); check("rechargeBandwidth");
await box.pause(); await box.waitUntilPaused(); check("pause"); check("waitUntilPaused");
const fork = await box.fork({ start_paused: true }); check("fork");
await fork.waitUntilPaused();
assert.equal(fork.data.forked_from, box.id);
await fork.resume(); await fork.waitUntilRunning(); check("resume"); check("waitUntilRunning");
assert.equal((await fork.runCommand("cat", ["/root/seed.txt"])).result.stdout, "seed\n");
try {
  await box.attachNetwork("net-missing"); // the box is paused: the service refuses with 409
  assert.fail("attachNetwork on a paused sandbox should fail");
} catch (err) {
  assert.equal(err.status ?? err.statusCode, 409);
  assert.ok(err.message.endsWith("code: not_running, message: sandbox is paused, not running"));
  assert.ok(err.requestId.startsWith("req-"));
}

// Credit: with none, the cost-incurring calls answer 402, which the SDK raises as
// CreateosSandboxPaymentRequiredError and never retries.
const control = (method, route, body) =>
  fetch(`${process.env.CREATEOS_SANDBOX_BASE_URL}/_fake${route}`, {
    method,
    headers: { "X-Fake-Control-Key": process.env.CREATEOS_FAKE_CONTROL_KEY, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
assert.equal((await control("PUT", "/credit", { credit: 0 })).status, 200);
const unpaid = [
  () => client.createSandbox({ shape: "s-1vcpu-1gb" }),
  () => box.resume(),
  () => box.fork({}),
  () => fork.rechargeBandwidth(1),
];
for (const call of unpaid) {
  await assert.rejects(call, (err) =>
    err instanceof sdk.CreateosSandboxPaymentRequiredError && err.statusCode === 402 &&
    err.message.includes("code: payment_required, message: insufficient credit"));
}
const journal = (await (await control("GET", "/journal")).json()).data.events;
const paymentRequired = journal.filter((e) => e.kind === "response" && e.status === 402);
assert.deepEqual(paymentRequired.map((e) => e.operation),
  ["create_sandbox", "resume_sandbox", "fork_sandbox", "recharge_bandwidth"]); // one each: no retry
assert.equal((await control("PUT", "/credit", { credit: null })).status, 200);

assert.equal((await fork.destroy()).status, "destroying");
assert.equal((await box.destroy()).status, "destroying"); check("destroy");
await box.waitUntilDestroyed(); check("waitUntilDestroyed");
console.log(JSON.stringify({ ok: true, checked }));
