// Behaviours the service's clients record, through the official TypeScript SDK (issue 30);
// each block names its source. Usage as sdk_ts_smoke.mjs.
import assert from "node:assert/strict";
import path from "node:path";
import { pathToFileURL } from "node:url";

const entry = path.join(process.env.NODE_PATH ?? "node_modules", "@nodeops-createos/sandbox/dist/index.js");
const sdk = await import(pathToFileURL(entry).href);
const client = new sdk.CreateosSandboxClient({
  apiKey: process.env.CREATEOS_API_KEY,
  baseUrl: process.env.CREATEOS_SANDBOX_BASE_URL,
});
const checked = [];
const check = (name) => checked.push(name);
const rejects = async (call, kind, message) => {
  await assert.rejects(call, (err) => {
    assert.ok(err instanceof kind, `${err.name}: ${err.message}`);
    assert.equal(err.message, message);
    return true;
  });
};

const box = await client.createSandbox({ shape: "s-1vcpu-1gb", name: "fidelity-1" });

// Egress null / [] = allow all (types.ts SetEgressRequest: "`null`, omitted, or `[]` means
// allow all"; how-to/lifecycle.md `setEgress(null)`).
await box.setEgress(["203.0.113.0/24:443"]);
assert.deepEqual((await box.setEgress(null)).egress, []);
assert.deepEqual((await box.getEgress()).egress, []);
const curl = await box.runCommand("curl", ["-sS", "https://pypi.org/simple/"]);
assert.equal(curl.result.exit_code, 6); // allowed: the name does not resolve (no internet)
check("egress-null");

// Create validation (COMPATIBILITY.md: auto-pause 60–86400 "server-validated" on create and
// patch; 0.6.0: a non-zero bandwidth_quota_bytes is rejected with 400; example 40).
await rejects(() => client.createSandbox({ shape: "s-1vcpu-1gb", auto_pause_after_seconds: 30 }),
  sdk.CreateosSandboxValidationError,
  "createos-sandbox request failed (400): auto_pause_after_seconds: must be between 60 and 86400 seconds");
await rejects(() => client.createSandbox({ shape: "s-1vcpu-1gb", bandwidth_quota_bytes: 1 }),
  sdk.CreateosSandboxValidationError,
  "createos-sandbox request failed (400): bandwidth_quota_bytes: cannot be set at create; recharge the quota after create");
const paused = await client.createSandbox({ shape: "s-1vcpu-1gb", auto_pause_after_seconds: 300 });
assert.equal(paused.data.auto_pause_after_seconds, 300);
await paused.destroy();
check("create-validation");

// A command that cannot start sets result.error (types.ts ExecResult.error: "the command could
// not be started"; sh() throws on it) instead of a shell's stderr.
const missing = await box.runCommand("no-such-tool", ["x"]);
assert.deepEqual(missing.result, {
  exit_code: 127, stdout: "", stderr: "",
  error: 'exec: "no-such-tool": executable file not found in $PATH',
});
const frames = [];
for await (const e of box.streamCommand("no-such-tool")) frames.push(e);
assert.deepEqual(frames, [
  { type: "error", message: 'exec: "no-such-tool": executable file not found in $PATH' },
  { type: "exit", exitCode: 127 },
]);
const inScript = await box.runCommand("bash", ["-c", "no-such-tool"]); // bash started: no error
assert.equal(inScript.result.error, "");
assert.equal(inScript.result.exit_code, 127);
check("result-error");

// Duplicate names among live sandboxes are refused (langflow-sandbox-createos 0.2.0
// find_by_name, measured); 409 is the SDK's ValidationError.
await rejects(() => client.createSandbox({ shape: "s-1vcpu-1gb", name: "fidelity-1" }),
  sdk.CreateosSandboxValidationError,
  "createos-sandbox request failed (409): code: sandbox_name_taken, message: a live sandbox already has this name");
check("duplicate-name");

// Networks by id or name (the CLI's internal/api/sandbox.go GetNetwork/DeleteNetwork: "by id
// OR friendly name"; AttachNetwork sends the ref as id).
const net = await client.networks.create({ name: "mesh" });
assert.equal((await client.networks.get("mesh")).id, net.id);
await box.attachNetwork("mesh");
assert.deepEqual((await client.networks.get("mesh")).members.map((m) => m.sandbox_id), [box.id]);
await box.detachNetwork("mesh");
await client.networks.delete("mesh");
await rejects(() => client.networks.get(net.id), sdk.CreateosSandboxNotFoundError,
  "createos-sandbox request failed (404): code: network_not_found, message: network not found");
check("network-by-name");

// Lists clamp limit to 500 (COMPATIBILITY.md 0.6.0): a cap beyond it still walks every page.
assert.deepEqual((await client.listSandboxes({ limit: 1000, status: "running" })).map((s) => s.id), [box.id]);
check("list-clamp");

await box.destroy();
console.log(JSON.stringify({ ok: true, checked }));
