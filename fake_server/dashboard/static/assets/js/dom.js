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

export function table(headers, rows) {
  return h("table", { class: "grid" },
    h("thead", {}, h("tr", {}, headers.map((name) => h("th", {}, name)))),
    h("tbody", {}, rows));
}

export function section(title, ...children) {
  return h("section", { class: "card" }, h("h2", {}, title), ...children);
}
