// `/search QUERY`: what memory.search finds in past conversations and notes, shown in the
// chat as one notice with a line per hit (the session key, time and snippet, or a note's
// file and lines). Every part is text; a conversation's hit is a button that opens its
// session.

import { h } from "./dom.js";

const SNIPPET_CHARS = 160;

/** One hit as a line of text (the `**` around matched words dropped). */
export function hitLine(hit) {
  let snippet = String(hit.snippet ?? "").replaceAll("**", "").split(/\s+/).join(" ").trim();
  if (snippet.length > SNIPPET_CHARS) snippet = `${snippet.slice(0, SNIPPET_CHARS)}…`;
  if (hit.source === "note") {
    const lines = Array.isArray(hit.lines) && hit.lines.length === 2 ? `:${hit.lines[0]}-${hit.lines[1]}` : "";
    return `note ${hit.path ?? "?"}${lines}  ${snippet}`;
  }
  const when = String(hit.time ?? "").slice(0, 16).replace("T", " ");
  return `${hit.sessionKey ?? "?"} · ${when}${hit.archived ? " (archived)" : ""}  ${snippet}`;
}

/** The notice's content: a count and the hits; `open(hit)` opens a hit's session. */
export function searchResults(query, hits, open) {
  if (!hits.length) return `No hits for “${query}”.`;
  const items = hits.map((hit) => {
    const line = hitLine(hit);
    const item = hit.source === "note" || !hit.sessionKey
      ? h("span", { class: "search-hit", testid: "search-hit" }, line)
      : h("button", { type: "button", class: "search-hit", testid: "search-hit",
        dataset: { key: String(hit.sessionKey) }, onclick: () => open(hit) }, line);
    return h("li", {}, item);
  });
  const count = `${hits.length} hit${hits.length === 1 ? "" : "s"} for “${query}”:`;
  return h("div", { class: "search-results", testid: "search-results" }, h("div", {}, count), h("ul", {}, items));
}
