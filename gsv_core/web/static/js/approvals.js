// A tool call waiting for the owner's yes or no (`tool.approval` events): what would run,
// why it asks, and the buttons: Allow, Allow for this session, Always allow the rules the
// gateway offers for the call (`alwaysAllow`, e.g. `git commit`), Deny. Settled by
// anyone, from any client, the buttons go and the outcome stays. The buttons never take
// focus by themselves: an Enter meant for the composer must not approve `rm -rf`.

import { h } from "./dom.js";

const OUTCOMES = {
  approved: "✓ Allowed",
  denied: "✗ Denied",
  expired: "✗ Expired: nobody answered in time",
  cancelled: "✗ Cancelled: the run stopped",
};

export class Approval {
  /** `answer(approval, decision, remember)` sends tool.approve; resolves when answered. */
  constructor(approval, answer) {
    this.id = String(approval.approvalId ?? "");
    this.answer = answer;
    this.always = Array.isArray(approval.alwaysAllow) ? approval.alwaysAllow.map(String) : [];
    this.outcome = h("div", { class: "approval-outcome", role: "status" });
    this.buttons = h(
      "div", { class: "approval-buttons" },
      this.button("Allow", "approve-once", "primary", "allow", null),
      this.button("Allow for this session", "approve-session", "", "allow", "session"),
      this.always.length
        ? this.button(`Always allow ${this.always.join(", ")}`, "approve-always", "", "allow", "always")
        : null,
      this.button("Deny", "approve-deny", "danger", "deny", null),
    );
    this.el = h(
      "div",
      { class: "approval", testid: "approval", dataset: { approvalId: this.id }, role: "group", "aria-label": "Approval needed" },
      h("div", { class: "approval-title" }, "Approval needed: ", h("code", {}, String(approval.tool ?? "?"))),
      approval.summary ? h("pre", { class: "approval-summary" }, String(approval.summary)) : null,
      approval.reason ? h("div", { class: "approval-reason muted" }, `Why: ${approval.reason}`) : null,
      approval.leavesSandbox
        ? h("div", { class: "approval-sandbox", testid: "approval-sandbox" },
            "Approved, it runs outside the node's sandbox: with the network, and writing beyond the workspace.")
        : null,
      this.buttons,
      this.outcome,
    );
  }

  get pending() {
    return this.buttons.isConnected;
  }

  button(label, testid, variant, decision, remember) {
    return h("button", {
      type: "button", class: `button ${variant}`, testid,
      onclick: () => this.choose(decision, remember),
    }, label);
  }

  async choose(decision, remember) {
    for (const b of this.buttons.querySelectorAll("button")) b.disabled = true;
    try {
      await this.answer(this.id, decision, remember);
    } catch (err) {
      for (const b of this.buttons.querySelectorAll("button")) b.disabled = false;
      this.outcome.textContent = `Cannot answer: ${err.message}`;
      return;
    }
    const state = decision === "allow" ? "approved" : "denied";
    const notes = { session: " for this session", always: ` from now on: ${this.always.join(", ")}` };
    this.settle(state, notes[remember] ?? "");
  }

  /** The approval ended (approved, denied, expired, cancelled): say so, drop the buttons. */
  settle(state, note = "") {
    if (!this.pending) return;
    this.buttons.remove();
    this.el.dataset.state = state;
    this.outcome.textContent = (OUTCOMES[state] ?? state) + note;
  }
}
