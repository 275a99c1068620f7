// What every side panel shares: a title, a Refresh button, a status line for errors and
// "offline", and a body the panel fills from the gateway each time it is shown.

import { h } from "../dom.js";

export class Panel {
  constructor(section, gateway, title) {
    this.section = section;
    this.gateway = gateway;
    this.status = h("div", { class: "panel-status", role: "status" });
    this.tools = h("div", { class: "panel-tools" });
    this.body = h("div", { class: "panel-body" });
    section.classList.add("side-panel");
    section.append(
      h("div", { class: "panel-head" },
        h("h2", {}, title),
        this.tools,
        h("button", { type: "button", class: "button", onclick: () => this.refresh() }, "Refresh")),
      this.status,
      this.body,
    );
  }

  show() {
    return this.refresh();
  }

  get visible() {
    return !this.section.hidden;
  }

  async refresh() {
    if (!this.gateway.connected) return this.say("Offline: this view fills in when the gateway is back.");
    try {
      await this.load();
      this.say("");
    } catch (err) {
      this.say(err.message, true);
    }
  }

  /** Fill the body; subclasses override. */
  async load() {}

  say(text, error = false) {
    this.status.textContent = text;
    this.status.classList.toggle("error", error);
  }

  /** Run an action from a button, saying how it went. */
  async act(what, action) {
    try {
      const said = await action();
      this.say(typeof said === "string" ? said : "");
    } catch (err) {
      this.say(`${what}: ${err.message}`, true);
      return false;
    }
    return true;
  }

  /** An empty list's line; `...parts` are strings or nodes (e.g. a <code> command). */
  empty(...parts) {
    return h("p", { class: "empty muted" }, parts);
  }
}
