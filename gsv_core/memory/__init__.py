"""Memory: full-text search over the agent's notes and every past conversation
(docs/memory.md). One SQLite FTS5 index in the gateway's database, ranked by BM25:
`query` (user text made safe), `notes` (which workspace files are notes, cut into
chunks), `index` (what writes it, in the writer thread), `search` (scopes, ranking,
reading around a hit) and `service` (the gateway's async face, the background build).
"""
