import { CreateosSandboxClient } from "@nodeops-createos/sandbox";

const client = new CreateosSandboxClient({
  baseUrl: process.env.CREATEOS_SANDBOX_BASE_URL!,
  apiKey: process.env.CREATEOS_SANDBOX_API_KEY!,
});

const sandbox = await client.createSandbox({
  shape: "s-4vcpu-4gb",
  rootfs: "devbox:1",
  ingress_enabled: true,          // provisions the public hostname
});

// Get the URL before try so you can log it even if setup fails.
// Use scheme: "http" — see "Scheme: http vs https" below.
const url = sandbox.previewUrl(8080, { scheme: "http" });
console.log("preview URL:", url);

try {
  // Start the server in the background.
  // IMPORTANT: bind to 0.0.0.0, not 127.0.0.1 — ingress forwards to eth0,
  // not loopback. A server bound to localhost is unreachable from outside.
  // nohup/setsid daemonises without systemd; redirect stdio or runCommand blocks.
  await sandbox.runCommand("sh", [
    "-c",
    "nohup setsid python3 -m http.server 8080 --bind 0.0.0.0 >/tmp/srv.log 2>&1 &",
  ]);

  // Block until the port accepts connections inside the VM.
  // waitForPortReady probes /dev/tcp from inside — it confirms the listener
  // is up before ingress routing matters.
  await sandbox.waitForPortReady(8080, { timeoutMs: 15_000 });

  // The port is bound. Fetch through the public ingress URL.
  const res = await fetch(url);
  console.log("HTTP", res.status, await res.text());
} finally {
  await sandbox.destroy();
}
