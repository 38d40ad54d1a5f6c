// Accounts and every sandbox, live: a row changes as soon as the fake journals the change.

import * as api from "../api.js";
import { ago, h, replace, section, statusBadge, table } from "../dom.js";
import { VirtualTable } from "../vtable.js";

export function sandboxesPage(info) {
  const rows = new Map();
  const flashed = new Map();
  let clockOffset = 0; // server wall time minus local wall time
  let filterText = "";
  const accountsNode = h("div", {}, h("p", { class: "muted" }, "Loading…"));
  const count = h("span", { class: "muted" });
  const filter = h("input", { type: "search", placeholder: "filter by id, name, status, shape, rootfs, ip", class: "filter" });
  const vtable = new VirtualTable([
    { title: "status", cell: (r) => statusBadge(r.status), class: "c-status" },
    { title: "id", cell: (r) => h("a", { href: `#/sandbox/${encodeURIComponent(r.id)}` }, r.id), class: "c-id" },
    { title: "name", cell: (r) => r.name, class: "c-name" },
    { title: "shape", cell: (r) => r.shape },
    { title: "rootfs", cell: (r) => r.rootfs },
    { title: "ip", cell: (r) => r.ip },
    { title: "processes", cell: (r) => String(r.processes), class: "c-num" },
    { title: "account", cell: (r) => r.account },
    { title: "age", cell: (r) => ago(Date.now() / 1000 + clockOffset - r.created_at), class: "c-num" },
  ], { onClick: (r) => { location.hash = `#/sandbox/${encodeURIComponent(r.id)}`; } });
  const node = h("div", { class: "page-sandboxes" },
    section("Accounts", accountsNode),
    section("Sandboxes", h("div", { class: "toolbar" }, filter, count), vtable.node));
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
    list.reverse(); // newest first
    return list;
  }

  function render() {
    const list = visible();
    count.textContent = `${list.length} of ${rows.size} sandboxes`;
    vtable.setRows(list);
  }

  const accounts = new Map(); // id -> API key as shown (redacted)

  function renderAccounts() {
    // Counted here from the rows the page holds: a change costs no request.
    const counts = new Map([...accounts.keys()].map((id) => [id, {}]));
    for (const row of rows.values()) {
      const statuses = counts.get(row.account) || {};
      statuses[row.status] = (statuses[row.status] || 0) + 1;
      counts.set(row.account, statuses);
    }
    replace(accountsNode, table(["account", "API key", "sandboxes", "by status"], [...counts].map(([id, statuses]) =>
      h("tr", {}, h("td", {}, id), h("td", {}, accounts.get(id) || "<redacted>"),
        h("td", {}, String(Object.values(statuses).reduce((a, b) => a + b, 0))),
        h("td", {}, Object.entries(statuses).map(([s, n]) => h("span", { class: "pair" }, statusBadge(s), ` ${n}`)))))));
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
