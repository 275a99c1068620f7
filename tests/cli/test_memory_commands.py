"""`gsv memory search|reindex|status` against a real gateway (thread) with a scripted model."""

from __future__ import annotations

import json

from typer.testing import CliRunner
from typer.testing import Result

from gsv_cli.main import app
from gsv_core.gateway.server import RunningGateway


def gsv(url: str, *args: str) -> Result:
    return CliRunner().invoke(app, ["--url", url, *args])


def test_search_shows_where_each_hit_came_from(live: RunningGateway) -> None:
    """A note hit names its file and lines, a message its session; --json is the answer."""
    put = CliRunner().invoke(app, ["--url", live.url, "workspace", "put", "memory/boat.md"],
                             input="Boat moored at pier 7\n")  # fmt: skip
    assert put.exit_code == 0, put.output
    assert gsv(live.url, "chat", "the boat needs new sails").exit_code == 0
    shown = gsv(live.url, "memory", "search", "boat")
    assert shown.exit_code == 0, shown.output
    assert "agent:main:main #0 user" in shown.stdout
    assert "**boat**" in shown.stdout
    assert "main/memory/boat.md:1-1" in shown.stdout
    data = json.loads(gsv(live.url, "memory", "search", "sails", "--json").stdout)
    assert data["count"] == 1 and data["results"][0]["sessionKey"] == "agent:main:main"
    assert gsv(live.url, "memory", "search", "zzzz").stdout == "no matches\n"


def test_bad_input_is_refused_with_a_message(live: RunningGateway) -> None:
    """A bad scope is a usage error (2); a query or time the gateway refuses exits 1."""
    assert gsv(live.url, "memory", "search", "x", "--scope", "mine").exit_code == 2
    bad_time = gsv(live.url, "memory", "search", "x", "--since", "someday")
    assert bad_time.exit_code == 1 and "since 'someday' is not a time" in bad_time.stderr
    no_words = gsv(live.url, "memory", "search", "--", "--- ???")
    assert no_words.exit_code == 1 and "no words" in no_words.stderr


def test_reindex_then_status(live: RunningGateway) -> None:
    """reindex says it rebuilds in the background; status shows the index's numbers."""
    done = gsv(live.url, "memory", "reindex")
    assert done.exit_code == 0 and "rebuilding" in done.stdout
    status = gsv(live.url, "memory", "status")
    assert status.exit_code == 0 and "messages" in status.stdout and "notes" in status.stdout
    assert "meaning   off (BM25 alone)" in status.stdout
    data = json.loads(gsv(live.url, "memory", "status", "--json").stdout)
    assert data["state"] in ("building", "ready")


def test_gsv_status_shows_the_memory_index(live: RunningGateway) -> None:
    """`gsv status` has a memory line: ready, or how far the build got."""
    from gsv_cli.commands.status import render

    shown = gsv(live.url, "status")
    assert "memory    index ready" in shown.stdout
    found = json.loads(gsv(live.url, "status", "--json").stdout)
    found["memory"] = {"state": "building", "done": 3, "total": 40}
    assert "memory    building the index: 3 of 40" in render(live.url, found)
