// Talking to the fake: JSON reads, changes with the CSRF token, the live event stream.

let csrf = null;

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

async function handle(response) {
  let body = null;
  try {
    body = await response.json();
  } catch {
    body = null;
  }
  if (!response.ok) throw new ApiError(response.status, errorText(body, response.status));
  return body;
}

// The dashboard's own errors are {"error": text}; the control API's are JSend envelopes.
function errorText(body, status) {
  if (body && typeof body.error === "string") return body.error;
  const data = body && body.data;
  if (data && typeof data.message === "string") return data.message;
  if (body && typeof body.message === "string") return body.message;
  if (data && typeof data === "object") {
    const pairs = Object.entries(data).filter(([, v]) => typeof v === "string");
    if (pairs.length) return pairs.map(([k, v]) => `${k}: ${v}`).join("; ");
  }
  return `HTTP ${status}`;
}

export async function get(path) {
  let response;
  try {
    response = await fetch(path, { credentials: "same-origin" });
  } catch {
    // A read that failed on the way (the machine's network changed) is tried once more.
    await new Promise((resolve) => setTimeout(resolve, 200));
    response = await fetch(path, { credentials: "same-origin" });
  }
  return handle(response);
}

export async function post(path, body = {}, method = "POST") {
  const headers = { "Content-Type": "application/json" };
  if (csrf) headers["X-CSRF-Token"] = csrf;
  return handle(await fetch(path, {
    method, credentials: "same-origin", headers, body: method === "DELETE" ? undefined : JSON.stringify(body),
  }));
}

// A control-API call made with this page's session (journaled as the call it mirrors).
export async function control(method, path, body = {}) {
  const answer = await post(`api/control/${path}`, body, method);
  return answer && answer.data !== undefined ? answer.data : answer;
}

export async function session() {
  const data = await get("api/session");
  csrf = data.csrf || null;
  return data;
}

export async function login(key) {
  const data = await post("login", { key });
  csrf = data.csrf;
  return data;
}

export async function logout() {
  await post("logout");
  csrf = null;
}

// One EventSource for the whole page; pages subscribe to its batches.
const listeners = new Set();
let source = null;

export function subscribe(listener) {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

function resync() {
  const batch = { resync: true, journal: [], sandboxes: [], removed: [], changed: ["faults", "resources"] };
  for (const listener of listeners) listener(batch);
}

// ``onState(live)`` as the stream comes and goes; ``onLoggedOut()`` once the fake no longer
// knows this page's session (it restarted, or the session ended): the stream cannot resume.
export function connect(onState, onLoggedOut) {
  if (source) return;
  let lost = false;
  const stream = source = new EventSource("api/events");
  stream.addEventListener("hello", () => {
    onState(true);
    if (lost) resync(); // what changed while the stream was down is read again
    lost = false;
  });
  stream.addEventListener("error", async () => {
    lost = true;
    onState(false);
    if (stream.readyState !== EventSource.CLOSED || source !== stream) return;
    // Refused (a 401 after a restart): the browser will not try again. Ask why.
    source = null;
    let known = false;
    try {
      known = (await session()).logged_in;
    } catch {
      known = true; // not answering yet: try the stream again shortly
    }
    if (!known) { onLoggedOut(); return; }
    setTimeout(() => connect(onState, onLoggedOut), 1000);
  });
  stream.addEventListener("batch", (event) => {
    const batch = JSON.parse(event.data);
    batch.receivedAt = performance.now();
    for (const listener of listeners) listener(batch);
  });
  stream.addEventListener("resync", resync);
  stream.addEventListener("logged_out", () => { // the fake does not know this session
    stream.close();
    if (source === stream) source = null;
    onLoggedOut();
  });
}

export function disconnect() {
  if (source) source.close();
  source = null;
}
