// Sessions: every stored session with search, a label you can edit, reset and compact,
// opening one in the chat, and starting a new one.

import { h, relativeTime, fullTime, randomId } from "../dom.js";
import { Panel } from "./panel.js";

export class SessionsPanel extends Panel {
  /** `chat`: {conversation, openChat()} to switch the chat to a session. */
  constructor(section, gateway, { conversation, openChat }) {
    super(section, gateway, "Sessions");
    this.conversation = conversation;
    this.openChat = openChat;
    this.sessions = [];
    this.search = h("input", {
      type: "search", class: "input", testid: "session-search", placeholder: "Search sessions",
      "aria-label": "Search sessions", oninput: () => this.render(),
    });
    this.tools.append(
      this.search,
      h("button", { type: "button", class: "button primary", testid: "new-session", onclick: () => this.newSession() }, "New session"),
    );
  }

  async load() {
    const listed = await this.gateway.call("sessions.list", { limit: 500 });
    this.sessions = listed.sessions || [];
    this.render();
  }

  render() {
    const query = this.search.value.trim().toLowerCase();
    const shown = this.sessions.filter(
      (s) => !query || s.sessionKey.toLowerCase().includes(query) || (s.label || "").toLowerCase().includes(query),
    );
    this.body.replaceChildren(...(shown.length ? shown.map((s) => this.item(s)) : [this.empty(query ? "No session matches." : "No sessions yet.")]));
  }

  item(session) {
    const key = session.sessionKey;
    const current = key === this.conversation.key;
    const label = h("input", {
      class: "input label-input", testid: "session-label", value: session.label || "",
      placeholder: "Add a label", "aria-label": `Label of ${key}`,
    });
    label.addEventListener("change", () => this.relabel(key, label.value.trim()));
    label.addEventListener("keydown", (e) => e.key === "Enter" && label.blur());
    return h(
      "div", { class: `item${current ? " current" : ""}`, testid: "session-item", dataset: { key } },
      h("div", { class: "item-main" },
        h("button", { type: "button", class: "link-button", testid: "session-open", onclick: () => this.open(key) },
          session.label || key, current ? h("span", { class: "tag" }, "open") : null),
        h("div", { class: "muted small" },
          h("code", {}, key), ` · ${session.messageCount ?? 0} messages · `,
          h("span", { title: fullTime(session.lastActiveAt) }, `active ${relativeTime(session.lastActiveAt)}`))),
      h("div", { class: "item-actions" },
        label,
        h("button", { type: "button", class: "button", testid: "session-compact", onclick: () => this.compact(key) }, "Compact"),
        h("button", { type: "button", class: "button danger", testid: "session-reset", onclick: () => this.reset(key) }, "Reset")),
    );
  }

  async open(key) {
    this.openChat();
    await this.conversation.open(key);
  }

  async newSession() {
    const stamp = new Date().toISOString().slice(0, 16).replace(/[-:T]/g, "");
    this.openChat();
    await this.conversation.open(`web-${stamp}-${randomId().slice(0, 4)}`);
  }

  async relabel(key, label) {
    await this.act("Cannot label the session", async () => {
      if (key === this.conversation.key) await this.conversation.rename(label);
      else await this.gateway.call("session.patch", { sessionKey: key, label });
      const session = this.sessions.find((s) => s.sessionKey === key);
      if (session) session.label = label || undefined;
      return label ? `Labelled ${key} “${label}”.` : `Label of ${key} removed.`;
    });
  }

  async reset(key) {
    await this.act("Cannot reset the session", async () => {
      const result = await this.gateway.call("session.reset", { sessionKey: key });
      await this.afterChange(key);
      return `Reset ${key}: ${result.archivedMessages ?? 0} messages archived.`;
    });
  }

  async compact(key) {
    await this.act("Cannot compact the session", async () => {
      const result = await this.gateway.call("session.compact", { sessionKey: key });
      await this.afterChange(key);
      return `Compacted ${key}: ${result.trimmedMessages ?? 0} messages archived, ${result.keptMessages ?? 0} kept.`;
    });
  }

  async afterChange(key) {
    if (key === this.conversation.key) await this.conversation.load();
    await this.load();
  }
}
