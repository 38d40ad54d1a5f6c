// A terminal into the sandbox's login shell: xterm.js over the dashboard's WebSocket, which
// carries the frames of …/shell-ws (binary keystrokes and output, JSON resize and exit).
//
// xterm.js draws colours, bold and cell sizes through <style> elements it makes; the page's
// policy lets them in with its nonce, which this module gives every <style> the document
// creates (nothing else on the page makes one). The terminal is as wide as its panel; Tab
// goes to the shell, and Escape then Tab (or Shift+Tab) leaves it.

import { Terminal } from "../../vendor/xterm/xterm.mjs";
import { h } from "../dom.js";

const encoder = new TextEncoder();
const ROWS = 24;
const FONT_SIZE = 14;
const FONT = 'ui-monospace, "DejaVu Sans Mono", monospace';

const nonce = (document.querySelector('meta[name="style-nonce"]') || {}).content || "";
const createElement = document.createElement.bind(document);
document.createElement = (tag, options) => {
  const node = createElement(tag, options);
  if (nonce && String(tag).toLowerCase() === "style") node.nonce = nonce;
  return node;
};

// Columns that fit ``width`` pixels of the terminal's font.
function columnsFor(width) {
  const probe = createElement("span");
  probe.textContent = "W".repeat(50);
  probe.style.font = `${FONT_SIZE}px ${FONT}`;
  probe.style.position = "absolute";
  probe.style.visibility = "hidden";
  document.body.append(probe);
  const cell = probe.getBoundingClientRect().width / 50 || 8.4;
  probe.remove();
  return Math.max(20, Math.floor((width - 16) / cell));
}

export function terminalPanel(sandboxId) {
  const state = h("span", { class: "muted terminal-state", role: "status" }, "not open");
  const openButton = h("button", { type: "button", class: "open-terminal" }, "open a shell");
  const hint = h("p", { class: "muted hint" }, "Tab goes to the shell; press Escape, then Tab, to leave the terminal.");
  const screen = h("div", { class: "terminal", hidden: true });
  const node = h("section", { class: "card terminal-panel", "aria-label": "Terminal" },
    h("h2", {}, "Terminal ", state, " ", openButton), hint, screen);
  let term = null;
  let socket = null;
  let observer = null;
  let status = null;

  function fit() {
    if (!term) return;
    const cols = columnsFor(screen.clientWidth);
    if (cols !== term.cols) term.resize(cols, ROWS);
  }

  function open() {
    close();
    if (status !== "running") {
      state.textContent = `the sandbox is ${status}: resume it to open a shell`;
      return;
    }
    screen.hidden = false;
    term = new Terminal({ rows: ROWS, cols: columnsFor(screen.clientWidth), convertEol: true, fontFamily: FONT, fontSize: FONT_SIZE });
    let escaped = false;
    term.attachCustomKeyEventHandler((event) => {
      if (event.type !== "keydown") return true;
      if (event.key === "Tab" && (escaped || event.shiftKey)) { escaped = false; return false; } // the browser moves focus
      escaped = event.key === "Escape";
      return true;
    });
    term.open(screen);
    const url = new URL(`api/sandboxes/${encodeURIComponent(sandboxId)}/shell?rows=${term.rows}&cols=${term.cols}`, location.href);
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    const ws = socket = new WebSocket(url);
    ws.binaryType = "arraybuffer";
    state.textContent = "connecting…";
    ws.addEventListener("open", () => { if (socket === ws) { state.textContent = "connected"; term.focus(); } });
    ws.addEventListener("message", (event) => {
      if (typeof event.data !== "string") { term.write(new Uint8Array(event.data)); return; }
      const message = JSON.parse(event.data);
      if (message.type === "exit") state.textContent = message.signal ? `killed by ${message.signal}` : `exited with ${message.exit_code}`;
    });
    ws.addEventListener("close", (event) => {
      if (socket !== ws) return;
      if (event.code >= 4000) { // the fake refused the shell, saying why
        state.textContent = `refused: ${event.reason || `code ${event.code}`}`;
        screen.hidden = true;
        return;
      }
      if (!state.textContent.startsWith("exited") && !state.textContent.startsWith("killed")) {
        state.textContent = event.reason ? `closed: ${event.reason}` : "closed";
      }
    });
    const send = (data) => { if (ws.readyState === WebSocket.OPEN) ws.send(data); };
    term.onData((data) => send(encoder.encode(data)));
    term.onResize(({ rows, cols }) => send(JSON.stringify({ type: "resize", rows, cols })));
    observer = new ResizeObserver(() => fit());
    observer.observe(screen);
  }

  function close() {
    const ws = socket;
    socket = null;
    if (ws) ws.close();
    if (observer) observer.disconnect();
    observer = null;
    if (term) term.dispose();
    term = null;
  }

  // The sandbox's status, as its page last read it: a shell opens in a running one only.
  function setStatus(next) {
    status = next;
    const running = status === "running";
    openButton.disabled = !running;
    if (!running && !socket) state.textContent = `not open: the sandbox is ${status}; a shell opens in a running sandbox`;
    else if (running && state.textContent.startsWith("not open")) state.textContent = "not open";
  }

  openButton.addEventListener("click", open);
  return { node, close, setStatus };
}
