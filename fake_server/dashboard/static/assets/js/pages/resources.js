// Networks, disks and templates (with their build logs so far) of every account.

import * as api from "../api.js";
import { h, replace, section, table, text } from "../dom.js";

export function resourcesPage() {
  const body = h("div", {}, h("p", { class: "muted" }, "Loading…"));
  const node = h("div", { class: "page-resources" }, body);

  function render(data) {
    replace(body, data.accounts.map((a) => h("div", {},
      h("h1", {}, `Account ${a.account}`),
      h("div", { class: "cards" },
        section("Networks", a.networks.length ? table(["id", "name", "cidr", "members"], a.networks.map((n) =>
          h("tr", {}, h("td", {}, n.id), h("td", {}, n.name), h("td", {}, n.cidr),
            h("td", {}, (n.members || []).map((m) => h("div", {}, h("a", { href: `#/sandbox/${encodeURIComponent(m.sandbox_id)}` }, m.sandbox_id), ` ${m.ip} ${m.status}`)))))) : none()),
        section("Disks", a.disks.length ? table(["id", "name", "kind", "created"], a.disks.map((d) =>
          h("tr", {}, h("td", {}, d.id), h("td", {}, d.name), h("td", {}, d.kind), h("td", {}, text(d.created_at))))) : none())),
      section("Templates", a.templates.length ? a.templates.map((t) => h("div", { class: "template" },
        h("h3", {}, `${t.name} `, h("span", { class: `badge s-${String(t.status).replace(/[^a-z]/g, "")}` }, t.status), ` ${t.id} from ${t.base}`),
        h("pre", { class: "output" }, t.log.map((line) => h("span", { class: `level-${String(line.level).replace(/[^a-z]/g, "")}` }, `+${line.offset.toFixed(1)}s ${line.line}\n`))))) : none()))));
  }

  async function load() {
    try {
      render(await api.get("api/resources"));
    } catch (error) {
      replace(body, h("p", { class: "error" }, error.message));
    }
  }

  const unsubscribe = api.subscribe((batch) => {
    if (batch.reset || (batch.changed || []).includes("resources")) load();
  });
  load();
  return { node, close: unsubscribe };
}

function none() {
  return h("p", { class: "muted" }, "none");
}
