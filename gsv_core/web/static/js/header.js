// The top bar: the connection's state, the session shown (key and label) and the model
// the next message will use (session.get's effectiveModel, as the TUI's status bar).

const STATES = {
  connecting: "connecting…",
  connected: "connected",
  offline: "offline · reconnecting…",
  "signed-out": "signed out",
};

export class Header {
  constructor(doc = document) {
    this.status = doc.querySelector('[data-testid="connection-status"]');
    this.session = doc.querySelector('[data-testid="current-session"]');
    this.label = doc.getElementById("session-label");
    this.model = doc.querySelector('[data-testid="model-label"]');
  }

  showConnection(state) {
    this.status.dataset.state = state === "signed-out" ? "offline" : state;
    this.status.textContent = STATES[state] ?? state;
  }

  showSession(key, label) {
    this.session.textContent = key;
    this.session.title = key;
    this.label.textContent = label || "";
    this.label.hidden = !label;
  }

  /** `got`: a session.get result. */
  showModel(got) {
    const model = got.effectiveModel || {};
    const level = (got.settings || {}).thinkingLevel;
    const thinking = level && level !== "none" ? ` · think ${level}` : "";
    this.model.textContent = `${model.provider || "?"}/${model.id || "?"}${thinking}`;
  }
}
