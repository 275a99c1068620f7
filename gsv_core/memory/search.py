"""Reading the memory index: ranked hits for a query within a scope, and the pieces
around one hit. Runs on a read connection (plain functions of `conn`).

A scope says what a caller may see (docs/memory.md#privacy): the owner everything; a
guest's or a group's session its own conversation only, never notes. A hit outside the
scope is never returned, and a ref outside it reads as "not found", as if it were not
there at all.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from typing import Literal

from gsv_core.errors import InvalidParams
from gsv_core.errors import NotFound
from gsv_core.memory import embeddings as em
from gsv_core.memory.index import NOTE
from gsv_core.memory.query import fts_match
from gsv_core.memory.query import iso
from gsv_core.memory.query import parse_time
from gsv_core.memory.query import query_terms

Kind = Literal["notes", "sessions", "all"]
KINDS: tuple[Kind, ...] = ("notes", "sessions", "all")
MAX_LIMIT = 50
MAX_AROUND = 20
AROUND_TEXT_CHARS = 4000  # of each piece read around a hit
_REF = re.compile(r"([mn]):(\d{1,18})")


@dataclass(frozen=True)
class MemoryScope:
    """What one caller may search: notes or not, and every session (None) or these."""

    notes: bool
    sessions: frozenset[str] | None

    @classmethod
    def everything(cls) -> MemoryScope:
        return cls(True, None)

    @classmethod
    def conversation(cls, *keys: str) -> MemoryScope:
        return cls(False, frozenset(keys))

    def describe(self) -> str:
        if self.sessions is None:
            return "notes and every session" if self.notes else "every session"
        if not self.sessions:
            return "nothing"
        return "this conversation only"

    def sees(self, kind: str, session_key: str | None) -> bool:
        if kind == NOTE:
            return self.notes
        return self.sessions is None or session_key in self.sessions


@dataclass(frozen=True)
class SearchRequest:
    terms: tuple[str, ...]  # from query.query_terms
    kind: Kind = "all"
    since: int | None = None  # epoch ms
    until: int | None = None
    limit: int = 10
    text: str = ""  # the words as asked (what a semantic ranking embeds)
    now: int | None = None  # epoch ms, for the recency boost of a semantic ranking


def search_request(
    query: str, kind: str, since: str | None, until: str | None, limit: int, now_ms: int
) -> SearchRequest:
    """A request from a caller's words (the tools and `memory.search`): each part checked,
    InvalidParams saying what is wrong."""
    if kind not in KINDS:
        raise InvalidParams(f"scope {kind!r} is not one of {', '.join(KINDS)}")
    if not 1 <= limit <= MAX_LIMIT:
        raise InvalidParams(f"limit must be from 1 to {MAX_LIMIT}")
    start, end = parse_time(since, now_ms, "since"), parse_time(until, now_ms, "until")
    if start is not None and end is not None and start > end:
        raise InvalidParams("since is after until: nothing can be found between them")
    return SearchRequest(query_terms(query), kind, start, end, limit, query.strip(), now_ms)


# a word in more than this share of the indexed pieces (and more than COMMON_MIN of them)
# is left out of a query that has rarer words: it ranks little and costs the most
COMMON_SHARE = 0.05
COMMON_MIN = 500
_SNIPPET = "snippet(memory_fts, 0, '**', '**', '…', 24)"
_SOURCE = "id, kind, agent_id, session_key, msg_idx, role, at, archive, path, line_start, line_end"


def search(
    conn: sqlite3.Connection, request: SearchRequest, scope: MemoryScope
) -> list[dict[str, Any]]:
    """The best hits first (BM25), each with where it came from. The ranking reads the
    index alone when nothing filters; snippets are cut for the hits kept only."""
    where, args = _filters(request, scope)
    if where is None:
        return []
    match = fts_match(_rarer(conn, request.terms))
    if where:
        sql = ("SELECT d.id, bm25(memory_fts) FROM memory_fts JOIN memory_docs d "
               f"ON d.id = memory_fts.rowid WHERE memory_fts MATCH ?{where} "
               "ORDER BY bm25(memory_fts) LIMIT ?")  # fmt: skip
    else:
        sql = "SELECT rowid, rank FROM memory_fts WHERE memory_fts MATCH ? ORDER BY rank LIMIT ?"
    ranked = conn.execute(sql, (match, *args, request.limit)).fetchall()
    if not ranked:
        return []
    marks = ", ".join("?" * len(ranked))
    ids = [doc_id for doc_id, _ in ranked]
    snippets = dict(conn.execute(
        f"SELECT rowid, {_SNIPPET} FROM memory_fts WHERE memory_fts MATCH ? AND rowid IN ({marks})",
        (match, *ids),
    ).fetchall())  # fmt: skip
    rows = {r[0]: r for r in conn.execute(
        f"SELECT {_SOURCE} FROM memory_docs WHERE id IN ({marks})", ids).fetchall()}  # fmt: skip
    return [_hit(rows[i], snippets.get(i, ""), score) for i, score in ranked if i in rows]


def search_fused(
    conn: sqlite3.Connection,
    request: SearchRequest,
    scope: MemoryScope,
    vector: Sequence[float],
    model: str,
) -> list[dict[str, Any]]:
    """Like search(), ranked by reciprocal-rank fusion of BM25 and the similarity of each
    piece's vector (by `model`) to the query's `vector`, recent pieces raised a little
    (gsv_core/memory/embeddings.py). A hit found by meaning alone has the start of its
    text as snippet."""
    where, args = _filters(request, scope)
    if where is None:
        return []
    match = fts_match(_rarer(conn, request.terms))
    bm25 = [i for (i,) in conn.execute(
        "SELECT d.id FROM memory_fts JOIN memory_docs d ON d.id = memory_fts.rowid "
        f"WHERE memory_fts MATCH ?{where} ORDER BY bm25(memory_fts) LIMIT ?",
        (match, *args, em.CANDIDATES)).fetchall()]  # fmt: skip
    rows = conn.execute(
        "SELECT v.doc_id, v.vec FROM memory_vectors v JOIN memory_docs d ON d.id = v.doc_id "
        f"WHERE v.model = ?{where} ORDER BY v.doc_id", (model, *args)).fetchall()  # fmt: skip
    near = em.nearest(rows, vector, em.CANDIDATES)
    if not bm25 and not near:
        return []
    marks = ", ".join("?" * len(set(bm25) | set(near)))
    found = {r[0]: r for r in conn.execute(
        f"SELECT {_SOURCE}, text FROM memory_docs WHERE id IN ({marks})",
        [*set(bm25) | set(near)]).fetchall()}  # fmt: skip
    at = {doc_id: row[6] for doc_id, row in found.items()}
    ranked = em.fuse(bm25, near, at, request.now or 0)[: request.limit]
    kept = [doc_id for doc_id, _ in ranked]
    snippets = dict(conn.execute(
        f"SELECT rowid, {_SNIPPET} FROM memory_fts WHERE memory_fts MATCH ? "
        f"AND rowid IN ({', '.join('?' * len(kept))})", (match, *kept)).fetchall())  # fmt: skip
    return [
        _hit(found[i][:11], snippets.get(i) or _opening(found[i][11]), -score)
        for i, score in ranked
        if i in found
    ]


def _opening(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= OPENING_CHARS else flat[:OPENING_CHARS] + "…"


OPENING_CHARS = 160


def _rarer(conn: sqlite3.Connection, terms: tuple[str, ...]) -> tuple[str, ...]:
    """The terms without the very common ones, unless that leaves none."""
    if len(terms) < 2:
        return terms
    (top,) = conn.execute("SELECT COALESCE(MAX(id), 0) FROM memory_docs").fetchone()
    limit = max(COMMON_MIN, int(top * COMMON_SHARE))
    count = "SELECT COUNT(*) FROM (SELECT rowid FROM memory_fts WHERE memory_fts MATCH ? LIMIT ?)"
    rare = tuple(
        t for t in terms if conn.execute(count, (fts_match((t,)), limit + 1)).fetchone()[0] <= limit
    )
    return rare or terms


def _filters(request: SearchRequest, scope: MemoryScope) -> tuple[str | None, list[Any]]:
    notes = scope.notes and request.kind != "sessions"
    sessions = request.kind != "notes" and (scope.sessions is None or bool(scope.sessions))
    if not notes and not sessions:
        return None, []
    clauses: list[str] = []
    args: list[Any] = []
    if not notes:
        clauses.append("d.kind = 'message'")
    elif not sessions:
        clauses.append("d.kind = 'note'")
    if sessions and scope.sessions is not None:
        marks = ", ".join("?" * len(scope.sessions))
        clauses.append(f"(d.kind = 'note' OR d.session_key IN ({marks}))")
        args.extend(sorted(scope.sessions))
    if request.since is not None:
        clauses.append("d.at >= ?")
        args.append(request.since)
    if request.until is not None:
        clauses.append("d.at <= ?")
        args.append(request.until)
    return "".join(f" AND {c}" for c in clauses), args


def _hit(row: tuple[Any, ...], snippet: str, score: float) -> dict[str, Any]:
    hit: dict[str, Any] = {"ref": _ref(row[0], row[1]), "score": round(-float(score), 4),
                           "snippet": snippet}  # fmt: skip
    return hit | _source(*row[1:])


def _source(
    kind: str, agent: str, key: str | None, idx: int | None, role: str | None, at: int | None,
    archive: str | None, path: str | None, start: int | None, end: int | None,
) -> dict[str, Any]:  # fmt: skip
    if kind == NOTE:
        return {"source": "note", "agentId": agent, "path": path, "lines": [start, end],
                "time": iso(at)}  # fmt: skip
    found = {"source": "session", "sessionKey": key, "messageIndex": idx, "role": role,
             "at": at, "time": iso(at), "archived": archive is not None}  # fmt: skip
    if archive is not None:
        found["archive"] = archive
    return found


def _ref(doc_id: int, kind: str) -> str:
    return f"{'n' if kind == NOTE else 'm'}:{doc_id}"


def parse_ref(ref: str) -> tuple[str, int]:
    """('m' or 'n', row id) of a ref a search returned."""
    found = _REF.fullmatch(ref.strip()) if isinstance(ref, str) else None
    if found is None:
        raise InvalidParams(
            f"ref {ref!r} is not a memory ref: pass the ref of a search hit, such as 'm:42'"
        )
    return found.group(1), int(found.group(2))


_DOC = (
    "SELECT id, kind, agent_id, session_key, msg_idx, role, at, archive, path, line_start, "
    "line_end, text FROM memory_docs"
)


def around(
    conn: sqlite3.Connection, ref: str, before: int, after: int, scope: MemoryScope
) -> dict[str, Any]:
    """The hit `ref` with up to `before` pieces before it and `after` after it from the
    same conversation (messages, in order, archived ones first) or the same note."""
    letter, doc_id = parse_ref(ref)
    row = conn.execute(f"{_DOC} WHERE id = ?", (doc_id,)).fetchone()
    if (
        row is None
        or _ref(row[0], row[1]) != f"{letter}:{doc_id}"
        or not scope.sees(row[1], row[3])
    ):
        raise NotFound(f"no memory {ref!r}: it may have been reindexed; search again")
    args: tuple[Any, ...]
    if row[1] == NOTE:
        same, args = "kind = 'note' AND agent_id = ? AND path = ?", (row[2], row[8])
    else:
        same, args = "kind = 'message' AND session_key = ?", (row[3],)
    earlier = conn.execute(
        f"{_DOC} WHERE {same} AND id < ? ORDER BY id DESC LIMIT ?", (*args, doc_id, before)
    ).fetchall()
    later = conn.execute(
        f"{_DOC} WHERE {same} AND id > ? ORDER BY id LIMIT ?", (*args, doc_id, after)
    ).fetchall()
    pieces = [_piece(r, r[0] == doc_id) for r in [*reversed(earlier), row, *later]]
    return {"ref": _ref(row[0], row[1]), **_source(*row[1:11]), "pieces": pieces}


def _piece(row: tuple[Any, ...], hit: bool) -> dict[str, Any]:
    text = row[11]
    if len(text) > AROUND_TEXT_CHARS:
        text = text[:AROUND_TEXT_CHARS] + "…"
    piece: dict[str, Any] = {"ref": _ref(row[0], row[1]), "text": text}
    if row[1] == NOTE:
        piece["lines"] = [row[9], row[10]]
    else:
        piece |= {"messageIndex": row[4], "role": row[5], "time": iso(row[6]),
                  "archived": row[7] is not None}  # fmt: skip
    if hit:
        piece["hit"] = True
    return piece
