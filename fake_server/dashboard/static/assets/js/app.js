// The dashboard's shell: log in, keep the live stream open, route #/... to a page.

import * as api from "./api.js";
import { replace, h } from "./dom.js";
import { sandboxesPage } from "./pages/sandboxes.js";
import { sandboxPage } from "./pages/sandbox.js";
import { journalPage } from "./pages/journal.js";
import { faultsPage } from "./pages/faults.js";
import { resourcesPage } from "./pages/resources.js";

const pageNode = document.getElementById("page");
const loginForm = document.getElementById("login");
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
  if (parts[0] === "sandbox" && parts[1]) return { name: "sandbox", make: () => sandboxPage(parts[1], info) };
  if (parts[0] === "journal") return { name: "journal", make: () => journalPage(params, info) };
  if (parts[0] === "faults") return { name: "faults", make: () => faultsPage(info) };
  if (parts[0] === "resources") return { name: "resources", make: () => resourcesPage(info) };
  return { name: "sandboxes", make: () => sandboxesPage(info) };
}

function show() {
  if (!info) return;
  if (current && current.close) current.close();
  const { name, make } = route();
  for (const link of nav.querySelectorAll("a")) {
    link.classList.toggle("active", link.dataset.page === name || (name === "sandbox" && link.dataset.page === "sandboxes"));
  }
  current = make();
  replace(pageNode, current.node);
}

function setLive(on) {
  live.textContent = on ? "live" : "reconnecting";
  live.className = on ? "live on" : "live off";
}

async function start() {
  try {
    info = await api.session();
  } catch (error) {
    if (error.status === 401) {
      loginForm.hidden = false;
      nav.hidden = true;
      logoutButton.hidden = true;
      document.getElementById("key").focus();
      return;
    }
    replace(pageNode, h("p", { class: "error" }, `The fake did not answer: ${error.message}`));
    return;
  }
  loginForm.hidden = true;
  nav.hidden = false;
  logoutButton.hidden = false;
  api.connect(setLive);
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
  api.disconnect();
  if (current && current.close) current.close();
  current = null;
  info = null;
  replace(pageNode);
  setLive(false);
  live.textContent = "offline";
  await start();
});

window.addEventListener("hashchange", show);
start();
