// The WebSocket client: one connection to the gateway's /ws, the `connect` handshake
// (no token: the HttpOnly cookie set by /auth authenticates the upgrade), requests
// answered by id with timeouts, events dispatched, and reconnecting with backoff after
// the gateway goes away. It knows nothing about chat: see conversation.js.
//
// Listeners: gateway.addEventListener("state", e => e.detail.state)
//            gateway.addEventListener("event", e => e.detail = {event, payload, seq})

import { randomId } from "./dom.js";

const PROTOCOL = 1;
const CALL_TIMEOUT_MS = 30000;
const BACKOFF_MS = [500, 1000, 2000, 4000, 8000, 10000];
const SIGNED_OUT_RETRY_MS = 15000;
// A socket can go silent without closing (a phone changing networks, a laptop waking):
// after this long without a frame the page asks the gateway something small, and a socket
// that does not answer within PROBE_TIMEOUT_MS is taken for lost.
const QUIET_MS = 15000;
const PROBE_TIMEOUT_MS = 5000;
const PROBE_METHOD = "heartbeat.status";
// The gateway answers /health but its socket never opens: it refuses this page's origin
// (reached under a host name it does not know). Said after this many refusals in a row.
const REFUSALS_BEFORE_ORIGIN_CHECK = 3;

export class GatewayError extends Error {
  constructor(code, message, details) {
    super(message);
    this.code = code;
    this.details = details;
  }
}

/** This tab's client id: one per tab, kept across reloads of the tab; `fresh` makes a
 * new one (a duplicated tab starts with a copy of its original's sessionStorage). */
function tabClientId(fresh = false) {
  let id = fresh ? null : sessionStorage.getItem("gsv.clientId");
  if (!id) {
    id = `web-${randomId().slice(0, 12)}`;
    sessionStorage.setItem("gsv.clientId", id);
  }
  return id;
}

export class Gateway extends EventTarget {
  constructor({ url = defaultUrl(), version = "web" } = {}) {
    super();
    this.url = url;
    this.version = version;
    this.clientId = tabClientId();
    this.state = "connecting"; // connecting | connected | offline | signed-out
    this.hello = null;
    this.signedOut = false; // the last connect was refused (401): show how to sign in
    this.ws = null;
    this.nextId = 1;
    this.pending = new Map(); // id -> {resolve, reject, timer}
    this.attempt = 0;
    this.retryTimer = null;
    this.lastHeard = 0; // when the socket last brought a frame (performance.now())
    this.probeTimer = null;
    this.refusals = 0; // sockets in a row that closed before they opened
    this.originRefused = false; // /health answers, the socket never opens: see banner
  }

  get connected() {
    return this.state === "connected";
  }

  start() {
    window.addEventListener("online", () => this.retryNow());
    // the browser knows the network is gone before the socket does
    window.addEventListener("offline", () => this.lost());
    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState === "visible" && !this.ws) this.retryNow();
    });
    this.open();
  }

  /** Try at once (the network came back, the tab was shown, a sign-in happened). */
  retryNow() {
    if (this.ws) return;
    clearTimeout(this.retryTimer);
    this.open();
  }

  open() {
    this.retryTimer = null;
    this.setState(this.state === "signed-out" ? "signed-out" : "connecting");
    const ws = new WebSocket(this.url);
    this.ws = ws;
    ws.addEventListener("open", () => {
      ws.gsvOpened = true;
      this.refusals = 0;
      this.originRefused = false;
      this.handshake(ws);
    });
    ws.addEventListener("message", (e) => this.receive(e.data));
    ws.addEventListener("close", (e) => this.closed(ws, e));
  }

  async handshake(ws) {
    const params = {
      minProtocol: PROTOCOL,
      maxProtocol: PROTOCOL,
      client: { id: this.clientId, version: this.version, platform: "web", mode: "client" },
    };
    try {
      this.hello = await this.request("connect", params, CALL_TIMEOUT_MS, ws);
    } catch (err) {
      if (ws !== this.ws) return;
      if (err.code === 401 || err.code === 403) this.signedOut = true;
      ws.close();
      return;
    }
    if (ws !== this.ws) return;
    this.attempt = 0;
    this.signedOut = false;
    this.setState("connected");
    this.watch(ws);
  }

  /** While `ws` is the connection, probe it whenever it has been quiet for QUIET_MS. */
  watch(ws) {
    clearInterval(this.probeTimer);
    this.probeTimer = setInterval(async () => {
      if (ws !== this.ws) return void clearInterval(this.probeTimer);
      if (performance.now() - this.lastHeard < QUIET_MS) return;
      try {
        await this.request(PROBE_METHOD, {}, PROBE_TIMEOUT_MS, ws);
      } catch (err) {
        if (err.code === 504 && ws === this.ws) this.lost();
      }
    }, QUIET_MS / 3);
  }

  /** The connection is gone though no close came: treat it as closed now, and close
   * the socket for good measure (its own close event, whenever it comes, is ignored). */
  lost() {
    const ws = this.ws;
    if (!ws) return;
    this.closed(ws, { code: 1006, reason: "" });
    ws.close();
  }

  // Signed out is known only from the answer to `connect` (401): the upgrade itself is
  // admitted without a cookie, and a socket that never opened says nothing (the gateway
  // may be down, or the network: guessing from a health check mistook one for the other).
  closed(ws, event) {
    if (ws !== this.ws) return;
    this.ws = null;
    clearInterval(this.probeTimer);
    // another tab connected with this tab's id (a duplicated tab): take an id of our own,
    // or the two would replace each other for ever
    if (event.code === 1000 && event.reason.startsWith("Replaced")) this.clientId = tabClientId(true);
    this.failPending(new GatewayError(503, "The connection to the gateway closed"));
    if (!ws.gsvOpened) this.refused();
    this.setState(this.signedOut ? "signed-out" : "offline");
    const delay = this.signedOut
      ? SIGNED_OUT_RETRY_MS
      : BACKOFF_MS[Math.min(this.attempt, BACKOFF_MS.length - 1)];
    this.attempt += 1;
    // jitter, so many tabs do not all knock at once after a restart
    this.retryTimer = setTimeout(() => this.open(), delay * (0.8 + Math.random() * 0.4));
  }

  /** A socket that never opened: after a few, ask /health (a plain same-origin GET, which
   * no Origin rule stops) whether the gateway is up; if it is, it refuses this origin. */
  async refused() {
    this.refusals += 1;
    if (this.refusals < REFUSALS_BEFORE_ORIGIN_CHECK || this.originRefused) return;
    try {
      const health = await fetch("/health", { cache: "no-store" });
      this.originRefused = health.ok && !this.ws && this.state !== "connected";
    } catch {
      this.originRefused = false; // the gateway is down: plain offline
    }
    if (this.originRefused) this.dispatchEvent(new CustomEvent("state", { detail: { state: this.state } }));
  }

  setState(state) {
    if (state === this.state) return;
    this.state = state;
    this.dispatchEvent(new CustomEvent("state", { detail: { state } }));
  }

  /** Call a method; rejects with GatewayError (code, message) or on timeout (504). */
  call(method, params, { timeout = CALL_TIMEOUT_MS } = {}) {
    if (!this.connected) {
      return Promise.reject(new GatewayError(503, "Not connected to the gateway"));
    }
    return this.request(method, params, timeout, this.ws);
  }

  request(method, params, timeout, ws) {
    const id = this.nextId++;
    const frame = { type: "req", id, method };
    if (params !== undefined) frame.params = params;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new GatewayError(504, `${method} timed out`));
      }, timeout);
      this.pending.set(id, { resolve, reject, timer });
      try {
        ws.send(JSON.stringify(frame));
      } catch (err) {
        clearTimeout(timer);
        this.pending.delete(id);
        reject(new GatewayError(503, `Cannot send: ${err.message}`));
      }
    });
  }

  receive(data) {
    this.lastHeard = performance.now();
    if (typeof data !== "string") return; // binary frames are for transfers between nodes
    let frame;
    try {
      frame = JSON.parse(data);
    } catch {
      console.warn("gsv: a frame that is not JSON was dropped");
      return;
    }
    if (frame.type === "res") this.settle(frame);
    else if (frame.type === "evt") {
      const detail = { event: frame.event, payload: frame.payload ?? {}, seq: frame.seq };
      this.dispatchEvent(new CustomEvent("event", { detail }));
    }
  }

  settle(frame) {
    const waiting = this.pending.get(frame.id);
    if (!waiting) return; // timed out already
    this.pending.delete(frame.id);
    clearTimeout(waiting.timer);
    if (frame.ok) waiting.resolve(frame.payload ?? {});
    else {
      const error = frame.error || {};
      waiting.reject(new GatewayError(error.code ?? 500, error.message ?? "error", error.details));
    }
  }

  failPending(error) {
    for (const { reject, timer } of this.pending.values()) {
      clearTimeout(timer);
      reject(error);
    }
    this.pending.clear();
  }
}

function defaultUrl() {
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  return `${scheme}//${location.host}/ws`;
}
