// A table that renders only the rows in view: a thousand sandboxes cost ~30 row nodes.

import { h, replace } from "./dom.js";

export class VirtualTable {
  constructor(columns, { rowHeight = 30, onClick = null } = {}) {
    this.columns = columns; // [{title, cell(row) -> Node|string, class}]
    this.rowHeight = rowHeight;
    this.rows = [];
    this.onClick = onClick;
    this.head = h("div", { class: "vrow vhead" }, columns.map((c) => h("span", { class: c.class || "" }, c.title)));
    this.spacer = h("div", { class: "vspacer" });
    this.body = h("div", { class: "vbody" });
    this.viewport = h("div", { class: "vviewport" }, this.spacer, this.body);
    this.node = h("div", { class: "vtable" }, this.head, this.viewport);
    this.viewport.addEventListener("scroll", () => this.render());
    this.frame = 0;
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
    const nodes = [];
    for (let i = first; i < last; i++) {
      const row = this.rows[i];
      const line = h("div", { class: `vrow ${row._class || ""}`, role: "row", dataset: { id: row.id } },
        this.columns.map((c) => h("span", { class: c.class || "" }, c.cell(row))));
      line.style.transform = `translateY(${i * this.rowHeight}px)`;
      if (this.onClick) line.addEventListener("click", () => this.onClick(row));
      nodes.push(line);
    }
    replace(this.body, nodes);
  }
}
