// A terminal into the sandbox's login shell: xterm.js over the dashboard's WebSocket, which
// carries the frames of …/shell-ws (binary keystrokes and output, JSON resize and exit).

import { Terminal } from "../../vendor/xterm/xterm.mjs";
import { h } from "../dom.js";

const encoder = new TextEncoder();

export function terminalPanel(sandboxId) {
  const state = h("span", { class: "muted terminal-state" }, "not open");
  const openButton = h("button", { type: "button", class: "open-terminal" }, "open a shell");
  const screen = h("div", { class: "terminal" });
  const node = h("section", { class: "card terminal-panel" },
    h("h2", {}, "Terminal ", state, " ", openButton), screen);
  let term = null;
  let socket = null;

  function open() {
    close();
    // convertEol: the bashkit runtime's shell writes bare "\n"; a real PTY's "\r\n" is unchanged.
    term = new Terminal({ rows: 24, cols: 100, convertEol: true, fontFamily: "monospace" });
    term.open(screen);
    const url = new URL(`api/sandboxes/${encodeURIComponent(sandboxId)}/shell?rows=${term.rows}&cols=${term.cols}`, location.href);
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    const ws = socket = new WebSocket(url);
    ws.binaryType = "arraybuffer";
    state.textContent = "connecting…";
    ws.addEventListener("open", () => { state.textContent = "connected"; term.focus(); });
    ws.addEventListener("message", (event) => {
      if (typeof event.data !== "string") { term.write(new Uint8Array(event.data)); return; }
      const message = JSON.parse(event.data);
      if (message.type === "exit") state.textContent = message.signal ? `killed by ${message.signal}` : `exited with ${message.exit_code}`;
    });
    ws.addEventListener("close", (event) => {
      if (socket !== ws) return;
      if (!state.textContent.startsWith("exited") && !state.textContent.startsWith("killed")) {
        state.textContent = event.reason ? `closed: ${event.reason}` : "closed";
      }
    });
    const send = (data) => { if (ws.readyState === WebSocket.OPEN) ws.send(data); };
    term.onData((data) => send(encoder.encode(data)));
    term.onResize(({ rows, cols }) => send(JSON.stringify({ type: "resize", rows, cols })));
  }

  function close() {
    const ws = socket;
    socket = null;
    if (ws) ws.close();
    if (term) term.dispose();
    term = null;
  }

  openButton.addEventListener("click", open);
  return { node, close };
}
