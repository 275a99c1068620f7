// A tool call in the transcript: a collapsible <details> naming the tool and where it
// runs, with its arguments (JSON), its result and how long it took. It starts `running`
// and ends `done` or `error` (an error opens itself: worth seeing without a click).

import { h } from "./dom.js";

const NATIVE_PREFIX = "gsv__"; // the gateway's own tools; `{nodeId}__{tool}` for node tools
const PRIMARY_ARGS = ["command", "path", "file_path", "pattern", "query", "url", "sessionId", "key"];

/** [tool, where it runs]: `node-a__Read` -> [Read, node-a]; `gsv__X` -> [X, gateway]. */
export function splitTool(name) {
  if (name.startsWith(NATIVE_PREFIX)) return [name.slice(NATIVE_PREFIX.length), "gateway"];
  const at = name.indexOf("__");
  if (at <= 0 || at + 2 >= name.length) return [name, ""];
  return [name.slice(at + 2), name.slice(0, at)];
}

/** The arguments on one short line: the main one's value, else `key=value` pairs. */
export function argsSummary(args, width = 60) {
  if (!args || typeof args !== "object") return "";
  for (const key of PRIMARY_ARGS) {
    const value = args[key];
    if (["string", "number"].includes(typeof value)) return shorten(String(value), width);
  }
  const pairs = Object.entries(args).map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`);
  return shorten(pairs.join(", "), width);
}

function shorten(text, width) {
  const line = text.split(/\s+/).join(" ");
  return line.length <= width ? line : `${line.slice(0, width - 1)}…`;
}

export function formatDuration(ms) {
  if (typeof ms !== "number") return "";
  return ms < 100 ? "<0.1 s" : `${(ms / 1000).toFixed(1)} s`;
}

export class ToolCall {
  /** `call`: {callId, name, args, ok?: bool|null, result?, durationMs?}. */
  constructor(call) {
    this.callId = call.callId;
    const [tool, where] = splitTool(call.name || "?");
    this.icon = h("span", { class: "tool-icon", "aria-hidden": "true" });
    this.state = h("span", { class: "sr-only" });
    this.duration = h("span", { class: "tool-duration", testid: "tool-duration" });
    this.result = h("pre", { class: "tool-result", testid: "tool-result" });
    this.el = h(
      "details",
      { class: "tool-call", testid: "tool-call", dataset: { tool: call.name || "?" } },
      h(
        "summary", {},
        this.icon, this.state,
        h("span", { class: "tool-name" }, tool),
        where ? h("span", { class: "tool-where" }, where) : null,
        h("span", { class: "tool-brief" }, argsSummary(call.args)),
        this.duration,
      ),
      h("div", { class: "tool-label" }, "Arguments"),
      h("pre", { class: "tool-args", testid: "tool-args" }, JSON.stringify(call.args ?? {}, null, 2)),
      h("div", { class: "tool-label" }, "Result"),
      this.result,
    );
    if (call.ok === true || call.ok === false) this.finish(call.ok, call.result ?? "", call.durationMs);
    else this.setStatus("running", "running…");
  }

  get running() {
    return this.el.dataset.status === "running";
  }

  finish(ok, result, durationMs) {
    this.setStatus(ok ? "done" : "error", result || (ok ? "(no output)" : "failed"));
    this.duration.textContent = formatDuration(durationMs);
    if (!ok) this.el.open = true;
  }

  setStatus(status, resultText) {
    this.el.dataset.status = status;
    this.icon.textContent = { running: "", done: "✓", error: "✗" }[status];
    this.icon.classList.toggle("spinner", status === "running");
    this.state.textContent = status;
    this.result.textContent = resultText;
  }
}
