// The official TypeScript SDK's `templates`, `networks` and `disks` APIs and the sandbox's
// disk and network methods against the fake, every answer checked.
// Usage: CREATEOS_SANDBOX_BASE_URL=... CREATEOS_API_KEY=... CREATEOS_FAKE_CONTROL_KEY=...
//   node sdk_ts_resources.mjs   (with @nodeops-createos/sandbox resolvable through NODE_PATH)
// The control key moves the fake's clock (template builds) and applies out-of-band faults.
import assert from "node:assert/strict";
import path from "node:path";
import { pathToFileURL } from "node:url";

const entry = path.join(process.env.NODE_PATH ?? "node_modules", "@nodeops-createos/sandbox/dist/index.js");
const sdk = await import(pathToFileURL(entry).href);
const baseUrl = process.env.CREATEOS_SANDBOX_BASE_URL;
const client = new sdk.CreateosSandboxClient({ apiKey: process.env.CREATEOS_API_KEY, baseUrl });
const checked = [];
const check = (name) => checked.push(name);

async function control(route, body) {
  const response = await fetch(`${baseUrl}/_fake${route}`, {
    method: "POST",
    headers: { "X-Fake-Control-Key": process.env.CREATEOS_FAKE_CONTROL_KEY, "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}
async function refused(call, status, text) {
  try {
    await call();
  } catch (err) {
    assert.ok(err instanceof sdk.CreateosSandboxApiError, String(err));
    assert.equal(err.statusCode, status, err.message);
    assert.ok(err.message.includes(text), err.message);
    assert.ok(err.requestId.startsWith("req-"));
    return err;
  }
  assert.fail(`expected HTTP ${status} (${text})`);
}
async function collect(iterable) {
  const items = [];
  for await (const item of iterable) items.push(item);
  return items;
}

// -- templates -------------------------------------------------------------------------------
const dockerfile = "FROM devbox:1\nENV GREETING=hi\nRUN mkdir -p /opt/app && echo 1.0 > /opt/app/VERSION\n";
const tpl = await client.templates.create({ name: "app", dockerfile });
assert.equal(tpl.status, "pending"); assert.ok(tpl.id.startsWith("tpl_")); check("templates.create");
assert.equal((await client.templates.get(tpl.id)).dockerfile, undefined);
await control("/clock/advance", { seconds: 10 });
const ready = await client.templates.get("app", { include: "dockerfile" });
assert.equal(ready.status, "ready"); assert.equal(ready.dockerfile, dockerfile);
assert.ok(ready.built_at && ready.ext4_size_bytes > 0); check("templates.get");
const logs = await client.templates.logs(tpl.id);
assert.ok(logs.startsWith("Step 1/3 : FROM devbox:1\n"), logs);
assert.ok(logs.trimEnd().endsWith("built template app on devbox:1"), logs); check("templates.logs");
const events = await collect(client.templates.followLogs(tpl.id));
assert.deepEqual(events.at(-1), { final: true, status: "ready", attempt: 1 });
assert.equal(events[0].line, "Step 1/3 : FROM devbox:1"); check("templates.followLogs");
const broken = await client.templates.create({ name: "broken", dockerfile: "FROM devbox:1\nRUN exit 3\n" });
const doomed = await client.templates.create({ name: "doomed", dockerfile });
const failing = await control("/faults/now", { action: { type: "fail_template_build", template_id: doomed.id, reason: "builder lost" } });
assert.equal(failing.status, 200);
assert.equal((await client.templates.get(doomed.id)).status, "failed");
assert.equal((await client.templates.logs(doomed.id)).trimEnd(), "build failed: builder lost");
await control("/clock/advance", { seconds: 10 });
assert.equal((await client.templates.get(broken.id)).status, "failed");
assert.ok((await client.templates.logs(broken.id)).includes("build failed at line 2: RUN exited with status 3"));
assert.deepEqual((await client.templates.list()).map((t) => t.name).sort(), ["app", "broken", "doomed"]);
check("templates.list");
assert.equal((await collect(client.templates.iterate())).length, 3); check("templates.iterate");
await refused(() => client.templates.create({ name: "app", dockerfile }), 409, "a template with this name already exists");
await refused(() => client.templates.create({ name: "cp", dockerfile: "FROM devbox:1\nCOPY a /b\n" }), 400, "COPY and ADD are not permitted");
const fromTemplate = await client.createSandbox({ shape: "s-1vcpu-1gb", rootfs: tpl.id });
const built = await fromTemplate.sh('cat /opt/app/VERSION; echo "$GREETING"');
assert.equal(built.result.stdout, "1.0\nhi\n");
assert.deepEqual(await client.templates.delete(broken.id), { ok: true, id: broken.id }); check("templates.delete");
await refused(() => client.templates.get(broken.id), 404, "template not found");

// -- networks --------------------------------------------------------------------------------
const net = await client.networks.create({ name: "mesh" });
assert.ok(net.id.startsWith("net_")); assert.equal(net.member_count, 0); check("networks.create");
await refused(() => client.networks.create({ name: "mesh" }), 409, "a network with this name already exists");
const a = await client.createSandbox({ shape: "s-1vcpu-1gb", networks: [{ id: net.id }] });
const b = await client.createSandbox({ shape: "s-1vcpu-1gb" });
const attached = await b.attachNetwork(net.id);
assert.equal(attached.ok, true); assert.equal(attached.network.member_count, 2); check("sandbox.attachNetwork");
await refused(() => b.attachNetwork(net.id), 409, "sandbox is already attached to this network");
const joined = await client.networks.get(net.id);
assert.equal(joined.member_count, 2);
const ips = Object.fromEntries(joined.members.map((m) => [m.sandbox_id, m.ip]));
assert.deepEqual(ips, { [a.id]: "10.200.0.2", [b.id]: "10.200.0.3" });
assert.ok(joined.members.every((m) => m.status === "active")); check("networks.get");
const spare = await client.networks.create({ name: "spare" });
assert.deepEqual((await client.networks.list()).map((n) => n.name).sort(), ["mesh", "spare"]); check("networks.list");
assert.deepEqual((await collect(client.networks.iterate())).map((n) => n.id).sort(), [net.id, spare.id].sort());
check("networks.iterate");
await refused(() => client.networks.delete(net.id), 409, "network in use: 2 member(s)");
assert.equal((await b.detachNetwork(net.id)).ok, true); check("sandbox.detachNetwork");
await refused(() => b.detachNetwork(net.id), 404, "sandbox is not attached to this network");
const vanish = await control("/faults/now", { action: { type: "vanish_network", network_id: net.id } });
assert.equal(vanish.status, 200);
await refused(() => a.detachNetwork(net.id), 404, "network not found");
assert.equal((await client.networks.delete(spare.id)).ok, true); check("networks.delete");
await refused(() => client.networks.get(spare.id), 404, "network not found");

// -- disks -----------------------------------------------------------------------------------
const secret = "s3cr3t-never-echoed";
const request = {
  name: "data",
  kind: "s3",
  config: { bucket: "bkt", endpoint: "https://s3.example.test", region: "eu" },
  credentials: { access_key: "AKIA1", secret_key: secret },
};
const disk = await client.disks.create(request);
assert.ok(disk.id.startsWith("disk_")); assert.equal(disk.config.bucket, "bkt");
assert.ok(!JSON.stringify(disk).includes(secret)); check("disks.create");
assert.equal((await client.disks.create(request)).id, disk.id); // idempotent by name
assert.equal((await client.disks.get("data")).id, disk.id);
assert.equal((await client.disks.get(disk.id)).name, "data"); check("disks.get");
assert.deepEqual((await client.disks.list()).map((d) => d.id), [disk.id]); check("disks.list");
assert.deepEqual((await collect(client.disks.iterate())).map((d) => d.name), ["data"]); check("disks.iterate");
const rotated = await client.disks.rotateCredentials("data", { access_key: "AKIA2", secret_key: "new-" + secret });
assert.equal(rotated.id, disk.id); assert.ok(!JSON.stringify(rotated).includes(secret)); check("disks.rotateCredentials");
const writer = await client.createSandbox({ shape: "s-1vcpu-1gb", disks: [{ disk_id: disk.id, mount_path: "/mnt/data" }] });
await writer.sh("mkdir -p /mnt/data/a /mnt/data/b && echo A > /mnt/data/a/f && echo B > /mnt/data/b/f");
const mounted = await b.attachDisk({ diskId: disk.id, mountPath: "/work", subPath: "a" });
assert.deepEqual([mounted.ok, mounted.id, mounted.mount_status], [true, b.id, "mounted"]);
check("sandbox.attachDisk");
assert.equal((await b.sh("ls /work; cat /work/f")).result.stdout, "f\nA\n"); // one folder of the bucket
const mounts = await b.listDisks();
assert.equal(mounts.length, 1);
assert.deepEqual(
  [mounts[0].disk_id, mounts[0].name, mounts[0].mount_path, mounts[0].sub_path, mounts[0].mount_status],
  [disk.id, "data", "/work", "a", "mounted"],
);
check("sandbox.listDisks");
assert.deepEqual((await collect(b.iterateDisks())).map((m) => m.mount_path), ["/work"]); check("sandbox.iterateDisks");
await refused(() => client.disks.delete(disk.id), 409, "disk is attached to a sandbox");
assert.deepEqual(await b.detachDisk({ diskId: disk.id, mountPath: "/work" }), { detached: true, id: b.id });
assert.deepEqual(await b.detachDisk({ diskId: disk.id, mountPath: "/work" }), { detached: false, id: b.id });
check("sandbox.detachDisk");
const detach = await control("/faults/now", { action: { type: "detach_disk", disk_id: disk.id }, sandbox_id: writer.id });
assert.equal(detach.status, 200);
assert.deepEqual(await writer.listDisks(), []);
assert.equal((await writer.sh("ls -A /mnt/data; echo end")).result.stdout, "end\n");
assert.deepEqual(await client.disks.delete("data"), { deleted: true, id: disk.id }); check("disks.delete");
await refused(() => client.disks.get(disk.id), 404, "disk not found");

for (const box of [fromTemplate, a, b, writer]) await box.destroy();
console.log(JSON.stringify({ ok: true, checked }));
