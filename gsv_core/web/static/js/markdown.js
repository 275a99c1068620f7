// Markdown to DOM, written for text we do not trust (the model's, a tool's). Nothing is
// ever parsed as HTML: the renderer creates elements and text nodes itself, so a
// `<script>` in a reply is just the characters `<script>`. This module reads the blocks:
// ATX headings, paragraphs, fenced code (highlighted, with a copy button), lists (nested,
// ordered or not, task boxes as text), blockquotes, rules and pipe tables; inline.js reads
// what is inside them (emphasis, code spans, links: http, https and mailto only).

import { h } from "./dom.js";
import { highlight, languageOf } from "./highlight.js";
import { MAX_DEPTH, inline } from "./inline.js";


const FENCE = /^( {0,3})(`{3,}|~{3,})[ \t]*([^`]*)$/;
const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const RULE = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
const QUOTE = /^ {0,3}> ?/;
const LIST_ITEM = /^( {0,3})([-*+]|\d{1,9}[.)])([ \t]+|$)/;
const TABLE_DELIMITER = /^ *\|? *:?-+:? *(?:\| *:?-+:? *)*\|? *$/;

/** A DocumentFragment showing `text` as Markdown (as plain text, should parsing fail). */
export function renderMarkdown(text) {
  const source = String(text ?? "");
  const fragment = document.createDocumentFragment();
  try {
    renderBlocks(source.replace(/\r\n?/g, "\n").split("\n"), fragment, 0);
  } catch (err) {
    console.error("gsv: Markdown shown as text:", err);
    fragment.replaceChildren(h("p", { class: "plain" }, source));
  }
  return fragment;
}

const isBlank = (line) => /^[ \t]*$/.test(line);

function renderBlocks(lines, out, depth) {
  if (depth > MAX_DEPTH) {
    out.append(h("p", { class: "plain" }, lines.join("\n")));
    return;
  }
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (isBlank(line)) i += 1;
    else if (FENCE.test(line)) i = fencedCode(lines, i, out);
    else if (HEADING.test(line)) i = heading(lines, i, out);
    else if (RULE.test(line)) {
      out.append(h("hr"));
      i += 1;
    } else if (QUOTE.test(line)) i = blockquote(lines, i, out, depth);
    else if (LIST_ITEM.test(line)) i = list(lines, i, out, depth);
    else if (isTableStart(lines, i)) i = table(lines, i, out);
    else i = paragraph(lines, i, out);
  }
}

/** A line that ends a paragraph because another block starts on it. */
function startsBlock(lines, i) {
  const line = lines[i];
  return (
    FENCE.test(line) || HEADING.test(line) || RULE.test(line) || QUOTE.test(line) ||
    LIST_ITEM.test(line) || isTableStart(lines, i)
  );
}

function heading(lines, i, out) {
  const match = HEADING.exec(lines[i]);
  out.append(h(`h${match[1].length}`, {}, inline(match[2] || "")));
  return i + 1;
}

function fencedCode(lines, i, out) {
  const [, indent, fence, info] = FENCE.exec(lines[i]);
  const closing = new RegExp(`^ {0,3}${fence[0] === "`" ? "`" : "~"}{${fence.length},}[ \\t]*$`);
  const body = [];
  let j = i + 1;
  for (; j < lines.length && !closing.test(lines[j]); j += 1) {
    body.push(lines[j].startsWith(indent) ? lines[j].slice(indent.length) : lines[j].trimStart());
  }
  out.append(codeBlock(body.join("\n"), info.trim()));
  return j + 1; // an unclosed fence (still streaming) runs to the end
}

function codeBlock(code, info) {
  const language = languageOf(info);
  const label = info.split(/\s+/)[0] || "text";
  const copy = h("button", { type: "button", class: "copy", "aria-label": "Copy code" }, "Copy");
  copy.addEventListener("click", () => copyText(code, copy));
  const codeEl = h("code", { class: language ? `lang-${language}` : null });
  codeEl.append(highlight(code, language));
  return h(
    "div", { class: "code-block" },
    h("div", { class: "code-head" }, h("span", { class: "code-lang" }, label), copy),
    h("pre", {}, codeEl),
  );
}

async function copyText(text, button) {
  try {
    await navigator.clipboard.writeText(text); // only in secure contexts
  } catch {
    const area = h("textarea", { class: "sr-only", readonly: true });
    area.value = text;
    document.body.append(area);
    area.select();
    document.execCommand("copy");
    area.remove();
  }
  button.textContent = "Copied";
  setTimeout(() => (button.textContent = "Copy"), 1500);
}

function blockquote(lines, i, out, depth) {
  const inner = [];
  let j = i;
  for (; j < lines.length && QUOTE.test(lines[j]); j += 1) inner.push(lines[j].replace(QUOTE, ""));
  const quote = h("blockquote");
  renderBlocks(inner, quote, depth + 1);
  out.append(quote);
  return j;
}

function list(lines, i, out, depth) {
  const first = LIST_ITEM.exec(lines[i]);
  const ordered = /\d/.test(first[2]);
  const marker = first[2].slice(-1); // "-", "*", "+", "." or ")": a change starts a new list
  const start = ordered ? parseInt(first[2], 10) : 1;
  const listEl = h(ordered ? "ol" : "ul", { start: ordered && start !== 1 ? start : null });
  const items = [];
  let loose = false;
  let j = i;
  while (j < lines.length) {
    const match = LIST_ITEM.exec(lines[j]);
    if (!match || match[2].slice(-1) !== marker) break;
    const item = listItem(lines, j, match);
    items.push(item.lines);
    if (item.lines.some(isBlank)) loose = true; // paragraphs apart inside an item
    j = item.end;
    if (item.blankAfter && j < lines.length && sameList(lines[j], marker)) loose = true;
    if (item.blankAfter && !sameList(lines[j] ?? "", marker)) break;
  }
  for (const itemLines of items) listEl.append(renderItem(itemLines, loose, depth));
  out.append(listEl);
  return j;
}

function sameList(line, marker) {
  const match = LIST_ITEM.exec(line);
  return Boolean(match) && match[2].slice(-1) === marker;
}

/** One item's lines (its content, unindented), where it ends, and whether blanks follow. */
function listItem(lines, i, match) {
  const gap = match[3].length;
  const width = match[1].length + match[2].length + (gap === 0 || gap > 4 ? 1 : gap);
  const own = [lines[i].slice(Math.min(width, lines[i].length))];
  let j = i + 1;
  let blanks = 0;
  for (; j < lines.length; j += 1) {
    const line = lines[j];
    if (isBlank(line)) {
      blanks += 1;
      continue;
    }
    const indent = line.length - line.trimStart().length;
    if (indent >= width) {
      for (; blanks > 0; blanks -= 1) own.push("");
      own.push(line.slice(width));
      continue;
    }
    if (blanks > 0 || LIST_ITEM.test(line) || startsBlock(lines, j)) break;
    own.push(line.trim()); // a lazy continuation of the item's paragraph
  }
  return { lines: own, end: j, blankAfter: blanks > 0 };
}

function renderItem(itemLines, loose, depth) {
  const li = h("li");
  const task = /^\[([ xX])\][ \t]+/.exec(itemLines[0]);
  if (task) {
    li.className = "task";
    li.append(h("span", { class: "task-box", "aria-hidden": "true" }, task[1] === " " ? "☐ " : "☑ "));
    itemLines = [itemLines[0].slice(task[0].length), ...itemLines.slice(1)];
  }
  renderBlocks(itemLines, li, depth + 1);
  if (!loose) {
    for (const p of Array.from(li.children)) if (p.tagName === "P") p.replaceWith(...p.childNodes);
  }
  return li;
}

function isTableStart(lines, i) {
  const next = lines[i + 1];
  return (
    next !== undefined && lines[i].includes("|") && next.includes("|") && next.includes("-") &&
    TABLE_DELIMITER.test(next)
  );
}

function table(lines, i, out) {
  const header = splitRow(lines[i]);
  const aligns = splitRow(lines[i + 1]).map((cell) =>
    cell.startsWith(":") && cell.endsWith(":") ? "center" : cell.endsWith(":") ? "right" : null,
  );
  const cell = (tag, text, n) => {
    const el = h(tag, {}, inline(text));
    if (aligns[n]) el.style.textAlign = aligns[n];
    return el;
  };
  const head = h("tr", {}, header.map((text, n) => cell("th", text, n)));
  const body = h("tbody");
  let j = i + 2;
  for (; j < lines.length && !isBlank(lines[j]) && lines[j].includes("|"); j += 1) {
    const cells = splitRow(lines[j]);
    body.append(h("tr", {}, header.map((_, n) => cell("td", cells[n] ?? "", n))));
  }
  out.append(h("div", { class: "table-wrap" }, h("table", {}, h("thead", {}, head), body)));
  return j;
}

function splitRow(line) {
  const cells = [];
  let current = "";
  const text = line.trim().replace(/^\|/, "").replace(/(?<!\\)\|$/, "");
  for (let k = 0; k < text.length; k += 1) {
    if (text[k] === "\\" && text[k + 1] === "|") {
      current += "|";
      k += 1;
    } else if (text[k] === "|") {
      cells.push(current.trim());
      current = "";
    } else current += text[k];
  }
  cells.push(current.trim());
  return cells;
}

function paragraph(lines, i, out) {
  const own = [lines[i]];
  let j = i + 1;
  for (; j < lines.length && !isBlank(lines[j]) && !startsBlock(lines, j); j += 1) own.push(lines[j]);
  out.append(h("p", {}, inline(own.map((line) => line.trimStart()).join("\n").trimEnd())));
  return j;
}
