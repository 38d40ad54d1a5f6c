// The journal's side pane: one row's request and reply as the journal stored them (JSON
// pretty-printed), its ids whole with copy buttons, and the call as a curl command with the
// key left to the shell ($CREATEOS_API_KEY), never written out.

import * as api from "../api.js";
import { copyButton, fakeTime, h, idText, pretty, replace, table, text } from "../dom.js";

// Headers curl sends itself, or that say nothing a replay needs.
const DROPPED = new Set(["content-length", "accept-encoding", "user-agent", "cookie", "x-csrf-token", "x-request-id"]);
const KEYS = {
  "x-api-key": "X-Api-Key: $CREATEOS_API_KEY",
  "x-auth-token": "X-Auth-Token: $CREATEOS_API_KEY",
  "x-access-token": "X-Access-Token: $CREATEOS_SANDBOX_TOKEN",
  "x-fake-control-key": "X-Fake-Control-Key: $CREATEOS_FAKE_CONTROL_KEY",
};

function quote(value) {
  return `'${String(value).replace(/'/g, "'\\''")}'`;
}

// The call as curl: the fake's address, its headers (credentials as shell variables, other
// masked values left out), its body as stored (a note says when it was cut or binary).
export function curlOf(e, origin) {
  const request = e.request;
  const query = request.query ? `?${request.query}` : "";
  const lines = [`curl -X ${e.method} ${quote(`${origin}${e.path}${query}`)}`];
  const notes = [];
  for (const [name, value] of request.headers) {
    if (DROPPED.has(name)) continue;
    if (KEYS[name]) { lines.push(`-H "${KEYS[name]}"`); continue; }
    if (value === "<redacted>") { notes.push(`# header ${name} was masked in the journal: add it yourself`); continue; }
    lines.push(`-H ${quote(`${name}: ${value}`)}`);
  }
  const body = request.body;
  if (body) {
    if (body.startsWith("<binary,")) notes.push(`# the body was binary (${body}): send it with --data-binary @FILE`);
    else if (/… \(\d+ more characters\)$/.test(body)) notes.push("# the body was cut in the journal: this is its start only");
    else lines.push(`--data-raw ${quote(body)}`);
  }
  return [...notes, lines.join(" \\\n  ")].join("\n");
}

function message(title, m) {
  if (!m) return h("section", { class: "message" }, h("h3", {}, title), h("p", { class: "muted" }, "no reply yet"));
  return h("section", { class: "message" },
    h("h3", {}, title, m.status ? ` ${m.status}` : ""),
    m.headers.length ? table(["name", "value"], m.headers.map(([n, v]) => h("tr", {}, h("td", { class: "mono" }, n), h("td", { class: "mono" }, v))), `${title} headers`) : h("p", { class: "muted" }, "no headers stored"),
    m.body === null ? h("p", { class: "muted" }, "no body stored") : h("pre", { class: "body", tabindex: "0", "aria-label": `${title} body` }, pretty(m.body)));
}

export function detailPane(info) {
  const inner = h("div", {}, h("p", { class: "muted" }, "Open a row (click it, or Enter on it) to see it here."));
  const node = h("aside", { class: "card detail", id: "journal-detail", tabindex: "-1", "aria-label": "The row opened" }, inner);
  let asked = 0;

  async function show(index) {
    const mine = ++asked;
    let e;
    try {
      e = await api.get(`api/journal/${index}`);
    } catch (error) {
      if (mine === asked) replace(inner, h("p", { class: "error" }, error.message));
      return;
    }
    if (mine !== asked) return;
    const ids = [["request", e.request_id], ["sandbox", e.sandbox], ["process", e.process], ["account", e.account],
      ["network", e.network], ["disk", e.disk], ["template", e.template]].filter(([, v]) => v);
    const parts = [
      h("h2", {}, e.kind === "call" ? `${text(e.operation)} ${e.status === null ? "(no reply yet)" : `→ ${e.status}`}` : `${e.kind}: ${text(e.operation)}`),
      e.method ? h("p", { class: "mono wrap" }, `${e.method} ${e.path}${e.request.query ? `?${e.request.query}` : ""}`) : null,
      h("p", {}, `fake time ${fakeTime(e.t)}`, e.duration !== null && e.duration !== undefined ? `, answered in ${(e.duration * 1000).toFixed(1)} ms` : ""),
      e.detail ? h("p", {}, e.detail) : null,
      (e.faults || []).length ? h("p", { class: "bad" }, "faults: ", e.faults.join("; ")) : null,
      ids.length ? h("dl", { class: "kv" }, ids.flatMap(([name, value]) => [h("dt", {}, name), h("dd", {}, idText(value, `${name} id`))])) : null,
    ];
    if (e.kind === "call" && !e.request) {
      parts.push(h("p", { class: "muted" }, "Its request is no longer in the journal."), message("Reply", e.response));
    } else if (e.kind === "call") {
      const curl = curlOf(e, info.url || location.origin);
      parts.push(
        h("h3", {}, "As curl ", copyButton(curl, "copy the call as a curl command")),
        h("pre", { class: "body curl", tabindex: "0", "aria-label": "the call as a curl command" }, curl),
        message("Request", e.request), message("Reply", e.response));
    } else {
      parts.push(message("Event", e.request));
    }
    replace(inner, parts);
  }

  return { node, show };
}
