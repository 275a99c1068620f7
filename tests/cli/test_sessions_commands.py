"""`gsv sessions ...` against a real gateway (thread) with a scripted model."""

from __future__ import annotations

import json

from typer.testing import CliRunner
from typer.testing import Result

from gsv_cli.main import app
from gsv_core.gateway.server import RunningGateway
from tests.fakes.provider import FakeProvider
from tests.fakes.provider import call

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


def test_a_key_may_be_cut_to_its_unique_start(live: RunningGateway) -> None:
    """`get project-a` finds project-alpha; `set` and `preview` resolve the same way."""
    for key in ("project-alpha", "project-beta"):
        assert gsv(live.url, "chat", "-s", key, "hi").exit_code == 0
    got = gsv(live.url, "sessions", "get", "project-a")
    assert got.exit_code == 0 and "session:   project-alpha (chat)" in got.stdout
    labelled = gsv(live.url, "sessions", "set", "project-b", "label", "beta")
    assert labelled.exit_code == 0 and labelled.stdout == "set label on project-beta\n"
    assert (
        json.loads(gsv(live.url, "--json", "sessions", "get", "project-beta").stdout)["label"]
        == "beta"
    )
    preview = gsv(live.url, "sessions", "preview", "project-al")
    assert preview.stdout.startswith("project-alpha: last 2 of 2 messages")


def test_an_exact_key_or_the_gateways_spelling_of_it_is_taken_as_it_is(
    live: RunningGateway,
) -> None:
    """A key that is also the start of a longer one names itself; `agent:main:MAIN` is
    the gateway's agent:main:main."""
    for key in ("notes", "notes-old"):
        assert gsv(live.url, "chat", "-s", key, "hi").exit_code == 0
    exact = gsv(live.url, "sessions", "get", "notes")
    assert exact.exit_code == 0 and "session:   notes (chat)" in exact.stdout
    chat(live.url, "to main")
    spelled = gsv(live.url, "sessions", "stats", "agent:main:MAIN")
    assert spelled.exit_code == 0 and spelled.stdout.startswith(f"{MAIN}: idle")


def test_an_ambiguous_start_exits_1_naming_the_candidates_and_changes_nothing(
    live: RunningGateway,
) -> None:
    """`reset proj` with two project sessions resets neither."""
    for key in ("project-alpha", "project-beta"):
        assert gsv(live.url, "chat", "-s", key, "hi").exit_code == 0
    refused = gsv(live.url, "sessions", "reset", "proj")
    assert refused.exit_code == 1 and refused.stdout == ""
    assert "'proj' is the start of 2 session keys: project-alpha, project-beta" in refused.stderr
    assert "Give more characters." in refused.stderr
    listed = json.loads(gsv(live.url, "--json", "sessions", "list").stdout)["sessions"]
    assert {s["sessionKey"]: s["messageCount"] for s in listed} == {
        "project-alpha": 2,
        "project-beta": 2,
    }


def test_an_unknown_key_exits_1_except_for_set(live: RunningGateway) -> None:
    """Reading or changing a session that is not there is an error; `set` may configure
    a session before its first message."""
    assert gsv(live.url, "chat", "-s", "project-alpha", "hi").exit_code == 0
    for command in ("get", "stats", "reset", "compact", "history", "preview"):
        missing = gsv(live.url, "sessions", command, "nothing")
        assert missing.exit_code == 1, command
        assert "no session with a key starting 'nothing'" in missing.stderr
        assert "gsv sessions list" in missing.stderr
    created = gsv(live.url, "sessions", "set", "later", "label", "soon")
    assert created.exit_code == 0 and created.stdout == "set label on later\n"
