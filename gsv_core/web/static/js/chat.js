// The transcript: a scrolling column of messages that follows the bottom while replies
// stream in (unless you scrolled up), and the bookkeeping of runs: which reply is
// streaming, which tool block is a call's, which of your messages still wait in the queue.
// The web twin of gsv_cli/tui/widgets/chat_view.py; it never talks to the gateway.
//
// A run's events: `delta` text (streamed into the run's current reply), `partial` (the
// reply before its tool calls; settles the text), `chat.tool` start/end, then `final` or
// `error`.

import { h } from "./dom.js";
import { Reply, UserMessage, noticeElement } from "./messages.js";
import { ToolCall } from "./tools.js";
import { Approval } from "./approvals.js";
import { replyText, thinkingOf } from "./transcript.js";

const FOLLOW_SLACK_PX = 96;

export class ChatView {
  /** `root`: the transcript element; `answer(id, decision, remember)` answers approvals. */
  constructor(root, { answer }) {
    this.root = root;
    this.answer = answer;
    this.runs = new Map();
    this.loneTools = new Map(); // callId -> ToolCall of `tool.request` calls (no run)
    this.queued = new Map();
    this.ended = new Set(); // a late chat.send answer must not revive these
    this.approvals = new Map();
    this.lastTs = 0; // the newest stored message shown (gateway clock), for "what you missed"
    this.onBusy = () => {};
  }

  get busy() {
    return this.runs.size > 0;
  }

  // -- building blocks ------------------------------------------------------------------
  add(el) {
    const follow = this.atBottom();
    this.root.append(el);
    if (follow) this.scrollToEnd();
    return el;
  }

  atBottom() {
    const r = this.root;
    return r.scrollHeight - r.scrollTop - r.clientHeight < FOLLOW_SLACK_PX;
  }

  scrollToEnd() {
    this.root.scrollTop = this.root.scrollHeight;
  }

  addUser(text, images = []) {
    const message = new UserMessage(text, images);
    this.add(message.el);
    this.scrollToEnd(); // what you send is always shown
    return message;
  }

  /** A line from the page or the gateway (text, or nodes built with h()): `level` system
   * | error; Markdown when asked. */
  addNotice(text, level = "system", { markdown = false } = {}) {
    return this.add(noticeElement(text, level, markdown));
  }

  clear() {
    this.root.replaceChildren();
    this.runs.clear();
    this.loneTools.clear();
    this.queued.clear();
    this.ended.clear();
    this.approvals.clear();
    this.lastTs = 0;
    this.onBusy();
  }

  /** Replace everything with a session's stored conversation (display items). */
  load(items) {
    this.clear();
    const fragment = document.createDocumentFragment();
    const placed = [];
    for (const item of items) {
      const el = this.itemElement(item);
      fragment.append(el);
      placed.push({ item, el });
      if (item.ts) this.lastTs = Math.max(this.lastTs, item.ts);
    }
    this.root.append(fragment);
    this.scrollToEnd();
    return placed;
  }

  itemElement(item) {
    if (item.kind === "user") return new UserMessage(item.text, item.images).el;
    if (item.kind === "assistant") return new Reply(item.text, item.thinking).el;
    if (item.kind === "tool") return new ToolCall(item.call).el;
    return noticeElement(item.text, item.level === "error" ? "error" : "system");
  }

  /** Whether run `runId` is one this view follows already (sent from here, or seen). */
  knows(runId) {
    return this.runs.has(runId) || this.queued.has(runId) || this.ended.has(runId);
  }

  /** An empty marker at the end, where something learnt later is put in its place. */
  anchor() {
    return this.root.appendChild(h("div", { class: "anchor", "aria-hidden": "true" }));
  }

  // -- your messages --------------------------------------------------------------------
  expect(runId) {
    if (!this.ended.has(runId) && !this.runs.has(runId)) this.runs.set(runId, newRun(runId));
    this.onBusy();
  }

  forget(runId) {
    this.runs.delete(runId);
    this.onBusy();
  }

  markQueued(runId, message, position) {
    const run = this.runs.get(runId);
    if (this.ended.has(runId) || (run && run.seen)) return; // its events came first
    this.runs.delete(runId);
    this.queued.set(runId, message);
    message.markQueued(position);
    this.onBusy();
  }

  started(runId) {
    const message = this.queued.get(runId);
    if (message) {
      this.queued.delete(runId);
      message.markStarted();
    }
    if (!this.runs.has(runId)) this.runs.set(runId, newRun(runId));
    const run = this.runs.get(runId);
    run.seen = true;
    this.onBusy();
    return run;
  }

  advanceQueue() {
    for (const [runId, message] of this.queued) {
      const position = (message.position || 1) - 1;
      if (position <= 0) {
        this.queued.delete(runId);
        message.markStarted();
        this.expect(runId);
      } else message.markQueued(position);
    }
  }

  // -- events ---------------------------------------------------------------------------
  onDelta(runId, text, replace = false) {
    const run = this.started(runId);
    if (!run.reply) {
      run.reply = new Reply();
      run.reply.el.classList.add("streaming");
      run.reply.el.setAttribute("aria-busy", "true"); // read it out once it is whole
      this.add(run.reply.el);
    }
    const follow = this.atBottom();
    run.reply.write(text, () => follow && this.scrollToEnd(), replace);
  }

  onPartial(runId, message) {
    const run = this.started(runId);
    this.note(message);
    const thinking = thinkingOf(message);
    const text = replyText(message);
    if (!run.reply && (text.trim() || thinking.trim())) {
      run.reply = new Reply();
      this.add(run.reply.el);
    }
    if (run.reply && thinking) run.reply.setThinking(thinking);
    this.settleReply(run, text);
  }

  /** A `chat.tool` event; `runId` null: a `tool.request` call (another client's, by
   * hand), shown as a block of its own without opening a run that would never end. */
  onTool(runId, tool) {
    const run = runId === null ? null : this.started(runId);
    const tools = run ? run.tools : this.loneTools;
    const callId = String(tool.callId ?? "");
    if (tool.phase === "start") {
      if (run) this.settleReply(run, null);
      const call = new ToolCall({ callId, name: String(tool.name ?? "?"), args: tool.args ?? {} });
      tools.set(callId, call);
      this.add(call.el);
      return;
    }
    if (!tools.has(callId)) {
      // its start was missed (a reconnect): show the outcome
      const call = new ToolCall({ callId, name: String(tool.name ?? "?"), args: {} });
      tools.set(callId, call);
      this.add(call.el);
    }
    const result = tool.result === undefined ? String(tool.summary ?? "")
      : typeof tool.result === "string" ? tool.result : JSON.stringify(tool.result, null, 2);
    tools.get(callId).finish(!tool.isError, result, tool.durationMs);
    if (!run) this.loneTools.delete(callId); // finished: kept on the page, not in the map
  }

  /** A `tool.approval` event: a new prompt when pending, else settle the shown one. */
  onApproval(approval) {
    const id = String(approval.approvalId ?? "");
    const state = String(approval.state ?? "pending");
    const shown = this.approvals.get(id);
    if (state === "pending") {
      if (!shown) {
        const prompt = new Approval(approval, this.answer);
        this.approvals.set(id, prompt);
        this.add(prompt.el);
        this.scrollToEnd();
      }
      return;
    }
    if (shown) shown.settle(state);
  }

  onFinal(runId, message) {
    const run = this.started(runId);
    this.note(message);
    const text = replyText(message || {});
    const thinking = thinkingOf(message || {});
    if (!run.reply && (text.trim() || thinking.trim())) {
      run.reply = new Reply();
      this.add(run.reply.el);
    }
    if (run.reply && thinking) run.reply.setThinking(thinking);
    this.settleReply(run, text);
    this.end(run);
  }

  onError(runId) {
    const run = this.started(runId);
    this.settleReply(run, null);
    for (const call of run.tools.values()) if (call.running) call.finish(false, "the run ended first");
    this.end(run);
  }

  note(message) {
    if (message && typeof message.timestamp === "number") this.lastTs = Math.max(this.lastTs, message.timestamp);
  }

  settleReply(run, text) {
    if (run.reply) {
      const follow = this.atBottom();
      run.reply.settle(text);
      if (follow) this.scrollToEnd();
      run.reply = null;
    }
  }

  end(run) {
    this.runs.delete(run.runId);
    this.ended.add(run.runId);
    this.advanceQueue();
    this.onBusy();
  }
}

function newRun(runId) {
  return { runId, reply: null, seen: false, tools: new Map() };
}
