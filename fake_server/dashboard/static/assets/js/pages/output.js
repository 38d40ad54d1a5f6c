// A process's output as it arrives, from its own event stream; text nodes only.

import { atBottom, h } from "../dom.js";

const MAX_CHARS = 200000;

export function outputPanel(sandboxId, process, onClose, onExit) {
  const pre = h("pre", { class: "output", tabindex: "0", "aria-label": `output of ${process.process_id}` });
  const state = h("span", { class: "muted" }, "streaming…");
  const closeButton = h("button", { type: "button", "aria-label": `close the output of ${process.process_id}` }, "close");
  const node = h("section", { class: "card output-panel", dataset: { process: process.process_id } },
    h("h2", {}, `Output of ${process.process_id}: `, h("span", { class: "mono" }, [process.cmd, ...process.args].join(" ")), " ", state, " ", closeButton),
    pre);
  const source = new EventSource(`api/sandboxes/${encodeURIComponent(sandboxId)}/processes/${encodeURIComponent(process.process_id)}/output`);
  let size = 0;
  source.addEventListener("output", (event) => {
    const frame = JSON.parse(event.data);
    const follow = atBottom(pre); // a reader who scrolled up stays where they are
    const piece = h("span", { class: `stream-${frame.stream}` }, frame.text);
    pre.append(piece);
    size += frame.text.length;
    while (size > MAX_CHARS && pre.firstChild) {
      size -= pre.firstChild.textContent.length;
      pre.firstChild.remove();
    }
    if (follow) pre.scrollTop = pre.scrollHeight;
  });
  source.addEventListener("skipped", () => pre.append(h("span", { class: "muted" }, "\n[older output was evicted]\n")));
  source.addEventListener("exit", (event) => {
    const exit = JSON.parse(event.data);
    state.textContent = exit.signal ? `killed by ${exit.signal}` : `exited with ${exit.exit_code}`;
    source.close();
    onExit(); // the process table shows the exit too
  });
  source.addEventListener("error", () => {
    // No automatic reconnect: it would replay the output from the start.
    source.close();
    if (!state.textContent.startsWith("exited") && !state.textContent.startsWith("killed")) state.textContent = "stream closed";
  });
  function close() {
    source.close();
    node.remove();
    onClose();
  }
  closeButton.addEventListener("click", close);
  return { node, close };
}
