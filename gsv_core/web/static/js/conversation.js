// The session shown in the chat: loading it (history, model, whether a run is on,
// approvals still waiting), following its events, sending your messages one at a time
// in order, stopping runs and answering approvals. After a lost connection it loads the
// session again and marks what arrived meanwhile ("what you missed"), as the TUI does.
// The web twin of gsv_cli/tui/{link,feed,sending}.py.

import { h, randomId } from "./dom.js";
import { historyItems } from "./transcript.js";
import { noticeElement } from "./messages.js";
import { RELOADING, SETTINGS_CHANGING, isCommandLike, parseLocal } from "./commands.js";

export const DEFAULT_SESSION = "agent:main:cli:dm:main"; // gsv_core.routing.CLI_SESSION_KEY
const HISTORY_LIMIT = 200;
const SEND_TIMEOUT_MS = 120000;
const CANCELLED = "Run cancelled by user";

export class Conversation {
  constructor({ gateway, view, header, composer, local }) {
    Object.assign(this, { gateway, view, header, composer, local });
    this.key = localStorage.getItem("gsv.session") || DEFAULT_SESSION;
    this.label = null;
    this.loaded = false;
    this.remoteBusy = false; // a run was on when the session was loaded
    this.buffered = null; // events that arrive while the session loads, shown after it
    this.sentSinceLoad = []; // texts sent from this tab: not "missed" after a reconnect
    this.outbox = Promise.resolve();
    this.ownRuns = new Set(); // runs of messages sent from this tab
    this.waiting = []; // messages waiting for the link: resolved after the next load
    view.onBusy = () => composer.setBusy(this.busy);
    gateway.addEventListener("event", (e) => this.onEvent(e.detail));
  }

  get busy() {
    return this.view.busy || this.remoteBusy;
  }

  // -- loading --------------------------------------------------------------------------
  /** Show session `key`; false (and a notice) when the gateway refuses it. */
  /** Scroll to the shown message stored at `at` (epoch ms) and mark it; false when it is
   * not shown (archived, compacted, or older than the history loaded). */
  reveal(at) {
    const found = (this.placed || []).find(({ item }) => item.ts === at && item.kind !== "notice");
    if (!found) return false;
    found.el.classList.add("found");
    found.el.scrollIntoView({ block: "center" });
    return true;
  }

  async open(key) {
    const previous = this.key;
    this.key = key.trim();
    return this.load({ fallback: previous });
  }

  /** Load the session and show it; after a reconnect, mark what was missed. When it
   * cannot be loaded, the session shown before (`fallback`) stays, and the events that
   * came for it meanwhile are shown as if nothing had happened. */
  async load({ reconnect = false, fallback = null } = {}) {
    const since = this.view.lastTs;
    const sent = this.sentSinceLoad;
    this.buffered = [];
    let loaded = true;
    try {
      const info = await this.fetch(this.key);
      this.show(info, reconnect && this.loaded ? { since, sent } : null);
      this.follow(info.key);
    } catch (err) {
      loaded = false;
      if (fallback !== null) this.key = fallback;
      this.view.addNotice(`Cannot load the session: ${err.message}`, "error");
    }
    const waiting = this.buffered;
    this.buffered = null;
    for (const detail of waiting) this.onEvent(detail);
    this.release();
    return loaded;
  }

  /** Hear only this session's conversation from now on (`chat.subscribe`): a tab open on
   * one chat is not sent every other session's stream. Asked again after each load, a
   * reconnect's too; if it fails, the tab hears every session and still shows its own. */
  follow(key) {
    this.gateway.call("chat.subscribe", { sessionKeys: [key] }).catch((err) => {
      console.info("gsv: could not follow only this session:", err.message);
    });
  }

  /** Let the messages that waited for the link go, if it is up. */
  release() {
    if (this.ready) for (const resolve of this.waiting.splice(0)) resolve();
  }

  /** Connected, and no load of the session under way: messages can go. */
  get ready() {
    return this.gateway.connected && !this.buffered;
  }

  whenReady() {
    return this.ready ? Promise.resolve() : new Promise((resolve) => this.waiting.push(resolve));
  }

  async fetch(key) {
    const call = (method, params) => this.gateway.call(method, params);
    const got = await call("session.get", { sessionKey: key });
    const sessionKey = got.sessionKey || key;
    const [preview, stats, pending] = await Promise.all([
      call("session.preview", { sessionKey, limit: HISTORY_LIMIT }),
      call("session.stats", { sessionKey }),
      call("tool.approvals"),
    ]);
    const approvals = (pending.approvals || []).filter((a) => a.sessionKey === sessionKey);
    return { got, key: sessionKey, preview, processing: Boolean(stats.isProcessing), approvals };
  }

  show({ got, key, preview, processing, approvals }, missed) {
    this.key = key;
    this.label = got.label || null;
    this.loaded = true;
    this.sentSinceLoad = [];
    localStorage.setItem("gsv.session", key);
    this.header.showSession(key, this.label);
    this.header.showModel(got);
    const messages = preview.messages || [];
    const placed = this.view.load(historyItems(messages));
    this.placed = placed;
    this.remoteBusy = processing;
    for (const approval of approvals) this.view.onApproval(approval);
    const hidden = (preview.messageCount || messages.length) - messages.length;
    if (hidden > 0) {
      this.view.root.prepend(noticeElement(`${hidden} earlier messages are not shown.`));
    }
    if (!messages.length) this.view.addNotice(`New conversation in ${key}. Type / for commands.`);
    if (missed) markMissed(placed, missed);
    this.view.onBusy();
  }

  async refreshHeader() {
    if (!this.gateway.connected) return;
    try {
      const got = await this.gateway.call("session.get", { sessionKey: this.key });
      this.label = got.label || null;
      this.header.showSession(this.key, this.label);
      this.header.showModel(got);
    } catch (err) {
      console.info("gsv: header refresh failed:", err.message);
    }
  }

  // -- events ---------------------------------------------------------------------------
  onEvent(detail) {
    if (this.buffered) {
      this.buffered.push(detail);
      return;
    }
    const { event, payload } = detail;
    if (event === "config.changed") return void this.refreshHeader();
    if (payload.sessionKey !== this.key) return; // another session's
    if (event === "chat") this.onChat(payload);
    else if (event === "chat.tool") {
      this.view.onTool(payload.runId == null ? null : String(payload.runId), payload.tool || {});
    }
    else if (event === "tool.approval") this.view.onApproval(payload);
    else if (event === "session.notice") {
      const heartbeat = payload.kind === "heartbeat";
      this.view.addNotice(heartbeat ? `**Heartbeat**\n\n${payload.text ?? ""}` : String(payload.text ?? ""), "system", { markdown: heartbeat });
    }
  }

  onChat(payload) {
    const runId = String(payload.runId);
    const view = this.view;
    const known = view.knows(runId) || this.ownRuns.has(runId);
    if (!known && shownAlready(payload.message, view.lastTs)) {
      // the end of a run the history just loaded already holds (it came while loading)
      if (payload.state === "final") this.remoteBusy = false;
      view.onBusy();
      return;
    }
    if (!known) this.showPrompt(view.anchor(), this.key);
    if (payload.state === "delta") view.onDelta(runId, String(payload.text ?? ""), payload.replace === true);
    else if (payload.state === "partial") view.onPartial(runId, payload.message || {});
    else if (payload.state === "final") {
      this.remoteBusy = false;
      view.onFinal(runId, payload.message);
      this.refreshHeader(); // a model set for one message is used up
    } else if (payload.state === "error") {
      this.remoteBusy = false;
      view.onError(runId);
      const error = String(payload.error || "the run failed");
      view.addNotice(error === CANCELLED ? "Run stopped." : error, error === CANCELLED ? "system" : "error");
    } else if (payload.state === "paused" && !view.approvals.has(payload.approvalId)) {
      view.addNotice(textOf(payload.message) || "The run is paused.");
    }
  }

  /** A run this tab did not start (another client, a channel, cron): its message has no
   * event of its own, so read it from the history and show it where the run begins. */
  async showPrompt(anchor, key) {
    let preview;
    try {
      preview = await this.gateway.call("session.preview", { sessionKey: key, limit: 6 });
    } catch (err) {
      console.info("gsv: could not read the message of a run:", err.message);
      return;
    }
    if (key !== this.key || !anchor.isConnected) return;
    const prompts = historyItems(preview.messages || []).filter(
      (item) => item.kind === "user" && item.ts > this.view.lastTs && !this.sentSinceLoad.includes(item.text),
    );
    for (const item of prompts) {
      anchor.before(this.view.itemElement(item));
      this.view.lastTs = Math.max(this.view.lastTs, item.ts);
    }
  }

  // -- sending --------------------------------------------------------------------------
  /** Queue a message (and its images) to go after the ones before it. */
  send(text, images = []) {
    this.outbox = this.outbox.then(() => this.sendOne(text, images)).catch((err) => {
      console.error("gsv: sending failed", err);
    });
    return this.outbox;
  }

  async sendOne(text, images) {
    const local = images.length ? null : parseLocal(text);
    if (local) return this.local(local);
    const runId = randomId();
    this.ownRuns.add(runId);
    const key = this.key;
    let message = null;
    const echo = () => {
      message = this.view.addUser(text, images);
      this.view.expect(runId);
      this.sentSinceLoad.push(text);
    };
    if (!isCommandLike(text) || images.length) echo();
    if (!this.ready) {
      // offline: the message waits for the link (and the reload after it), as in the TUI
      message?.show("waiting for the gateway…");
      await this.whenReady();
      if (message && !message.el.isConnected) echo(); // the reload cleared the screen
      else message?.show("");
    }
    const params = { sessionKey: key, message: text, runId };
    if (images.length) params.media = images.map((i) => ({ type: "image", data: i.data, mimeType: i.mime }));
    let result;
    try {
      result = await this.gateway.call("chat.send", params, { timeout: SEND_TIMEOUT_MS });
    } catch (err) {
      this.view.forget(runId);
      if (message) message.markFailed(err.message);
      else this.view.addNotice(`${text}: not sent: ${err.message}`, "error");
      if (!this.composer.text) this.composer.text = text; // yours to send again
      return;
    }
    if (key !== this.key) return; // switched away meanwhile
    if (result.status !== "started" && !result.queued) return this.commandAnswered(text, runId, result, message);
    if (!message) echo(); // a `/word` that is no command: the model got it as text
    if (result.status === "paused") this.view.addNotice(String(result.response ?? ""));
    if (result.queued) this.view.markQueued(runId, message, Number(result.queuePosition) || 1);
  }

  async commandAnswered(text, runId, result, echoed = null) {
    this.view.forget(runId);
    const command = result.command;
    if (RELOADING.has(command)) await this.load();
    else if (SETTINGS_CHANGING.has(command) || result.status === "directive-only") this.refreshHeader();
    if (!echoed) this.view.addNotice(`› ${text.trim()}`, "system"); // a "yes" shows once
    if (result.error) this.view.addNotice(String(result.error), "error");
    else if (result.response && !stoppedRun(result)) {
      this.view.addNotice(hardBreaks(String(result.response)), "system", { markdown: true });
    }
  }

  /** Stop this session's run: the gateway's `/stop`, as the TUI sends it. */
  async stop() {
    if (!this.busy) return;
    try {
      const result = await this.gateway.call("chat.send", { sessionKey: this.key, message: "/stop" });
      if (!stoppedRun(result)) this.view.addNotice(String(result.response || result.error || ""));
    } catch (err) {
      this.view.addNotice(`Cannot stop the run: ${err.message}`, "error");
    }
    this.remoteBusy = false;
    this.view.onBusy();
  }

  /** Answer an approval; the gateway's tool.approval event settles it in every client. */
  answer(approvalId, decision, remember) {
    const params = { approvalId, decision };
    if (remember) params.remember = remember;
    return this.gateway.call("tool.approve", params);
  }

  async rename(label) {
    await this.gateway.call("session.patch", { sessionKey: this.key, label });
    this.label = label || null;
    this.header.showSession(this.key, this.label);
  }
}

/** A notice before the first message that arrived while the page was offline. */
function markMissed(placed, { since, sent }) {
  const mine = [...sent];
  const missed = placed.filter(({ item }) => {
    if (!item.ts || item.ts <= since) return false;
    const own = item.kind === "user" ? mine.indexOf(item.text) : -1;
    if (own >= 0) mine.splice(own, 1); // sent from this tab: seen already
    return own < 0;
  });
  if (!missed.length) return;
  const messages = missed.filter(({ item }) => item.kind === "user" || item.kind === "assistant").length;
  const tools = missed.filter(({ item }) => item.kind === "tool").length;
  const parts = [];
  if (messages) parts.push(`${messages} new message${messages === 1 ? "" : "s"}`);
  if (tools) parts.push(`${tools} tool call${tools === 1 ? "" : "s"}`);
  if (!parts.length) parts.push(`${missed.length} new item${missed.length === 1 ? "" : "s"}`);
  const notice = h("div", { class: "missed", testid: "missed", role: "status" },
    `While the connection was down: ${parts.join(" and ")}.`);
  missed[0].el.before(notice);
  const root = notice.parentElement; // scrolled by hand: scrollIntoView would move the page too
  root.scrollTop = notice.offsetTop - root.offsetTop - 16;
}

/** A stored message at or before the newest one shown (its timestamp says so). */
function shownAlready(message, lastTs) {
  return typeof message?.timestamp === "number" && message.timestamp <= lastTs;
}

function stoppedRun(result) {
  // /stop's "Stopped run ..." is followed by the run's own error event: say it once
  return result.command === "stop" && String(result.response ?? "").startsWith("Stopped run");
}

/** Gateway answers are line-oriented: keep their line breaks in Markdown. */
function hardBreaks(text) {
  return text.split("\n").map((line) => (line.trim() ? `${line}  ` : line)).join("\n");
}

/** The text of a paused event's message (an assistant message or a plain string). */
function textOf(message) {
  if (typeof message === "string") return message;
  const content = message && message.content;
  if (typeof content === "string") return content;
  return (Array.isArray(content) ? content : []).map((b) => String(b?.text ?? "")).join("");
}
