// Armed faults with their counters, the firings, a form for the common faults, clear.

import * as api from "../api.js";
import { h, replace, section, table, text } from "../dom.js";

const ACTIONS = {
  http_error: "HTTP error (status)",
  latency: "latency (seconds)",
  reset: "connection reset before the reply",
  empty_reply: "empty reply",
  lost_reply: "reply lost after the change",
};

export function faultsPage(info) {
  const armed = h("div", { id: "armed" });
  const fired = h("div", { id: "fired" });
  const message = h("p", { class: "error", role: "alert" });
  const operation = h("input", { name: "operation", list: "fault-operations", required: true, placeholder: "operation, e.g. create_sandbox", class: "filter-field" });
  const operations = h("datalist", { id: "fault-operations" }, (info.operations || []).map((o) => h("option", { value: o })));
  const action = h("select", { name: "action" }, Object.entries(ACTIONS).map(([value, label]) => h("option", { value }, label)));
  const status = h("input", { name: "status", type: "number", min: "400", max: "599", value: "503", class: "num" });
  const seconds = h("input", { name: "seconds", type: "number", min: "0", step: "0.1", value: "1", class: "num" });
  const times = h("input", { name: "times", type: "number", min: "1", value: "1", class: "num" });
  const sandbox = h("input", { name: "sandbox_id", placeholder: "sandbox id (any)", class: "filter-field" });
  const form = h("form", { class: "arm", id: "arm-fault" },
    h("label", {}, "operation ", operation), operations,
    h("label", {}, "action ", action),
    h("label", { class: "for-http_error" }, "status ", status),
    h("label", { class: "for-latency" }, "seconds ", seconds),
    h("label", {}, "times ", times),
    h("label", {}, "only for ", sandbox),
    h("button", { type: "submit" }, "arm"), message);
  const clear = h("button", { type: "button", id: "clear-faults" }, "clear all armed faults");
  const node = h("div", { class: "page-faults" },
    section("Arm a fault", form),
    section("Armed", armed, clear),
    section("Fired", fired));

  function syncFields() {
    for (const label of form.querySelectorAll("[class^='for-']")) label.hidden = label.className !== `for-${action.value}`;
  }

  function describe(a) {
    return Object.entries(a).filter(([, v]) => v !== null).map(([k, v]) => (k === "type" ? v : `${k}=${v}`)).join(" ");
  }

  async function load() {
    const data = await api.get("api/faults");
    replace(armed, data.faults.length ? table(["id", "operation", "action", "times left", "fired", "seen", "sandbox", "name", ""], data.faults.map((f) =>
      h("tr", { dataset: { fault: String(f.id) } }, h("td", {}, String(f.id)), h("td", {}, f.operation), h("td", {}, describe(f.action)),
        h("td", {}, f.times === null ? "every call" : String(Math.max(0, f.times - f.fired))),
        h("td", {}, String(f.fired)), h("td", {}, String(f.seen)), h("td", {}, text(f.sandbox_id)), h("td", {}, text(f.name)),
        h("td", {}, h("button", { type: "button", onclick: () => change(`api/faults/${f.id}/remove`) }, "remove"))))) : h("p", { class: "muted" }, "none armed"));
    replace(fired, data.fired.length ? table(["fault", "operation", "request", "sandbox", "action"], data.fired.map((f) =>
      h("tr", {}, h("td", {}, String(f.fault_id)), h("td", {}, f.operation), h("td", { class: "mono" }, `${f.method} ${f.path}`),
        h("td", {}, text(f.sandbox_id)), h("td", {}, describe(f.action))))) : h("p", { class: "muted" }, "none fired"));
  }

  async function change(path, body = {}) {
    try {
      await api.post(path, body);
      message.textContent = "";
    } catch (error) {
      message.textContent = error.message;
    }
    await load();
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const spec = { operation: operation.value.trim(), action: { type: action.value }, times: Number(times.value) };
    if (action.value === "http_error") spec.action.status = Number(status.value);
    if (action.value === "latency") spec.action.seconds = Number(seconds.value);
    if (sandbox.value.trim()) spec.sandbox_id = sandbox.value.trim();
    change("api/faults", spec);
  });
  action.addEventListener("change", syncFields);
  clear.addEventListener("click", () => change("api/faults/clear"));
  syncFields();
  const unsubscribe = api.subscribe((batch) => {
    if (batch.reset || (batch.changed || []).includes("faults")) load();
  });
  load().catch((error) => { message.textContent = error.message; });
  return { node, close: unsubscribe };
}
