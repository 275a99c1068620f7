"""Smart reads over a file's text: line ranges, search with context, JSON paths, and the
400s for queries that cannot work."""

from __future__ import annotations

import json

import pytest

from gsv_core.errors import InvalidParams
from gsv_core.workspace.excerpts import MAX_SEARCH_MATCHES
from gsv_core.workspace.excerpts import ReadQuery
from gsv_core.workspace.excerpts import excerpt
from gsv_core.workspace.excerpts import parse_json_path

TEXT = "alpha\nBeta\ngamma\nbeta again\ndelta\n"


def test_line_ranges_clamp_to_the_end_of_the_file() -> None:
    """endLine past the end returns what there is; startLine alone reads to the end."""
    part = excerpt(TEXT, ReadQuery(start_line=4, end_line=99), "f.md")
    assert part == {"content": "beta again\ndelta", "startLine": 4, "endLine": 5, "totalLines": 5}
    assert excerpt(TEXT, ReadQuery(end_line=2), "f.md")["content"] == "alpha\nBeta"


def test_a_start_past_the_end_is_a_clear_400() -> None:
    """The message says how long the file is."""
    with pytest.raises(InvalidParams, match=r"startLine 9 is past the end of f\.md \(5 lines\)"):
        excerpt(TEXT, ReadQuery(start_line=9), "f.md")


def test_search_is_case_insensitive_and_numbers_lines() -> None:
    """Matches are `n:line`, context `n-line`; without context groups join with `--`."""
    part = excerpt(TEXT, ReadQuery(search="BETA", context_lines=0), "f.md")
    assert part == {"content": "2:Beta\n--\n4:beta again", "matches": 2, "totalLines": 5}
    near = excerpt(TEXT, ReadQuery(search="gamma", context_lines=5), "f.md")
    assert near["content"] == "1-alpha\n2-Beta\n3:gamma\n4-beta again\n5-delta"


def test_search_within_a_line_range_and_without_hits() -> None:
    """A range limits the search (context too); no hit is an empty result, not an error."""
    part = excerpt(TEXT, ReadQuery(start_line=3, end_line=5, search="beta"), "f.md")
    assert part["content"] == "3-gamma\n4:beta again\n5-delta" and part["matches"] == 1
    assert excerpt(TEXT, ReadQuery(search="omega"), "f.md")["matches"] == 0


def test_search_stops_at_the_match_cap() -> None:
    """More hits than the cap are cut and flagged."""
    text = "hit\n" * (MAX_SEARCH_MATCHES + 5)
    part = excerpt(text, ReadQuery(search="hit", context_lines=0), "f.md")
    assert part["matches"] == MAX_SEARCH_MATCHES and part["truncated"] is True


@pytest.mark.parametrize(
    ("expr", "steps"),
    [
        ("", []),
        ("$", []),
        ("a", ["a"]),
        ("$.a.b", ["a", "b"]),
        ("data.items[0].name", ["data", "items", 0, "name"]),
        ("list[-1]", ["list", -1]),
        ('a["key with.dots"]', ["a", "key with.dots"]),
        ("a['k'][2]", ["a", "k", 2]),
        ("[0].x", [0, "x"]),
    ],
)
def test_json_paths_parse(expr: str, steps: list[str | int]) -> None:
    """Dot and bracket notation, with an optional leading $."""
    assert parse_json_path(expr) == steps


@pytest.mark.parametrize("expr", ["a..b", "a.", "a[x]", "a[0]b", "a.[0]", "a[", "]"])
def test_bad_json_paths_are_400(expr: str) -> None:
    """Malformed paths say where they went wrong."""
    with pytest.raises(InvalidParams, match="invalid jsonPath"):
        parse_json_path(expr)


def test_json_path_values_and_misses() -> None:
    """The value comes back as JSON; digits after a dot index lists; misses name the spot."""
    doc = json.dumps({"a": {"items": [{"n": 1}, {"n": 2}]}, "s": "text"})
    assert excerpt(doc, ReadQuery(json_path="a.items.1.n"), "d.json")["content"] == "2"
    whole = excerpt(doc, ReadQuery(json_path="$"), "d.json")["content"]
    assert json.loads(whole) == json.loads(doc)
    with pytest.raises(InvalidParams, match=r"no key 'b' at \$\.a"):
        excerpt(doc, ReadQuery(json_path="a.b"), "d.json")
    with pytest.raises(InvalidParams, match=r"index 5 is out of range at \$\.a\.items"):
        excerpt(doc, ReadQuery(json_path="a.items[5]"), "d.json")
    with pytest.raises(InvalidParams, match=r"\$\.s is a str, not a container"):
        excerpt(doc, ReadQuery(json_path="s.x"), "d.json")
    with pytest.raises(InvalidParams, match=r"notes\.md is not valid JSON"):
        excerpt("# not json", ReadQuery(json_path="a"), "notes.md")


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (ReadQuery(json_path="a", search="x"), "cannot be combined"),
        (ReadQuery(start_line=5, end_line=2), "endLine 2 is before startLine 5"),
        (ReadQuery(start_line=0), "startLine must be 1 or more"),
        (ReadQuery(search=""), "search must not be empty"),
        (ReadQuery(search="x", context_lines=500), "contextLines must be between"),
    ],
)
def test_impossible_queries_are_400(query: ReadQuery, message: str) -> None:
    """Each contradiction is named."""
    with pytest.raises(InvalidParams, match=message):
        query.check()
