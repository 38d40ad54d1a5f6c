// The journal, paged on the server: one row per call, newest first, with a side pane for the
// row opened. Filters forgive (an id's start or a sandbox's name, a part of an operation's
// name), a search box finds any stored word; following live keeps the newest rows on top,
// and otherwise a button counts the rows that came since.

import * as api from "../api.js";
import { confirmButton, fakeTime, h, notify, replace, section, text } from "../dom.js";
import { detailPane } from "./journal_detail.js";

const PAGE = 100;
const FOLLOW_MS = 200;
const SEARCH_MS = 150;
const FIELDS = [
  ["q", "search", "any word: path, body, header, id"],
  ["sandbox", "sandbox", "id, its start, or name"],
  ["operation", "operation", "e.g. exec or run_command"],
  ["status", "status", "404 or 5xx"],
];

export function journalPage(params, info) {
  const fields = {};
  const labelled = FIELDS.map(([name, label, placeholder]) => {
    fields[name] = h("input", {
      name, id: `journal-${name}`, value: params.get(name) || "", placeholder,
      type: name === "q" ? "search" : "text", list: name === "operation" ? "operations" : null, class: "filter-field",
    });
    return h("span", { class: "field" }, h("label", { for: `journal-${name}` }, label), fields[name]);
  });
  const kind = h("select", { name: "kind", id: "journal-kind" },
    [["", "any"], ["call", "calls"], ["transition", "transitions"], ["fault", "faults"], ["process", "processes"]]
      .map(([value, label]) => h("option", { value, selected: params.get("kind") === value }, label)));
  fields.kind = kind;
  const operations = h("datalist", { id: "operations" }, (info.operations || []).map((o) => h("option", { value: o })));
  const follow = h("input", { type: "checkbox", checked: true, id: "follow" });
  const form = h("form", { class: "toolbar filters", id: "journal-filter", role: "search" },
    labelled, h("span", { class: "field" }, h("label", { for: "journal-kind" }, "kind"), kind), operations,
    h("button", { type: "submit" }, "filter"),
    h("label", { class: "follow" }, follow, " follow live"));
  const status = h("span", { class: "muted", id: "journal-status", role: "status" });
  const fresh = h("button", { type: "button", id: "journal-new", class: "new-rows", hidden: true }, "");
  const pager = h("span", { class: "pager" });
  const clear = confirmButton("clear the journal", "Forget every event?", async () => {
    try {
      await api.control("DELETE", "journal");
      notify("The journal was cleared.");
    } catch (error) {
      notify(error.message, true);
    }
  }, { id: "clear-journal" });
  const rowsNode = h("div", { class: "journal-rows" });
  const detail = detailPane(info);
  const node = h("div", { class: "page-journal" },
    h("h1", { class: "sr-only" }, "Journal"),
    h("div", { class: "journal-list" },
      section("Journal", form, h("div", { class: "toolbar" }, fresh, status, pager, h("span", { class: "spacer" }), clear), rowsNode)),
    detail.node);
  let offset = 0;
  let loading = false;
  let again = false;
  let unseen = 0;
  let shown = "";
  let selected = null;

  function query() {
    const q = new URLSearchParams();
    for (const [name, input] of Object.entries(fields)) if (input.value.trim()) q.set(name, input.value.trim());
    return q;
  }

  function button(label, target, enabled) {
    return h("button", { type: "button", disabled: !enabled, onclick: () => { offset = target; follow.checked = target === 0; load(); } }, label);
  }

  function showUnseen() {
    fresh.hidden = unseen === 0;
    fresh.textContent = `${unseen} new`;
  }

  function open(row, focus = false) {
    selected = row.i;
    for (const tr of rowsNode.querySelectorAll("tr[data-i]")) tr.setAttribute("aria-selected", String(tr.dataset.i === String(row.i)));
    detail.show(row.i);
    const box = detail.node.getBoundingClientRect();
    if (box.top < 0 || box.top > window.innerHeight) detail.node.scrollIntoView({ block: "start" });
    if (focus) detail.node.focus();
  }

  function onKey(event, row) {
    const tr = event.currentTarget;
    if (event.key === "Enter" || event.key === " ") { event.preventDefault(); open(row, event.key === " "); return; }
    const next = event.key === "ArrowDown" ? tr.nextElementSibling : event.key === "ArrowUp" ? tr.previousElementSibling : null;
    if (next) { event.preventDefault(); next.focus(); }
  }

  function cells(r) {
    const what = r.kind === "call" ? `${r.method} ${r.path}` : `${r.kind}: ${text(r.detail)}`;
    return [
      h("td", { class: "t" }, fakeTime(r.t)),
      h("td", { class: "c-op" }, text(r.operation)),
      h("td", { class: "mono c-what" }, what),
      h("td", { class: r.status >= 400 ? "bad c-status" : "c-status" }, r.kind === "call" ? (r.status === null ? "…" : String(r.status)) : ""),
      h("td", { class: "t c-duration" }, r.duration === undefined || r.duration === null ? "" : `${(r.duration * 1000).toFixed(1)} ms`),
      h("td", { class: "bad c-fault" }, (r.faults || []).join("; ")),
      h("td", { class: "mono c-sandbox", title: r.sandbox || "" }, text(r.sandbox)),
    ];
  }

  function render(page) {
    const first = page.total ? page.offset + 1 : 0;
    const last = page.offset + page.rows.length;
    status.textContent = page.hint
      ? page.hint
      : `rows ${first}–${last} of ${page.total} matching, newest first (${page.events} events in the journal${page.dropped ? `, ${page.dropped} oldest dropped` : ""})`;
    status.classList.toggle("error", Boolean(page.hint));
    replace(pager,
      button("newest", 0, page.offset > 0),
      button("newer", Math.max(0, page.offset - PAGE), page.offset > 0),
      button("older", page.offset + PAGE, last < page.total));
    const key = JSON.stringify(page.rows);
    if (key === shown) return; // unchanged: a selection in the table stays
    shown = key;
    replace(rowsNode, h("div", { class: "scroll-x" }, h("table", { class: "grid journal", "aria-label": "Journal rows, newest first" },
      h("thead", {}, h("tr", {}, ["time", "operation", "request", "status", "duration", "fault", "sandbox"].map((name) => h("th", { scope: "col", class: `c-${name}` }, name)))),
      h("tbody", {}, page.rows.map((r) => h("tr", {
        class: `k-${r.kind} clickable`, tabindex: "0", dataset: { i: String(r.i) }, "aria-selected": String(selected === r.i),
        onclick: () => open(r), onkeydown: (event) => onKey(event, r),
      }, cells(r)))))));
  }

  let lastLoad = 0;
  let timer = 0;

  // Following a busy fake: at most one page read per FOLLOW_MS.
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
      const q = query();
      q.set("limit", String(PAGE));
      q.set("offset", String(offset));
      render(await api.get(`api/journal?${q}`));
      if (offset === 0) { unseen = 0; showUnseen(); }
    } catch (error) {
      shown = "";
      replace(rowsNode, h("p", { class: "error" }, error.message));
    } finally {
      loading = false;
      if (again) { again = false; load(); }
    }
  }

  function applyFilters() {
    offset = 0;
    const q = query();
    history.replaceState(null, "", `#/journal${q.toString() ? `?${q}` : ""}`);
    load();
  }

  let typing = 0;
  form.addEventListener("submit", (event) => { event.preventDefault(); applyFilters(); });
  fields.q.addEventListener("input", () => { clearTimeout(typing); typing = setTimeout(applyFilters, SEARCH_MS); });
  kind.addEventListener("change", applyFilters);
  follow.addEventListener("change", () => { if (follow.checked) { offset = 0; load(); } });
  fresh.addEventListener("click", () => { follow.checked = true; offset = 0; load(); });
  const unsubscribe = api.subscribe((batch) => {
    if (batch.reset || batch.resync) { load(); return; }
    const rows = batch.journal.filter((e) => e.kind !== "response" && !(e.kind === "fault" && e.request_id)).length;
    if (!batch.journal.length && !batch.journal_count) return;
    if (follow.checked && offset === 0) {
      followSoon();
    } else {
      unseen += rows;
      showUnseen();
    }
  });
  load();
  return { node, close() { unsubscribe(); clearTimeout(timer); clearTimeout(typing); } };
}
