"""`gsv cron ...` against a real gateway (thread): the scripting contract (stdout is
exactly the id, exit codes 0/1/2), tables and --json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner
from typer.testing import Result

from gsv_cli.main import app
from gsv_core.gateway.server import RunningGateway
from tests.fakes.provider import Fail
from tests.fakes.provider import FakeProvider


def gsv(url: str, *args: str, stdin: str | None = None) -> Result:
    # wide enough for a table row with a whole job id and both next-run columns
    return CliRunner().invoke(app, ["--url", url, *args], input=stdin, env={"COLUMNS": "200"})


def jobs(url: str) -> list[dict[str, object]]:
    listed = gsv(url, "cron", "list", "--all", "--json")
    assert listed.exit_code == 0, listed.stderr
    return json.loads(listed.stdout)["jobs"]  # type: ignore[no-any-return]


def test_add_prints_exactly_the_new_id(live: RunningGateway) -> None:
    """stdout is the id and a newline, nothing else; exit 0; the job exists."""
    added = gsv(live.url, "cron", "add", "--name", "digest", "--every", "30m",
                "--message", "write the digest", "--model", "openai/gpt-5", "--thinking", "low")  # fmt: skip
    assert added.exit_code == 0, added.stderr
    job_id = added.stdout.strip()
    assert added.stdout == f"{job_id}\n" and added.stderr == ""
    (job,) = jobs(live.url)
    assert job["id"] == job_id and job["schedule"]["everyMs"] == 30 * 60_000  # type: ignore[index]
    assert job["spec"] == {"mode": "task", "message": "write the digest",
                           "model": "openai/gpt-5", "thinking": "low"}  # fmt: skip


def test_add_with_json_prints_the_whole_job(live: RunningGateway) -> None:
    """--json (local or global) prints the created job as JSON."""
    added = gsv(live.url, "cron", "add", "--name", "ping", "--cron", "0 9 * * 1-5",
                "--tz", "Europe/Madrid", "--system-event", "good morning", "--json")  # fmt: skip
    assert added.exit_code == 0, added.stderr
    job = json.loads(added.stdout)
    assert job["schedule"] == {"kind": "cron", "expr": "0 9 * * 1-5", "tz": "Europe/Madrid"}
    assert job["spec"] == {"mode": "systemEvent", "text": "good morning"}
    again = gsv(live.url, "--json", "cron", "add", "--name", "once", "--at", "in 2 hours",
                "--message", "go", "--delete-after-run", "--disabled")  # fmt: skip
    other = json.loads(again.stdout)
    assert other["deleteAfterRun"] is True and other["enabled"] is False


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["--every", "30m", "--message", "x"], "--name is required"),
        (["--name", "x", "--message", "x"], "give a schedule"),
        (["--name", "x", "--every", "30m"], "--message TEXT"),
        (["--name", "x", "--at", "in 1h", "--every", "1h", "--message", "x"], "--at and --every"),
        (["--name", "x", "--at", "in 1h", "--anchor", "now", "--message", "x"], "--anchor goes with --every"),
        (["--name", "x", "--every", "1h", "--tz", "UTC", "--message", "x"], "--tz goes with --cron"),
        (["--name", "x", "--cron", "* * *", "--message", "x"], "exactly 5 fields"),
        (["--name", "x", "--cron", "0 9 * * *", "--tz", "Mars/Base", "--message", "x"], "unknown time zone"),
        (["--name", "x", "--every", "0m", "--message", "x"], "longer than zero"),
        (["--name", "x", "--every", "30s", "--message", "x"], "at least 60000"),
        (["--name", "x", "--at", "someday", "--message", "x"], "unable to parse datetime"),
        (["--name", "x", "--at", "in 1h", "--message", "x", "--model", "gpt5"], "provider/model-id"),
        (["--name", "x", "--at", "in 1h", "--message", "x", "--thinking", "loud"], "spec.thinking"),
        (["--name", "x", "--at", "in 1h", "--message", "x", "--timeout", "0"], "timeoutSeconds"),
        (["--name", "x", "--at", "in 1h", "--system-event", "x", "--model", "a/b"], "only apply to tasks"),
        (["--name", "x", "--at", "in 1h", "--message", "x", "--system-event", "y"], "not both"),
    ],
)  # fmt: skip
def test_invalid_options_exit_2_naming_the_problem(
    tmp_path: Path, args: list[str], problem: str
) -> None:
    """Bad schedules and options are caught before connecting: stderr says why, exit 2."""
    result = gsv("ws://127.0.0.1:9/ws", "cron", "add", *args)
    assert result.exit_code == 2, result.output
    assert problem in result.stderr and result.stdout == ""


def test_a_400_from_the_gateway_is_exit_2_and_other_errors_exit_1(live: RunningGateway) -> None:
    """A time in the past (only the gateway can tell) exits 2; a refused add exits 1."""
    past = gsv(live.url, "cron", "add", "--name", "x", "--at", "2020-01-01 10:00", "--message", "x")
    assert past.exit_code == 2 and "schedule.atMs is in the past" in past.stderr
    assert past.stdout == ""
    assert gsv(live.url, "config", "set", "cron.maxJobs", "1").exit_code == 0
    assert (
        gsv(live.url, "cron", "add", "--name", "a", "--every", "1h", "--message", "x").exit_code
        == 0
    )
    full = gsv(live.url, "cron", "add", "--name", "b", "--every", "1h", "--message", "x")
    assert full.exit_code == 1 and "cron.maxJobs" in full.stderr and full.stdout == ""


def test_unreachable_gateway_exits_3() -> None:
    """Valid options but nothing listening: exit 3 with a hint."""
    result = gsv("ws://127.0.0.1:9/ws", "cron", "add", "--name", "x", "--every", "1h",
                 "--message", "x")  # fmt: skip
    assert result.exit_code == 3 and "gsv gateway run" in result.stderr


def test_from_json_reads_a_document_from_stdin_or_a_file(
    live: RunningGateway, tmp_path: Path
) -> None:
    """--from-json - and --from-json FILE create jobs; bad documents exit 2."""
    document = {"name": "from stdin", "schedule": {"kind": "every", "everyMs": 3_600_000},
                "spec": {"mode": "systemEvent", "text": "hi"}}  # fmt: skip
    piped = gsv(live.url, "cron", "add", "--from-json", "-", stdin=json.dumps(document))
    assert piped.exit_code == 0, piped.stderr
    path = tmp_path / "job.json"
    path.write_text(json.dumps({**document, "name": "from file",
                                "schedule": {"kind": "at", "at": "tomorrow 9am"}}))  # fmt: skip
    filed = gsv(live.url, "cron", "add", "--from-json", str(path))
    assert filed.exit_code == 0, filed.stderr
    assert sorted(j["name"] for j in jobs(live.url)) == ["from file", "from stdin"]  # type: ignore[type-var]
    path.write_text('{"name": "x"}')
    assert gsv(live.url, "cron", "add", "--from-json", str(path)).exit_code == 2
    path.write_text("not json")
    assert gsv(live.url, "cron", "add", "--from-json", str(path)).exit_code == 2
    mixed = gsv(live.url, "cron", "add", "--from-json", str(path), "--name", "y")
    assert mixed.exit_code == 2 and "cannot be combined with name" in mixed.stderr


def test_update_list_status_and_remove(live: RunningGateway) -> None:
    """update changes only what is given; list shows both zones; remove deletes."""
    job_id = gsv(live.url, "cron", "add", "--name", "daily", "--cron", "30 8 * * *",
                 "--tz", "America/New_York", "--message", "go").stdout.strip()  # fmt: skip
    listed = gsv(live.url, "cron", "list")
    assert listed.exit_code == 0 and job_id in listed.stdout
    assert "cron 30 8 * * * (America/New_York)" in listed.stdout
    assert ("08:30 EST" in listed.stdout or "08:30 EDT" in listed.stdout) and "UTC" in listed.stdout
    updated = gsv(live.url, "cron", "update", job_id, "--name", "renamed", "--disabled")
    assert updated.exit_code == 0 and updated.stdout == f"{job_id}\n"
    (job,) = jobs(live.url)
    assert job["name"] == "renamed" and job["enabled"] is False
    assert job["schedule"]["expr"] == "30 8 * * *"  # type: ignore[index]
    assert "renamed" not in gsv(live.url, "cron", "list").stdout  # disabled: only with --all
    assert gsv(live.url, "cron", "update", job_id).exit_code == 2  # nothing to change
    assert gsv(live.url, "cron", "update", job_id, "--thinking", "loud").exit_code == 2
    assert gsv(live.url, "cron", "update", "nope", "--name", "x").exit_code == 1
    status = gsv(live.url, "cron", "status")
    assert status.exit_code == 0 and "jobs:       1 (0 due, 0 running)" in status.stdout
    assert json.loads(gsv(live.url, "cron", "status", "--json").stdout)["count"] == 1
    removed = gsv(live.url, "cron", "remove", job_id)
    assert removed.exit_code == 0 and removed.stdout == f"removed {job_id}\n"
    gone = gsv(live.url, "cron", "remove", job_id)
    assert gone.exit_code == 1 and "no cron job" in gone.stderr


def test_run_and_runs_show_real_outcomes(live: RunningGateway, fake: FakeProvider) -> None:
    """run --force waits for the outcome; a failed run exits 1; runs lists the history."""
    job_id = gsv(live.url, "cron", "add", "--name", "r", "--every", "1h",
                 "--message", "report").stdout.strip()  # fmt: skip
    fake.enqueue("All good.")
    ran = gsv(live.url, "cron", "run", job_id, "--force")
    assert ran.exit_code == 0 and "ok" in ran.stdout and "All good." in ran.stdout
    fake.enqueue(Fail(RuntimeError("boom")))  # type: ignore[arg-type]
    failed = gsv(live.url, "cron", "run", job_id, "--force", "--json")
    assert failed.exit_code == 1 and json.loads(failed.stdout)["results"][0]["status"] == "error"
    history = gsv(live.url, "cron", "runs", "--job", job_id)
    assert history.exit_code == 0 and "All good." in history.stdout and "error" in history.stdout
    as_json = json.loads(gsv(live.url, "cron", "runs", "-n", "1", "--json").stdout)
    assert as_json["count"] == 2 and len(as_json["runs"]) == 1
    due = gsv(live.url, "cron", "run")
    assert due.exit_code == 0 and "nothing ran" in due.stdout
    assert gsv(live.url, "cron", "run", "--force").exit_code == 2
    not_due = gsv(live.url, "cron", "run", job_id)  # asked for, not due: it did not run
    assert not_due.exit_code == 1 and f"{job_id} did not run: not due yet" in not_due.stderr
    assert "use --force" in not_due.stderr and "mode force" not in not_due.stderr  # CLI words
    fake.enqueue("By prefix.")
    by_prefix = gsv(live.url, "cron", "run", job_id[:6], "--force")  # a unique id prefix
    assert by_prefix.exit_code == 0 and "By prefix." in by_prefix.stdout
    assert gsv(live.url, "cron", "remove", job_id[:6]).stdout == f"removed {job_id}\n"


def test_a_run_whose_tool_could_not_run_exits_1_and_list_shows_why(
    live: RunningGateway, fake: FakeProvider
) -> None:
    """The model answered, but no node provides its tool: the run failed (exit 1) and
    `cron list` shows the failure, its reason and the retry."""
    from tests.fakes.provider import call

    job_id = gsv(live.url, "cron", "add", "--name", "remind", "--at", "in 2 hours",
                 "--message", "check the box").stdout.strip()  # fmt: skip
    fake.enqueue(call("box__Bash", {"command": "true"}))
    fake.enqueue("Could not do it.")
    ran = gsv(live.url, "cron", "run", job_id, "--force")
    assert ran.exit_code == 1 and "1 run(s) failed" in ran.stderr
    listed = gsv(live.url, "cron", "list")
    assert listed.exit_code == 0 and job_id in listed.stdout
    assert "failed (retry 1): tools failed: box__Bash (No node provides tool: box__Bash)" in (
        " ".join(listed.stdout.split())
    )
