// node:http2 against the fake, as the TS SDK 0.8 opens it (http2.connect(origin): h2c with prior
// knowledge on http://). Usage: node http2_client.mjs ORIGIN API_KEY
import http2 from "node:http2";

const [origin, key] = process.argv.slice(2);
const session = http2.connect(origin);
session.on("error", (err) => { console.error(err); process.exit(2); });

const call = (method, path, body, onChunk) => new Promise((resolve, reject) => {
  const headers = { ":method": method, ":path": path, "x-api-key": key };
  if (body !== undefined) headers["content-type"] = "application/json";
  const req = session.request(headers);
  const chunks = [];
  let status = 0;
  req.on("response", (h) => { status = Number(h[":status"]); });
  req.on("data", (chunk) => { chunks.push(chunk); if (onChunk) onChunk(chunk); });
  req.on("end", () => resolve({ status, text: Buffer.concat(chunks).toString() }));
  req.on("error", reject);
  req.end(body === undefined ? undefined : JSON.stringify(body));
});

const report = {};
const created = await call("POST", "/v1/sandboxes", { shape: "s-1vcpu-1gb" });
report.create = created.status;
const id = JSON.parse(created.text).data.id;
report.get = JSON.parse((await call("GET", `/v1/sandboxes/${id}`)).text).data.status;

// A streamed exec that goes on only once the client has seen its first frame and said so.
const script = "echo one; while [ ! -e /tmp/go ]; do sleep 1; done; echo two";
let released = null;
const streamed = await call(
  "POST", `/v1/sandboxes/${id}/exec?stream=true`,
  { cmd: "bash", args: ["-c", script], stream: true },
  (chunk) => {
    if (released === null && chunk.toString().includes("one")) {
      released = call("PUT", `/v1/sandboxes/${id}/files?path=/tmp/go`, "");
    }
  },
);
report.released = (await released).status;
report.frames = streamed.text.trim().split("\n").map((line) => JSON.parse(line))
  .filter((frame) => !frame.hb);
session.close();
console.log(JSON.stringify(report));
