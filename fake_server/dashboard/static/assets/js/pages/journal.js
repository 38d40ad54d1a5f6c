// The journal, paged on the server: filters, a pager, follow live, one event's messages.

import * as api from "../api.js";
import { fakeTime, h, replace, section, table, text } from "../dom.js";

const PAGE = 100;
const FOLLOW_MS = 200;

export function journalPage(params, info) {
  const fields = {};
  for (const name of ["sandbox", "operation", "status", "kind"]) {
    fields[name] = h("input", { name, value: params.get(name) || "", placeholder: name, list: name === "operation" ? "operations" : null, class: "filter-field" });
  }
  const operations = h("datalist", { id: "operations" }, (info.operations || []).map((o) => h("option", { value: o })));
  const follow = h("input", { type: "checkbox", checked: true, id: "follow" });
  const form = h("form", { class: "toolbar", id: "journal-filter" },
    Object.values(fields), operations, h("button", { type: "submit" }, "filter"),
    h("label", {}, follow, " follow live"));
  const status = h("span", { class: "muted" });
  const pager = h("span", { class: "pager" });
  const rowsNode = h("div", {});
  const detail = h("div", { class: "detail" });
  const node = h("div", { class: "page-journal" },
    section("Journal", form, h("div", { class: "toolbar" }, status, pager), rowsNode), detail);
  let offset = null; // null: the last page
  let lastTotal = 0;
  let loading = false;
  let again = false;
  let unseen = 0;

  function query() {
    const q = new URLSearchParams();
    for (const [name, input] of Object.entries(fields)) if (input.value.trim()) q.set(name, input.value.trim());
    q.set("limit", String(PAGE));
    if (offset !== null) q.set("offset", String(offset));
    return q;
  }

  function button(label, target, enabled) {
    return h("button", { type: "button", disabled: !enabled, onclick: () => { offset = target; follow.checked = target === null; load(); } }, label);
  }

  function render(page) {
    lastTotal = page.total;
    unseen = 0;
    const first = page.total ? page.offset + 1 : 0;
    const last = page.offset + page.events.length;
    status.textContent = `events ${first}–${last} of ${page.total} matching (${page.all} in the journal${page.dropped ? `, ${page.dropped} oldest dropped` : ""})`;
    replace(pager,
      button("first", 0, page.offset > 0),
      button("previous", Math.max(0, page.offset - PAGE), page.offset > 0),
      button("next", page.offset + PAGE, last < page.total),
      button("last", null, last < page.total));
    replace(rowsNode, table(["time", "kind", "operation", "request", "status", "duration", "fault", "sandbox", "detail"], page.events.map((e) =>
      h("tr", { class: `k-${e.kind} clickable`, onclick: () => showDetail(e.i) },
        h("td", { class: "t" }, fakeTime(e.t)), h("td", {}, e.kind), h("td", {}, text(e.operation)),
        h("td", { class: "mono" }, e.method ? `${e.method} ${e.path}` : ""),
        h("td", { class: e.status >= 400 ? "bad" : "" }, text(e.status)),
        h("td", { class: "t" }, e.duration === undefined || e.duration === null ? "" : `${(e.duration * 1000).toFixed(1)} ms`),
        h("td", { class: "bad" }, (e.faults || []).join("; ")),
        h("td", {}, e.sandbox ? h("a", { href: `#/sandbox/${encodeURIComponent(e.sandbox)}`, onclick: (ev) => ev.stopPropagation() }, e.sandbox) : ""),
        h("td", {}, e.detail)))));
  }

  async function showDetail(index) {
    try {
      const e = await api.get(`api/journal/${index}`);
      replace(detail, section(`Event ${e.i}: ${e.kind} ${text(e.operation)}`,
        h("p", { class: "mono" }, e.method ? `${e.method} ${e.path}${e.query ? `?${e.query}` : ""}` : "", e.status ? ` → ${e.status}` : ""),
        h("p", {}, `request ${text(e.request_id)}, sandbox ${text(e.sandbox)}, process ${text(e.process)}, fake time ${fakeTime(e.t)}`),
        e.detail ? h("p", {}, e.detail) : null,
        h("h3", {}, "headers"),
        e.headers.length ? table(["name", "value"], e.headers.map(([n, v]) => h("tr", {}, h("td", { class: "mono" }, n), h("td", { class: "mono" }, v)))) : h("p", { class: "muted" }, "none stored"),
        h("h3", {}, "body"),
        e.body === null ? h("p", { class: "muted" }, "none stored") : h("pre", { class: "body" }, e.body)));
    } catch (error) {
      replace(detail, h("p", { class: "error" }, error.message));
    }
  }

  let lastLoad = 0;
  let timer = 0;

  // Following a busy fake: at most one page read per FOLLOW_MS, the newest events last.
  function followSoon() {
    if (timer) return;
    const wait = Math.max(0, lastLoad + FOLLOW_MS - performance.now());
    timer = setTimeout(() => { timer = 0; load(); }, wait);
  }

  async function load() {
    lastLoad = performance.now();
    if (loading) { again = true; return; }
    loading = true;
    try {
      render(await api.get(`api/journal?${query()}`));
    } catch (error) {
      replace(rowsNode, h("p", { class: "error" }, error.message));
    } finally {
      loading = false;
      if (again) { again = false; load(); }
    }
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    offset = null;
    const q = new URLSearchParams();
    for (const [name, input] of Object.entries(fields)) if (input.value.trim()) q.set(name, input.value.trim());
    history.replaceState(null, "", `#/journal${q.toString() ? `?${q}` : ""}`);
    load();
  });
  follow.addEventListener("change", () => { if (follow.checked) { offset = null; load(); } });
  const unsubscribe = api.subscribe((batch) => {
    if (batch.reset || batch.resync) { load(); return; }
    if (!batch.journal.length && !batch.journal_count) return;
    if (follow.checked) {
      followSoon();
    } else {
      unseen += batch.journal.length;
      status.dataset.unseen = String(unseen);
    }
  });
  load();
  return { node, close() { unsubscribe(); clearTimeout(timer); } };
}
