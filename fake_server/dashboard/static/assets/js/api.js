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
  if (!response.ok) {
    const message = body && typeof body.error === "string" ? body.error : `HTTP ${response.status}`;
    throw new ApiError(response.status, message);
  }
  return body;
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

export async function post(path, body = {}) {
  const headers = { "Content-Type": "application/json" };
  if (csrf) headers["X-CSRF-Token"] = csrf;
  return handle(await fetch(path, {
    method: "POST", credentials: "same-origin", headers, body: JSON.stringify(body),
  }));
}

export async function session() {
  const data = await get("api/session");
  csrf = data.csrf;
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

export function connect(onState) {
  if (source) return;
  let lost = false;
  source = new EventSource("api/events");
  source.addEventListener("hello", () => {
    onState(true);
    if (lost) resync(); // what changed while the stream was down is read again
    lost = false;
  });
  source.addEventListener("error", () => { lost = true; onState(false); });
  source.addEventListener("batch", (event) => {
    const batch = JSON.parse(event.data);
    batch.receivedAt = performance.now();
    for (const listener of listeners) listener(batch);
  });
  source.addEventListener("resync", resync);
}

export function disconnect() {
  if (source) source.close();
  source = null;
}
