// DOM helpers. Every piece of text enters the page as a text node (textContent), never
// as HTML: model, tool and user text can hold anything.

/** An element: `h("button", {class: "x", testid: "send", onclick: fn}, "Send")`. */
export function h(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "testid") node.dataset.testid = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on") && typeof value === "function") {
      node.addEventListener(key.slice(2), value);
    } else node.setAttribute(key, value === true ? "" : String(value));
  }
  append(node, children);
  return node;
}

/** Append children: nodes as they are, strings as text nodes, arrays flattened. */
export function append(parent, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    parent.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return parent;
}

/** An SVG element (the usage chart). */
export function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "testid") node.dataset.testid = value;
    else node.setAttribute(key, String(value));
  }
  append(node, children);
  return node;
}

/** A random id: crypto.randomUUID exists only in secure contexts (not plain http on a LAN). */
export function randomId() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** "12 s ago", "in 3 min", from epoch ms. */
export function relativeTime(ms, now = Date.now()) {
  if (typeof ms !== "number" || !Number.isFinite(ms)) return "—";
  const delta = ms - now;
  const abs = Math.abs(delta);
  const units = [["d", 86400000], ["h", 3600000], ["min", 60000], ["s", 1000]];
  for (const [unit, size] of units) {
    if (abs >= size || unit === "s") {
      const n = Math.max(1, Math.round(abs / size));
      return delta < 0 ? `${n} ${unit} ago` : `in ${n} ${unit}`;
    }
  }
  return "";
}

/** A local date and time for a title attribute. */
export function fullTime(ms) {
  return typeof ms === "number" ? new Date(ms).toLocaleString() : "";
}

export function formatSize(bytes) {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

export function formatUsd(value) {
  if (typeof value !== "number") return "—";
  return value < 0.01 && value > 0 ? `$${value.toFixed(4)}` : `$${value.toFixed(2)}`;
}
