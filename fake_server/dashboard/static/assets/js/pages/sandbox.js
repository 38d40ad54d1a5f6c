// One sandbox: its actions, settings, status timeline on fake time, processes with live
// output, exec history, files, preview URLs, disks, networks and bandwidth; refreshed when it
// changes. Each part is redrawn only when its own data changed, so a client polling the
// sandbox leaves a text selection or a scroll position alone.

import * as api from "../api.js";
import { bytes, confirmButton, fakeTime, h, idText, notify, pretty, replace, section, statusBadge, table, text } from "../dom.js";
import { outputPanel } from "./output.js";
import { terminalPanel } from "./terminal.js";

const ACTIONS = {
  running: ["pause", "destroy"],
  paused: ["resume", "fork", "destroy"],
  error: ["destroy"],
  failed: ["destroy"],
};

export function sandboxPage(id, info) {
  const slots = new Map(); // part -> {key, node}
  const body = h("div", { class: "sandbox-parts" }, h("p", { class: "muted" }, "Loading…"));
  const outputs = h("div", { class: "outputs" });
  const terminal = terminalPanel(id);
  const node = h("div", { class: "page-sandbox" }, body, terminal.node);
  const open = new Map(); // process id -> output panel
  let loading = false;
  let again = false;
  let started = false;

  function showOutput(process) {
    if (open.has(process.process_id)) return;
    const panel = outputPanel(id, process, () => open.delete(process.process_id), load);
    open.set(process.process_id, panel);
    outputs.prepend(panel.node);
  }

  async function act(action) {
    try {
      const data = await api.control("POST", `sandboxes/${encodeURIComponent(id)}/${action}`);
      if (action === "fork" && data && data.id) {
        notify(`Forked into ${data.id}.`);
      } else {
        notify(`${action}: the sandbox is ${data && data.status ? data.status : "changing"}.`);
      }
    } catch (error) {
      notify(`${action}: ${error.message}`, true);
    }
    load();
  }

  function actions(d) {
    const buttons = (ACTIONS[d.status] || []).map((action) => action === "destroy"
      ? confirmButton("destroy", "Destroy this sandbox and everything in it?", () => act("destroy"), { class: "action-destroy" })
      : h("button", { type: "button", class: `action-${action}`, onclick: () => act(action) }, action));
    return h("div", { class: "toolbar actions", role: "group", "aria-label": "Sandbox actions" }, buttons);
  }

  // Each part: [name, the data it shows, how it is drawn, the part it sits in].
  function parts(d) {
    return [
      ["head", [d.name, d.status, d.id], () => h("div", { class: "head" },
        h("h1", {}, d.name || d.id, " ", statusBadge(d.status)), h("p", {}, idText(d.id, "sandbox id")))],
      ["actions", [d.status], () => actions(d)],
      ["cards", ["cards"], () => h("div", { class: "cards" })],
      ["settings", [d.shape, d.vcpu, d.mem_mib, d.disk_mib, d.rootfs, d.region, d.ip, d.account, d.created_at, d.forked_from,
        d.auto_pause_after_seconds, d.envs], () => section("Settings", h("dl", { class: "kv" },
        ...kv("shape", `${d.shape} (${d.vcpu} vCPU, ${d.mem_mib} MiB, disk ${d.disk_mib} MiB)`),
        ...kv("rootfs", d.rootfs), ...kv("region", d.region), ...kv("ip", d.ip),
        ...kv("account", d.account), ...kv("created", d.created_at),
        ...kv("forked from", d.forked_from), ...kv("auto-pause after", d.auto_pause_after_seconds),
        ...kv("env names", d.envs.join(", ")))), "cards"],
      ["timeline", [d.timeline], () => section("Status timeline (fake time since the journal's start)",
        d.timeline.length ? h("ol", { class: "timeline" }, d.timeline.map((s) => h("li", {}, h("span", { class: "t" }, fakeTime(s.t)), " ", s.change))) : none()), "cards"],
      ["egress", [d.egress, d.ingress_enabled, d.ingress_url_template, d.preview_ports], () => section("Egress and ingress", ...egress(d)), "cards"],
      ["metrics", [d.metrics], () => section("Metrics", d.metrics ? h("dl", { class: "kv" },
        ...kv("CPU time", `${d.metrics.cpu.usage_seconds} s on ${d.metrics.cpu.vcpu} vCPU`),
        ...kv("memory", `${bytes(d.metrics.memory.used_bytes)} of ${bytes(d.metrics.memory.limit_bytes)} (${d.metrics.memory.used_pct}%)`),
        ...kv("processes", d.metrics.processes), ...kv("source", d.metrics.source === "proc" ? "measured (/proc)" : "bashkit model")) : none()), "cards"],
      ["bandwidth", [d.bandwidth], () => section("Bandwidth", h("dl", { class: "kv" },
        ...kv("quota", bytes(d.bandwidth.quota_bytes)), ...kv("egress used", bytes(d.bandwidth.used_bytes)),
        ...kv("remaining", bytes(d.bandwidth.remaining_bytes)), ...kv("ingress", bytes(d.bandwidth.ingress_bytes)))), "cards"],
      ["processes", [d.processes], () => section("Processes", d.processes.length ? table(["id", "pid", "command", "state", "exit", ""], d.processes.map((p) =>
        h("tr", {}, h("td", {}, idText(p.process_id, "process id")), h("td", {}, String(p.pid)), h("td", { class: "mono" }, [p.cmd, ...p.args].join(" ")),
          h("td", {}, p.state), h("td", {}, p.signal ? p.signal : text(p.exit_code)),
          h("td", {}, h("button", { type: "button", class: "show-output", "aria-label": `output of ${p.process_id}`, onclick: () => showOutput(p) }, "output")))), "Processes") : none())],
      ["outputs", ["outputs"], () => outputs],
      ["execs", [d.execs], () => section("Exec history", d.execs.length ? table(["time", "request", "status", "reply"], d.execs.map((e) =>
        h("tr", {}, h("td", { class: "t" }, fakeTime(e.t)), h("td", { class: "mono" }, h("pre", {}, pretty(e.request))),
          h("td", {}, text(e.status)), h("td", { class: "mono" }, h("pre", {}, pretty(e.reply))))), "Exec history") : none())],
      ["files", [d.files, d.id], () => section("Files named by requests", d.files.length ? table(["path", "last request", ""], d.files.map((f) =>
        h("tr", {}, h("td", { class: "mono" }, f.path), h("td", {}, f.last),
          h("td", {}, f.exists ? h("a", { href: `api/sandboxes/${encodeURIComponent(d.id)}/file?path=${encodeURIComponent(f.path)}`, download: "" }, "download") : "gone"))), "Files") : none())],
      ["resources", [d.disks, d.networks], () => h("div", { class: "cards" },
        section("Disks", d.disks.length ? table(["disk", "name", "kind", "mount", "status"], d.disks.map((a) =>
          h("tr", {}, h("td", {}, idText(a.disk_id, "disk id")), h("td", {}, a.name), h("td", {}, a.kind), h("td", { class: "mono" }, a.mount_path), h("td", {}, a.mount_status))), "Disks") : none()),
        section("Networks", d.networks.length ? table(["network", "name", "cidr", "ip"], d.networks.map((n) =>
          h("tr", {}, h("td", {}, idText(n.id, "network id")), h("td", {}, n.name), h("td", {}, n.cidr), h("td", {}, n.ip))), "Networks") : none()))],
    ];
  }

  function render(d) {
    if (!started) { started = true; replace(body); }
    for (const [name, data, draw, parent] of parts(d)) {
      const key = JSON.stringify(data);
      const slot = slots.get(name);
      if (slot && slot.key === key) continue;
      const fresh = draw();
      if (slot) {
        if (slot.node !== fresh) slot.node.replaceWith(fresh);
      } else {
        (parent ? slots.get(parent).node : body).append(fresh);
      }
      slots.set(name, { key, node: fresh });
    }
    terminal.setStatus(d.status);
  }

  async function load() {
    if (loading) { again = true; return; }
    loading = true;
    try {
      render(await api.get(`api/sandboxes/${encodeURIComponent(id)}`));
    } catch (error) {
      started = false;
      slots.clear();
      replace(body, h("p", { class: "error" }, error.message));
    } finally {
      loading = false;
      if (again) { again = false; load(); }
    }
  }

  // A busy sandbox (a client polling it) changes every loop turn: read it at most every 200 ms.
  let timer = 0;
  let lastLoad = 0;
  function soon() {
    if (timer) return;
    timer = setTimeout(() => { timer = 0; lastLoad = performance.now(); load(); }, Math.max(0, lastLoad + 200 - performance.now()));
  }
  const unsubscribe = api.subscribe((batch) => {
    if (batch.reset || batch.resync || batch.sandboxes.some((r) => r.id === id) || batch.removed.includes(id) || batch.journal.some((e) => e.sandbox === id)) soon();
  });
  load();
  return { node, close() { unsubscribe(); clearTimeout(timer); terminal.close(); for (const panel of open.values()) panel.close(); } };
}

function egress(d) {
  const shown = [
    h("p", {}, "egress rules: ", d.egress.length ? d.egress.join(", ") : "none (all allowed)"),
    h("p", {}, "ingress: ", d.ingress_enabled ? "enabled" : "disabled"),
  ];
  if (!d.ingress_enabled) return shown;
  const links = d.ingress_url_template ? d.preview_ports.map((port) => {
    const url = d.ingress_url_template.replace("<port>", String(port));
    return h("li", {}, h("a", { href: url, target: "_blank", rel: "noopener noreferrer" }, url));
  }) : [];
  const portInput = h("input", { type: "number", min: "1", max: "65535", class: "port", id: "preview-port", "aria-label": "port to preview" });
  const portLink = h("a", { class: "preview-open", target: "_blank", rel: "noopener noreferrer", href: "#/" }, "open");
  portInput.addEventListener("input", () => {
    const port = Number(portInput.value);
    portLink.setAttribute("href", d.ingress_url_template && port >= 1 && port <= 65535 ? d.ingress_url_template.replace("<port>", String(port)) : "#/");
  });
  shown.push(h("div", {}, h("p", {}, "preview URLs seen:"), links.length ? h("ul", {}, links) : none(),
    h("p", {}, h("label", { for: "preview-port" }, "preview a port: "), portInput, " ", portLink)));
  return shown;
}

function kv(name, value) {
  if (value === undefined || value === null || value === "") return [];
  return [h("dt", {}, name), h("dd", {}, String(value))];
}

function none() {
  return h("p", { class: "muted" }, "none");
}
