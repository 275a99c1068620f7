"""`gsv sessions ...` against a real gateway (thread) with a scripted model."""

from __future__ import annotations

import json

from typer.testing import CliRunner, Result

from gsv_cli.main import app
from gsv_core.gateway.server import RunningGateway
from tests.fakes.provider import FakeProvider, call

MAIN = "agent:main:main"


def gsv(url: str, *args: str) -> Result:
    return CliRunner().invoke(app, ["--url", url, *args])


def chat(url: str, text: str) -> None:
    assert gsv(url, "chat", text).exit_code == 0


def test_list_get_stats_and_preview(live: RunningGateway, fake: FakeProvider) -> None:
    """The default key is the CLI session (filed under main); every view shows it."""
    fake.enqueue("Checking.", call("gsv__ConfigGet", {"path": "model.id"}))
    fake.enqueue("Done.")
    chat(live.url, "hello there")
    listed = gsv(live.url, "sessions", "list")
    assert listed.exit_code == 0 and MAIN in listed.stdout and "chat" in listed.stdout
    as_json = json.loads(gsv(live.url, "--json", "sessions", "list").stdout)
    assert as_json["count"] == 1 and as_json["sessions"][0]["messageCount"] == 4
    got = gsv(live.url, "sessions", "get")
    assert (
        got.exit_code == 0
        and f"session:   {MAIN} (chat)" in got.stdout
        and "messages:  4" in got.stdout
    )
    stats = gsv(live.url, "sessions", "stats")
    assert stats.stdout.startswith(f"{MAIN}: idle, 0 queued, 4 messages")
    preview = gsv(live.url, "sessions", "preview", "-l", "4")
    assert "── you" in preview.stdout and "hello there" in preview.stdout
    assert "→ gsv__ConfigGet" in preview.stdout and "gsv__ConfigGet result" in preview.stdout
    assert "Done." in preview.stdout


def test_set_changes_label_model_and_policy(live: RunningGateway) -> None:
    """`set KEY PATH VALUE` maps to session.patch; bad paths and values are usage errors."""
    assert gsv(live.url, "sessions", "set", "main", "label", "work").exit_code == 0
    assert gsv(live.url, "sessions", "set", "main", "model", "openai/gpt-5").exit_code == 0
    assert gsv(live.url, "sessions", "set", "main", "resetPolicy.idleMinutes", "45").exit_code == 0
    got = json.loads(gsv(live.url, "--json", "sessions", "get", "main").stdout)
    assert got["label"] == "work" and got["settings"]["model"] == {
        "provider": "openai",
        "id": "gpt-5",
    }
    assert got["resetPolicy"]["idleMinutes"] == 45
    assert gsv(live.url, "sessions", "set", "main", "colour", "blue").exit_code == 2
    assert gsv(live.url, "sessions", "set", "main", "model", "nonsense").exit_code == 2
    refused = gsv(live.url, "sessions", "set", "main", "thinkingLevel", "loud")
    assert refused.exit_code == 1 and "thinkingLevel" in refused.stderr


def test_reset_compact_and_history(live: RunningGateway, fake: FakeProvider) -> None:
    """reset archives and rotates the id; history lists the earlier id; compact keeps N."""
    for text in ("one", "two", "three"):
        chat(live.url, text)
    compacted = gsv(live.url, "sessions", "compact", "-k", "2")
    assert compacted.exit_code == 0 and compacted.stdout == "kept 2 messages, archived 4\n"
    reset = gsv(live.url, "sessions", "reset")
    assert reset.exit_code == 0 and "archived 2 messages to agents/main/sessions/" in reset.stdout
    history = gsv(live.url, "sessions", "history").stdout.splitlines()
    assert history[0].startswith("current:") and history[1].startswith("earlier:")


def test_the_alias_and_bad_keys(live: RunningGateway) -> None:
    """`gsv session` works too; a malformed key exits 1 with the reason on stderr."""
    assert gsv(live.url, "session", "list").exit_code == 0
    bad = gsv(live.url, "sessions", "get", "has space")
    assert bad.exit_code == 1 and "whitespace" in bad.stderr
