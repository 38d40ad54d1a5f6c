// A table that renders only the rows in view: a thousand sandboxes cost ~30 row nodes.
// A row whose data did not change keeps its node, so a redraw (a live update, the ages
// ticking) leaves a text selection in it alone. Headers with a ``sort`` key sort on click.

import { h } from "./dom.js";

export class VirtualTable {
  constructor(columns, { rowHeight = 34, onSort = null, label = "" } = {}) {
    this.columns = columns; // [{title, cell(row) -> Node|string, class, sort?}]
    this.rowHeight = rowHeight;
    this.rows = [];
    this.onSort = onSort;
    this.sortKey = null;
    this.sortDir = 1;
    this.cached = new Map(); // id -> {key, node}
    this.head = h("div", { class: "vrow vhead", role: "row" }, columns.map((c) => this.headerCell(c)));
    this.spacer = h("div", { class: "vspacer" });
    this.body = h("div", { class: "vbody", role: "none" });
    this.viewport = h("div", { class: "vviewport", role: "rowgroup", tabindex: "0", "aria-label": `${label} (scrolls)` }, this.spacer, this.body);
    this.node = h("div", { class: "vtable", role: "table", "aria-label": label }, this.head, this.viewport);
    this.viewport.addEventListener("scroll", () => this.render());
    this.frame = 0;
  }

  headerCell(column) {
    if (!column.sort) return h("span", { class: column.class || "", role: "columnheader" }, column.title);
    const button = h("button", { type: "button", class: "sort" }, column.title);
    const cell = h("span", { class: column.class || "", role: "columnheader", "aria-sort": "none" }, button);
    button.addEventListener("click", () => {
      this.sortDir = this.sortKey === column.sort ? -this.sortDir : 1;
      this.sortKey = column.sort;
      for (const other of this.head.children) other.setAttribute("aria-sort", "none");
      cell.setAttribute("aria-sort", this.sortDir === 1 ? "ascending" : "descending");
      if (this.onSort) this.onSort(this.sortKey, this.sortDir);
    });
    return cell;
  }

  setRows(rows) {
    this.rows = rows;
    this.schedule();
  }

  schedule() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.render();
    });
  }

  render() {
    const total = this.rows.length;
    this.spacer.style.height = `${total * this.rowHeight}px`;
    this.viewport.style.height = `${Math.min(560, Math.max(3, total) * this.rowHeight + 2)}px`;
    const top = this.viewport.scrollTop;
    const view = 560;
    const first = Math.max(0, Math.floor(top / this.rowHeight) - 5);
    const last = Math.min(total, Math.ceil((top + view) / this.rowHeight) + 5);
    const wanted = new Map();
    for (let i = first; i < last; i++) {
      const row = this.rows[i];
      const cells = this.columns.map((c) => c.cell(row));
      const key = JSON.stringify([row._class || "", cells.map((c) => (c instanceof Node ? c.textContent : String(c)))]);
      let kept = this.cached.get(row.id);
      if (!kept || kept.key !== key) {
        const node = h("div", { class: `vrow ${row._class || ""}`, role: "row", dataset: { id: row.id } },
          cells.map((cell, n) => h("span", { class: this.columns[n].class || "", role: "cell" }, cell)));
        if (kept) kept.node.replaceWith(node);
        kept = { key, node };
      }
      const position = `translateY(${i * this.rowHeight}px)`;
      if (kept.node.style.transform !== position) kept.node.style.transform = position;
      if (!kept.node.parentNode) this.body.append(kept.node);
      wanted.set(row.id, kept);
    }
    for (const [id, kept] of this.cached) if (!wanted.has(id)) kept.node.remove();
    this.cached = wanted;
  }
}
