// Accounts and every sandbox, live: a row changes as soon as the fake journals the change.
// Newest first; a column header sorts by that column.

import * as api from "../api.js";
import { ago, confirmButton, copyButton, h, notify, replace, section, statusBadge, table } from "../dom.js";
import { VirtualTable } from "../vtable.js";

const SORTS = {
  status: (r) => r.status,
  id: (r) => r.id,
  name: (r) => r.name || "",
  shape: (r) => r.shape,
  rootfs: (r) => r.rootfs,
  ip: (r) => r.ip,
  processes: (r) => r.processes,
  account: (r) => r.account,
  age: (r) => -r.created_at,
};

export function sandboxesPage(info) {
  const rows = new Map();
  const flashed = new Map();
  let clockOffset = 0; // server wall time minus local wall time
  let filterText = "";
  let sortKey = null;
  let sortDir = 1;
  const accountsNode = h("div", {}, h("p", { class: "muted" }, "Loading…"));
  const count = h("span", { class: "muted", role: "status" });
  const filter = h("input", { type: "search", id: "sandbox-filter", placeholder: "id, name, status, shape, rootfs, ip", class: "filter" });
  const vtable = new VirtualTable([
    { title: "status", cell: (r) => statusBadge(r.status), class: "c-status", sort: "status" },
    { title: "id", cell: (r) => h("span", { class: "id" }, h("a", { href: `#/sandbox/${encodeURIComponent(r.id)}`, title: r.id }, r.id), " ", copyButton(r.id, `copy sandbox id ${r.id}`)), class: "c-id", sort: "id" },
    { title: "name", cell: (r) => r.name, class: "c-name", sort: "name" },
    { title: "shape", cell: (r) => r.shape, class: "c-shape", sort: "shape" },
    { title: "rootfs", cell: (r) => r.rootfs, class: "c-rootfs", sort: "rootfs" },
    { title: "ip", cell: (r) => r.ip, class: "c-ip", sort: "ip" },
    { title: "processes", cell: (r) => String(r.processes), class: "c-num c-processes", sort: "processes" },
    { title: "account", cell: (r) => r.account, class: "c-account", sort: "account" },
    { title: "age", cell: (r) => ago(Date.now() / 1000 + clockOffset - r.created_at), class: "c-num c-age", sort: "age" },
  ], { label: "Sandboxes", onSort: (key, dir) => { sortKey = key; sortDir = dir; render(); } });
  const reset = confirmButton("reset the fake", "Drop every sandbox, account and fault, and the journal?", async () => {
    try {
      await api.control("POST", "reset");
      notify("The fake was reset.");
    } catch (error) {
      notify(error.message, true);
    }
  }, { id: "reset-fake" });
  const node = h("div", { class: "page-sandboxes" },
    h("h1", { class: "sr-only" }, "Sandboxes"),
    section("Accounts", accountsNode),
    section("Sandboxes",
      h("div", { class: "toolbar" }, h("label", { for: "sandbox-filter" }, "Filter "), filter, count, h("span", { class: "spacer" }), reset),
      vtable.node));
  let painted = false;

  function visible() {
    const now = performance.now();
    const list = [];
    const needle = filterText.toLowerCase();
    for (const row of rows.values()) {
      if (needle && ![row.id, row.name, row.status, row.shape, row.rootfs, row.ip].some((v) => String(v).toLowerCase().includes(needle))) continue;
      const at = flashed.get(row.id);
      row._class = at && now - at < 1500 ? "flash" : "";
      list.push(row);
    }
    if (sortKey) {
      const key = SORTS[sortKey];
      list.sort((a, b) => {
        const x = key(a);
        const y = key(b);
        return (x < y ? -1 : x > y ? 1 : 0) * sortDir;
      });
    } else {
      list.reverse(); // newest first
    }
    return list;
  }

  function render() {
    const list = visible();
    count.textContent = `${list.length} of ${rows.size} sandboxes`;
    vtable.setRows(list);
  }

  const accounts = new Map(); // id -> API key as shown (redacted)
  let accountsKey = "";

  function renderAccounts() {
    // Counted here from the rows the page holds: a change costs no request.
    const counts = new Map([...accounts.keys()].map((id) => [id, {}]));
    for (const row of rows.values()) {
      const statuses = counts.get(row.account) || {};
      statuses[row.status] = (statuses[row.status] || 0) + 1;
      counts.set(row.account, statuses);
    }
    const key = JSON.stringify([...counts, ...accounts]);
    if (key === accountsKey) return; // unchanged: a selection in the table stays
    accountsKey = key;
    replace(accountsNode, table(["account", "API key", "sandboxes", "by status"], [...counts].map(([id, statuses]) =>
      h("tr", {}, h("td", {}, h("span", { class: "id" }, id, " ", copyButton(id, `copy account id ${id}`))), h("td", {}, accounts.get(id) || "<redacted>"),
        h("td", {}, String(Object.values(statuses).reduce((a, b) => a + b, 0))),
        h("td", {}, Object.entries(statuses).map(([s, n]) => h("span", { class: "pair" }, statusBadge(s), ` ${n}`))))), "Accounts"));
  }

  async function load() {
    const data = await api.get("api/overview");
    clockOffset = data.now - Date.now() / 1000;
    rows.clear();
    accounts.clear();
    for (const account of data.accounts) accounts.set(account.id, account.api_key);
    for (const row of data.sandboxes) rows.set(row.id, row);
    renderAccounts();
    render();
    if (!painted) {
      painted = true;
      requestAnimationFrame(() => setTimeout(() => performance.mark("createos:sandboxes-painted"), 0));
    }
  }

  const unsubscribe = api.subscribe((batch) => {
    if (batch.reset || batch.resync) { load(); return; }
    let touched = false;
    for (const row of batch.sandboxes) {
      const old = rows.get(row.id);
      if (!old || old.status !== row.status) flashed.set(row.id, performance.now());
      rows.set(row.id, row);
      touched = true;
    }
    for (const id of batch.removed) touched = rows.delete(id) || touched;
    if (touched) {
      render();
      renderAccounts();
    }
  });
  filter.addEventListener("input", () => { filterText = filter.value; render(); });
  const ticker = setInterval(() => vtable.schedule(), 1000); // ages and fading highlights
  load().catch((error) => replace(accountsNode, h("p", { class: "error" }, error.message)));
  return { node, close() { unsubscribe(); clearInterval(ticker); } };
}
