// Pairing: strangers who wrote to a channel and wait for the owner's approval.

import { h, relativeTime, fullTime } from "../dom.js";
import { Panel } from "./panel.js";

export class PairingPanel extends Panel {
  /** `onCount(n)`: told how many requests wait (the tab's badge). */
  constructor(section, gateway, onCount = () => {}) {
    super(section, gateway, "Pairing requests");
    this.onCount = onCount;
  }

  async load() {
    const listed = await this.gateway.call("pair.list");
    const pairs = Object.values(listed.pairs || {});
    this.onCount(pairs.length);
    this.body.replaceChildren(...(pairs.length ? pairs.map((p) => this.item(p)) : [this.empty("Nobody is waiting to be paired.")]));
  }

  item(pair) {
    const who = pair.senderName ? `${pair.senderName} (${pair.senderId})` : pair.senderId;
    return h(
      "div", { class: "item", testid: "pairing-item", dataset: { channel: pair.channel, senderId: pair.senderId } },
      h("div", { class: "item-main" },
        h("div", { class: "item-title" }, h("strong", {}, who), h("span", { class: "tag" }, pair.channel)),
        h("div", { class: "muted small", title: fullTime(pair.requestedAt) }, `asked ${relativeTime(pair.requestedAt)} · ${pair.attempts ?? 1} attempt(s)`),
        pair.firstMessage ? h("blockquote", { class: "small" }, String(pair.firstMessage)) : null),
      h("div", { class: "item-actions" },
        h("button", { type: "button", class: "button primary", testid: "pairing-approve", onclick: () => this.decide(pair, "pair.approve") }, "Approve"),
        h("button", { type: "button", class: "button danger", testid: "pairing-reject", onclick: () => this.decide(pair, "pair.reject") }, "Reject")),
    );
  }

  async decide(pair, method) {
    const params = { channel: pair.channel, senderId: pair.senderId };
    let warning = "";
    const done = await this.act("Cannot answer", async () => {
      warning = (await this.gateway.call(method, params)).warning || "";
    });
    if (done) {
      await this.refresh();
      const verb = method === "pair.approve" ? "Approved" : "Rejected";
      this.say(`${verb} ${pair.senderId}.${warning ? ` ${warning}` : ""}`);
    }
  }
}
