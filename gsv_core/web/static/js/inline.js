// Inline Markdown to DOM: emphasis, strong, strikethrough, code spans, links, autolinks,
// bare URLs, hard breaks, backslash escapes and the common entities. Links keep http:,
// https: and mailto: targets only, checked after URL parsing (the parsed form is what the
// href gets); any other link, and every image, stays visible as the text it was written
// as, inert. Each scan is linear, even on hostile text (thousands of `*` or `[`).

import { h } from "./dom.js";

const SAFE_PROTOCOLS = new Set(["http:", "https:", "mailto:"]);
const PUNCTUATION = /[!-/:-@[-`{-~]/;
export const MAX_DEPTH = 12; // nested quotes, lists and emphasis beyond this are shown as text
const ENTITIES = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", nbsp: "\u00a0", "#39": "'" };

/** The href for a link target, or null when it is not an absolute http(s)/mailto URL. */
export function safeHref(raw) {
  let url;
  try {
    url = new URL(String(raw).trim());
  } catch {
    return null; // relative, or not a URL at all
  }
  return SAFE_PROTOCOLS.has(url.protocol) ? url.href : null;
}

/** A fragment of inline Markdown; inside a link's text, links are not made again. */
export function inline(text, { links = true, depth = 0 } = {}) {
  const fragment = document.createDocumentFragment();
  let buffer = "";
  const flush = () => {
    if (buffer) fragment.append(decodeEntities(buffer));
    buffer = "";
  };
  const emit = (node, end) => {
    flush();
    fragment.append(node);
    return end;
  };
  // what one scan learnt, so hostile text (thousands of `*` or `[`) stays linear
  const scan = { links, depth, failed: new Map(), brackets: null };
  let i = 0;
  while (i < text.length) {
    const next = depth > MAX_DEPTH ? null : inlineAt(text, i, scan);
    if (next) {
      i = emit(next.node, next.end);
      continue;
    }
    buffer += text[i];
    i += 1;
  }
  flush();
  return fragment;
}

/** The inline element starting at `i`, as {node, end}, or null (a plain character). */
function inlineAt(text, i, scan) {
  const links = scan.links;
  const c = text[i];
  if (c === "\\") return escape(text, i);
  if (c === "\n") return lineBreak(text, i);
  if (c === "`") return codeSpan(text, i);
  if (c === "*" || c === "_" || c === "~") return emphasis(text, i, scan);
  if (c === "!" && text[i + 1] === "[") return link(text, i + 1, scan, true);
  if (c === "[") return link(text, i, scan, false);
  if (c === "<") return autolink(text, i, links);
  if (links && (c === "h" || c === "w") && !/\w/.test(text[i - 1] || "")) return bareUrl(text, i);
  return null;
}

function escape(text, i) {
  const next = text[i + 1];
  if (next === "\n") return { node: h("br"), end: i + 2 };
  if (next && PUNCTUATION.test(next)) return { node: document.createTextNode(next), end: i + 2 };
  return null;
}

function lineBreak(text, i) {
  // two trailing spaces make a hard break; a plain newline is a soft one (a space)
  const hard = text.slice(Math.max(0, i - 2), i) === "  ";
  return { node: hard ? h("br") : document.createTextNode("\n"), end: i + 1 };
}

function codeSpan(text, i) {
  const run = /^`+/.exec(text.slice(i))[0];
  const close = findRun(text, run, i + run.length);
  if (close < 0) return { node: document.createTextNode(run), end: i + run.length };
  let code = text.slice(i + run.length, close).replace(/\n/g, " ");
  if (/^ .* $/.test(code) && code.trim()) code = code.slice(1, -1);
  return { node: h("code", {}, code), end: close + run.length };
}

/** Where a backtick run of exactly `run`'s length starts at or after `from`, or -1. */
function findRun(text, run, from) {
  let k = text.indexOf(run, from);
  while (k >= 0) {
    const before = text[k - 1] === "`";
    const after = text[k + run.length] === "`";
    if (!before && !after) return k;
    k = text.indexOf(run, k + 1);
  }
  return -1;
}

function emphasis(text, i, scan) {
  const char = text[i];
  const double = text[i + 1] === char;
  if (char === "~" && !double) return null;
  for (const size of double ? [2, 1] : [1]) {
    const delimiter = char.repeat(size);
    if (/\s/.test(text[i + size] || " ")) continue; // not left-flanking
    if (char === "_" && /[\p{L}\p{N}]/u.test(text[i - 1] || "")) return null; // snake_case
    // no closer after an earlier opener means none after this one either
    if (i + size >= (scan.failed.get(delimiter) ?? Infinity)) continue;
    const close = findCloser(text, delimiter, i + size);
    if (close < 0) {
      scan.failed.set(delimiter, i + size);
      continue;
    }
    const tag = char === "~" ? "del" : size === 2 ? "strong" : "em";
    const inner = inline(text.slice(i + size, close), { links: scan.links, depth: scan.depth + 1 });
    const node = h(tag, {}, inner);
    return { node, end: close + size };
  }
  return null;
}

/** The closing delimiter of emphasis opened before `from`: right-flanking, not inside a
 * code span, and for a single `*` not half of a `**`. */
function findCloser(text, delimiter, from) {
  const char = delimiter[0];
  for (let k = from; k < text.length; k += 1) {
    if (text[k] === "\\") {
      k += 1;
    } else if (text[k] === "`") {
      const run = /^`+/.exec(text.slice(k))[0];
      const close = findRun(text, run, k + run.length);
      if (close >= 0) k = close + run.length - 1;
    } else if (text.startsWith(delimiter, k) && k > from && !/\s/.test(text[k - 1])) {
      const after = text[k + delimiter.length];
      if (delimiter.length === 1 && after === char) {
        k += 1; // `**` inside `*...*`: skip it whole
        continue;
      }
      if (char === "_" && /[\p{L}\p{N}]/u.test(after || "")) continue;
      return k;
    } else if (delimiter.length === 1 && text.startsWith(char + char, k)) {
      k += 1;
    }
  }
  return -1;
}

/** `[text](target "title")` (or an image, `![alt](src)`), from the `[` at `i`. */
function link(text, i, scan, image) {
  const links = scan.links;
  if (!links && !image) return null;
  scan.brackets ??= matchBrackets(text);
  const labelEnd = scan.brackets.get(i) ?? -1;
  if (labelEnd < 0 || text[labelEnd + 1] !== "(") return null;
  const target = linkTarget(text, labelEnd + 2);
  if (!target) return null;
  const start = image ? i - 1 : i;
  const source = text.slice(start, target.end);
  const label = text.slice(i + 1, labelEnd);
  const href = safeHref(target.url);
  if (!href || !links) return { node: document.createTextNode(source), end: target.end };
  const content = image ? `Image: ${label || target.url}` : inline(label, { links: false });
  return { node: anchor(href, content, target.title, image), end: target.end };
}

/** Each `[`'s matching `]` (by position), in one pass; escaped brackets do not count. */
function matchBrackets(text) {
  const pairs = new Map();
  const open = [];
  for (let k = 0; k < text.length; k += 1) {
    if (text[k] === "\\") k += 1;
    else if (text[k] === "[") open.push(k);
    else if (text[k] === "]" && open.length) pairs.set(open.pop(), k);
  }
  return pairs;
}

/** The `(url "title")` part after a link's label: {url, title, end} or null. */
function linkTarget(text, i) {
  const rest = text.slice(i);
  const angle = /^[ \t]*<([^<>\n]*)>/.exec(rest);
  let url;
  let k;
  if (angle) {
    url = angle[1];
    k = i + angle[0].length;
  } else {
    let depth = 0;
    k = i;
    while (k < text.length && /[ \t]/.test(text[k])) k += 1;
    const begin = k;
    for (; k < text.length && !/\s/.test(text[k]); k += 1) {
      if (text[k] === "\\") k += 1;
      else if (text[k] === "(") depth += 1;
      else if (text[k] === ")" && depth-- === 0) break;
    }
    url = text.slice(begin, k);
  }
  const tail = /^[ \t\n]*(?:"([^"]*)"|'([^']*)'|\(([^()]*)\))?[ \t\n]*\)/.exec(text.slice(k));
  if (!tail) return null;
  return { url, title: tail[1] ?? tail[2] ?? tail[3], end: k + tail[0].length };
}

function anchor(href, content, title, image) {
  return h(
    "a",
    { href, target: "_blank", rel: "noopener noreferrer", title: title || null, class: image ? "image-link" : null },
    content,
  );
}

function autolink(text, i, links) {
  const match = /^<([a-zA-Z][a-zA-Z0-9+.-]{1,31}:[^<>\s]*|[^<>\s@]+@[^<>\s@]+\.[a-zA-Z]{2,})>/.exec(
    text.slice(i),
  );
  if (!match) return null;
  const target = match[1].includes(":") ? match[1] : `mailto:${match[1]}`;
  const href = links ? safeHref(target) : null;
  const node = href ? anchor(href, match[1]) : document.createTextNode(match[0]);
  return { node, end: i + match[0].length };
}

function bareUrl(text, i) {
  const match = /^(?:https?:\/\/|www\.)[^\s<>]+/.exec(text.slice(i));
  if (!match) return null;
  let url = match[0].replace(/[.,;:!?'"*_~]+$/, "");
  // a closing parenthesis belongs to the URL only when it has an opening one
  while (url.endsWith(")") && count(url, "(") < count(url, ")")) url = url.slice(0, -1);
  const href = safeHref(url.startsWith("www.") ? `https://${url}` : url);
  if (!href) return null;
  return { node: anchor(href, url), end: i + url.length };
}

const count = (text, char) => text.split(char).length - 1;

function decodeEntities(text) {
  return text.replace(/&(#\d{1,7}|#[xX][\da-fA-F]{1,6}|[a-z]+|#39);/g, (whole, name) => {
    if (name in ENTITIES) return ENTITIES[name];
    if (name[0] !== "#") return whole;
    const code = name[1] === "x" || name[1] === "X" ? parseInt(name.slice(2), 16) : parseInt(name.slice(1), 10);
    return code > 0 && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff)
      ? String.fromCodePoint(code)
      : "\ufffd";
  });
}
