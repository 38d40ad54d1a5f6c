// Armed faults with their counters, used-up ones apart, the firings newest first with the
// fake time each fired at, a form for the common faults; each change is a control-API call.

import * as api from "../api.js";
import { confirmButton, fakeTime, h, notify, replace, section, table, text } from "../dom.js";

const ACTIONS = {
  http_error: "HTTP error (status)",
  latency: "latency (seconds)",
  reset: "connection reset before the reply",
  empty_reply: "empty reply",
  lost_reply: "reply lost after the change",
};

function describe(a) {
  return Object.entries(a).filter(([, v]) => v !== null).map(([k, v]) => (k === "type" ? v : `${k}=${v}`)).join(" ");
}

function scope(f) {
  return [f.sandbox_id ? `sandbox ${f.sandbox_id}` : "", f.name ? `“${f.name}”` : ""].filter(Boolean).join(", ") || "any";
}

export function faultsPage(info) {
  const armed = h("div", { id: "armed" });
  const used = h("div", { id: "used-up" });
  const fired = h("div", { id: "fired" });
  const message = h("p", { class: "error", role: "alert" });
  const operation = h("input", { name: "operation", id: "fault-operation", list: "fault-operations", required: true, placeholder: "e.g. create_sandbox", class: "filter-field" });
  const operations = h("datalist", { id: "fault-operations" }, (info.operations || []).map((o) => h("option", { value: o })));
  const action = h("select", { name: "action", id: "fault-action" }, Object.entries(ACTIONS).map(([value, label]) => h("option", { value }, label)));
  const status = h("input", { name: "status", id: "fault-status", type: "number", min: "400", max: "599", value: "503", class: "num" });
  const seconds = h("input", { name: "seconds", id: "fault-seconds", type: "number", min: "0", step: "0.1", value: "1", class: "num" });
  const times = h("input", { name: "times", id: "fault-times", type: "number", min: "1", value: "1", class: "num" });
  const sandbox = h("input", { name: "sandbox_id", id: "fault-sandbox", placeholder: "any sandbox", class: "filter-field" });
  const form = h("form", { class: "arm", id: "arm-fault" },
    h("label", {}, "operation ", operation), operations,
    h("label", {}, "action ", action),
    h("label", { class: "for-http_error" }, "status ", status),
    h("label", { class: "for-latency" }, "seconds ", seconds),
    h("label", {}, "times ", times),
    h("label", {}, "only for ", sandbox),
    h("button", { type: "submit" }, "arm"), message);
  const clear = confirmButton("clear all armed faults", "Disarm every fault?", () => change("DELETE", "faults"), { id: "clear-faults" });
  const node = h("div", { class: "page-faults" },
    h("h1", { class: "sr-only" }, "Faults"),
    section("Arm a fault", form),
    section("Armed", armed, clear),
    section("Used up (every call it was given has fired)", used),
    section("Fired, newest first", fired));

  function syncFields() {
    for (const label of form.querySelectorAll("[class^='for-']")) label.hidden = label.className !== `for-${action.value}`;
  }

  function faultRows(list, removable) {
    return list.map((f) => h("tr", { dataset: { fault: String(f.id) } },
      h("td", {}, String(f.id)), h("td", {}, f.operation), h("td", { class: "mono" }, describe(f.action)),
      h("td", {}, f.times === null ? "every call" : String(Math.max(0, f.times - f.fired))),
      h("td", {}, String(f.fired)), h("td", {}, String(f.seen)), h("td", { class: "wrap" }, scope(f)),
      h("td", {}, removable ? h("button", { type: "button", class: "remove", "aria-label": `disarm fault ${f.id}`, onclick: () => change("DELETE", `faults/${f.id}`) }, "remove") : "")));
  }

  async function load() {
    const data = await api.get("api/faults");
    const headers = ["id", "operation", "action", "left", "fired", "seen", "for", ""];
    replace(armed, data.faults.length ? table(headers, faultRows(data.faults, true), "Armed faults") : h("p", { class: "muted" }, "none armed"));
    replace(used, data.used_up.length ? table(headers, faultRows(data.used_up, true), "Used-up faults") : h("p", { class: "muted" }, "none"));
    replace(fired, data.fired.length ? table(["fired at", "fault", "operation", "request", "sandbox", "action"], data.fired.map((f) =>
      h("tr", {}, h("td", { class: "t" }, fakeTime(f.t)), h("td", {}, String(f.fault_id)), h("td", {}, f.operation), h("td", { class: "mono wrap" }, `${f.method} ${f.path}`),
        h("td", { class: "mono" }, text(f.sandbox_id)), h("td", { class: "mono" }, describe(f.action)))), "Firings") : h("p", { class: "muted" }, "none fired"));
  }

  async function change(method, path, body = {}) {
    try {
      await api.control(method, path, body);
      message.textContent = "";
      notify(method === "POST" ? "Fault armed." : "Disarmed.");
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
    change("POST", "faults", spec);
  });
  action.addEventListener("change", syncFields);
  syncFields();
  const unsubscribe = api.subscribe((batch) => {
    if (batch.reset || (batch.changed || []).includes("faults")) load();
  });
  load().catch((error) => { message.textContent = error.message; });
  return { node, close: unsubscribe };
}
