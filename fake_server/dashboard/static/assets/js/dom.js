// Building the page from data without ever parsing data as HTML: every string becomes a
// text node (textContent), attributes are set one by one, links only to http(s) or the
// dashboard's own hash routes.

const SAFE_URL = /^(https?:\/\/|#\/|api\/)/i;

export function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) {
      node.addEventListener(name.slice(2), value);
    } else if (name === "class") {
      node.className = value;
    } else if (name === "href" || name === "src" || name === "action") {
      const text = String(value);
      node.setAttribute(name, SAFE_URL.test(text) ? text : "#");
    } else if (name === "dataset") {
      Object.assign(node.dataset, value);
    } else {
      node.setAttribute(name, value === true ? "" : String(value));
    }
  }
  append(node, children);
  return node;
}

export function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function replace(node, ...children) {
  node.replaceChildren();
  return append(node, children);
}

export function text(value) {
  return value === undefined || value === null ? "" : String(value);
}

export function ago(seconds) {
  if (!(seconds >= 0)) return "";
  if (seconds < 60) return `${Math.floor(seconds)}s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)}h`;
  return `${Math.floor(seconds / 86400)}d`;
}

export function bytes(n) {
  if (n < 0) return "unmetered";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return `${i ? n.toFixed(1) : n} ${units[i]}`;
}

export function fakeTime(t) {
  return t === null || t === undefined ? "" : `+${Number(t).toFixed(3)}s`;
}

export function statusBadge(status) {
  return h("span", { class: `badge s-${String(status).replace(/[^a-z]/g, "")}` }, status);
}

// A table; ``caption`` names it for screen readers (shown only to them).
export function table(headers, rows, caption = null) {
  return h("div", { class: "scroll-x" },
    h("table", { class: "grid" },
      caption ? h("caption", { class: "sr-only" }, caption) : null,
      h("thead", {}, h("tr", {}, headers.map((name) => h("th", { scope: "col" }, name || h("span", { class: "sr-only" }, "actions"))))),
      h("tbody", {}, rows)));
}

export function section(title, ...children) {
  return h("section", { class: "card", "aria-label": typeof title === "string" ? title : null }, h("h2", {}, title), ...children);
}

// Copies ``value`` (an id, a command) whole, whatever the page shows of it.
export function copyButton(value, label) {
  const button = h("button", { type: "button", class: "copy", "aria-label": label, title: label }, "copy");
  button.addEventListener("click", async (event) => {
    event.stopPropagation();
    const done = await copyText(value);
    button.textContent = done ? "copied" : "select it";
    setTimeout(() => { button.textContent = "copy"; }, 1500);
  });
  return button;
}

async function copyText(value) {
  try {
    await navigator.clipboard.writeText(value);
    return true;
  } catch {
    return false;
  }
}

// An id shown whole (selectable), with a button that copies it.
export function idText(id, what = "id") {
  if (!id) return "";
  return h("span", { class: "id" }, h("span", { class: "mono", title: id }, id), " ", copyButton(id, `copy ${what} ${id}`));
}

// A button that asks again inline before it acts (no dialog).
export function confirmButton(label, question, act, attrs = {}) {
  const button = h("button", { type: "button", ...attrs }, label);
  const holder = h("span", { class: "confirm" }, button);
  button.addEventListener("click", () => {
    const yes = h("button", { type: "button", class: "danger" }, `yes, ${label}`);
    const no = h("button", { type: "button" }, "cancel");
    const restore = () => { replace(holder, button); button.focus(); };
    yes.addEventListener("click", async () => { restore(); await act(); });
    no.addEventListener("click", restore);
    replace(holder, h("span", { class: "muted" }, question, " "), yes, " ", no);
    yes.focus();
  });
  return holder;
}

// A short message about what an action did, read out by screen readers.
export function notify(message, bad = false) {
  const node = document.getElementById("notice");
  if (!node) return;
  node.textContent = message;
  node.className = bad ? "notice error" : "notice";
  clearTimeout(notify.timer);
  notify.timer = setTimeout(() => { node.textContent = ""; }, 6000);
}

// ``body`` pretty-printed when it is JSON (or JSON lines), as stored otherwise.
export function pretty(body) {
  if (body === null || body === undefined) return "";
  const trimmed = String(body).trim();
  if (!trimmed.startsWith("{") && !trimmed.startsWith("[")) return String(body);
  try {
    return JSON.stringify(JSON.parse(trimmed), null, 2);
  } catch {
    const lines = trimmed.split("\n");
    try {
      return lines.map((line) => JSON.stringify(JSON.parse(line))).join("\n");
    } catch {
      return String(body);
    }
  }
}

// Keeps a scrollable node at its bottom when it was there, else where the reader left it.
export function atBottom(node) {
  return node.scrollHeight - node.scrollTop - node.clientHeight < 24;
}
