/**
 * The official SDK tutorial's flow (docs/tutorial.md steps 2, 4, 5, 6, 8), with a fixed Node
 * server in place of the one the tutorial has a model write: spawn with ingress, upload
 * /root/app.js, daemonise it with nohup setsid, wait for the port, fetch the preview URL,
 * destroy in finally.
 */
import { CreateosSandboxClient } from "@nodeops-createos/sandbox";

const APP = `
const http = require("http");
http.createServer((req, res) => {
  res.writeHead(200, { "content-type": "text/html" });
  res.end("<h1>tutorial app</h1>");
}).listen(3000, "0.0.0.0");
`;

const client = new CreateosSandboxClient();
// Step 2: spawn with ingress on.
const sandbox = await client.createSandbox({
  shape: "s-4vcpu-4gb",
  rootfs: "devbox:1",
  ingress_enabled: true,
});
const previewUrl = sandbox.previewUrl(3000, { scheme: "http" });
console.log("status      :", sandbox.status);
try {
  // Step 4: upload the app.
  await sandbox.files.upload("/root/app.js", APP);
  const { result } = await sandbox.runCommand("ls", ["-lh", "/root"]);
  if (!result.stdout.includes("app.js")) throw new Error(`no app.js in /root: ${result.stdout}`);
  // Step 5: run it in the background and wait for the port.
  await sandbox.runCommand("sh", ["-c", "nohup setsid node /root/app.js >/tmp/app.log 2>&1 &"]);
  await sandbox.waitForPortReady(3000, { timeoutMs: 15_000 });
  console.log("server is listening on :3000");
  // Step 6: fetch the preview URL.
  const res = await fetch(previewUrl);
  console.log("HTTP status :", res.status);
  if (!res.ok) throw new Error(`app returned HTTP ${res.status}`);
  console.log(await res.text());
} finally {
  // Step 8: tear down.
  await sandbox.destroy().catch((err) => {
    console.error("cleanup: destroy failed:", err instanceof Error ? err.message : String(err));
  });
  console.log("sandbox destroyed");
}
