// The dashboard's shell: log in, keep the live stream open, route #/... to a page.
// Until a session exists the page shows one thing: the login form.

import * as api from "./api.js";
import { replace, h } from "./dom.js";
import { sandboxesPage } from "./pages/sandboxes.js";
import { sandboxPage } from "./pages/sandbox.js";
import { journalPage } from "./pages/journal.js";
import { faultsPage } from "./pages/faults.js";
import { resourcesPage } from "./pages/resources.js";

const pageNode = document.getElementById("page");
const loginForm = document.getElementById("login");
const loginNote = document.getElementById("login-note");
const nav = document.getElementById("nav");
const live = document.getElementById("live");
const logoutButton = document.getElementById("logout");
let current = null;
let info = null;

function route() {
  const hash = location.hash || "#/";
  const [path, query = ""] = hash.slice(1).split("?");
  const params = new URLSearchParams(query);
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  if (parts[0] === "sandbox" && parts[1]) return { name: "sandbox", title: `Sandbox ${parts[1]}`, make: () => sandboxPage(parts[1], info) };
  if (parts[0] === "journal") return { name: "journal", title: "Journal", make: () => journalPage(params, info) };
  if (parts[0] === "faults") return { name: "faults", title: "Faults", make: () => faultsPage(info) };
  if (parts[0] === "resources") return { name: "resources", title: "Networks, disks, templates", make: () => resourcesPage(info) };
  return { name: "sandboxes", title: "Sandboxes", make: () => sandboxesPage(info) };
}

function show() {
  if (!info) return;
  if (current && current.close) current.close();
  const { name, title, make } = route();
  for (const link of nav.querySelectorAll("a")) {
    const active = link.dataset.page === name || (name === "sandbox" && link.dataset.page === "sandboxes");
    link.classList.toggle("active", active);
    if (active) link.setAttribute("aria-current", "page"); else link.removeAttribute("aria-current");
  }
  document.title = `${title} · createos-fake`;
  current = make();
  replace(pageNode, current.node);
}

function setLive(on) {
  live.textContent = on ? "live" : "reconnecting";
  live.className = on ? "live on" : "live off";
}

function close() {
  api.disconnect();
  if (current && current.close) current.close();
  current = null;
  info = null;
  replace(pageNode);
}

function showLogin(note = "") {
  close();
  loginForm.hidden = false;
  nav.hidden = true;
  live.hidden = true;
  logoutButton.hidden = true;
  loginNote.textContent = note;
  document.title = "Log in · createos-fake";
  document.getElementById("key").focus();
}

async function start(note = "") {
  try {
    info = await api.session();
  } catch (error) {
    replace(pageNode, h("p", { class: "error" }, `The fake did not answer: ${error.message}`));
    return;
  }
  if (!info.logged_in) {
    info = null;
    showLogin(note);
    return;
  }
  loginForm.hidden = true;
  nav.hidden = false;
  live.hidden = false;
  logoutButton.hidden = false;
  setLive(false);
  api.connect(setLive, () => showLogin("The fake no longer knows this page's session (it restarted, or the session ended): log in again."));
  show();
}

loginForm.addEventListener("submit", async (event) => {
  event.preventDefault();
  const field = document.getElementById("key");
  const error = document.getElementById("login-error");
  try {
    await api.login(field.value);
    field.value = "";
    error.textContent = "";
    await start();
  } catch (failure) {
    error.textContent = failure.message;
  }
});

logoutButton.addEventListener("click", async () => {
  await api.logout();
  showLogin("Logged out.");
});

window.addEventListener("hashchange", show);
start();
