"""`gsv workspace ls/cat/put/rm/edit` against a real gateway (in a thread)."""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner
from typer.testing import Result

from gsv_cli.main import app
from gsv_core.gateway.server import RunningGateway
from tests.threaded import threaded_gateway


@pytest.fixture
def live(tmp_path: Path) -> Iterator[RunningGateway]:
    with threaded_gateway(tmp_path / "data" / "gsv.db") as running:
        yield running


def gsv(url: str, *args: str, stdin: str | None = None) -> Result:
    return CliRunner().invoke(app, ["--url", url, *args], input=stdin)


def on_disk(live: RunningGateway, path: str, agent: str = "main") -> Path:
    return Path(live.gateway.db.path).parent / "workspace" / "agents" / agent / path


def editor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str) -> None:
    """Point $EDITOR at a small Python script; `path` is the file it was given."""
    script = tmp_path / "editor.py"
    script.write_text(f"import sys\nfrom pathlib import Path\npath = Path(sys.argv[1])\n{body}\n")
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}")


def test_put_cat_ls_rm(live: RunningGateway, tmp_path: Path) -> None:
    """put from a file and from stdin, cat prints exactly, ls lists, rm deletes."""
    source = tmp_path / "notes.md"
    source.write_text("line one\nline two")
    put = gsv(live.url, "workspace", "put", "notes/a.md", str(source))
    assert put.exit_code == 0 and put.stdout == "wrote notes/a.md (17 bytes)\n"
    assert gsv(live.url, "workspace", "put", "notes/b.md", "-", stdin="from stdin\n").exit_code == 0
    assert gsv(live.url, "workspace", "put", "notes/c.md", stdin="implicit\n").exit_code == 0
    assert on_disk(live, "notes/b.md").read_text() == "from stdin\n"
    assert gsv(live.url, "workspace", "cat", "notes/a.md").stdout == "line one\nline two"
    assert gsv(live.url, "workspace", "ls", "notes").stdout == (
        "notes/a.md\nnotes/b.md\nnotes/c.md\n"
    )
    root = gsv(live.url, "workspace", "ls").stdout.splitlines()
    assert root[0] == "notes/" and "SOUL.md" in root
    removed = gsv(live.url, "workspace", "rm", "notes/a.md")
    assert removed.exit_code == 0 and removed.stdout == "deleted notes/a.md\n"
    assert not on_disk(live, "notes/a.md").exists()


def test_json_output_and_agent_option(live: RunningGateway) -> None:
    """--json prints the method's result (global or per command); --agent picks the agent."""
    wrote = gsv(live.url, "--json", "workspace", "put", "x.md", "--agent", "helper", stdin="hi")
    assert json.loads(wrote.stdout) == {"path": "x.md", "size": 2, "written": True}
    assert on_disk(live, "x.md", "helper").read_text() == "hi"
    read = json.loads(gsv(live.url, "workspace", "cat", "x.md", "-a", "helper", "--json").stdout)
    assert read["content"] == "hi" and read["contentType"] == "text/markdown"
    listed = json.loads(gsv(live.url, "workspace", "ls", "--agent", "helper", "--json").stdout)
    assert "x.md" in listed["files"]
    removed = json.loads(gsv(live.url, "--json", "workspace", "rm", "x.md", "-a", "helper").stdout)
    assert removed == {"path": "x.md", "deleted": True}


def test_cat_reads_parts_and_lists_folders(live: RunningGateway) -> None:
    """--search/-C, --start-line/--end-line and --json-path; a folder is listed."""
    gsv(live.url, "workspace", "put", "log.md", stdin="a\nb\nneedle\nc\nd\n")
    found = gsv(live.url, "workspace", "cat", "log.md", "--search", "NEEDLE", "-C", "1")
    assert found.stdout == "2-b\n3:needle\n4-c\n"
    lines = gsv(live.url, "workspace", "cat", "log.md", "--start-line", "4", "--end-line", "5")
    assert lines.stdout == "c\nd\n"
    gsv(live.url, "workspace", "put", "d.json", stdin='{"a": {"b": [true]}}')
    assert gsv(live.url, "workspace", "cat", "d.json", "--json-path", "a.b[0]").stdout == "true\n"
    none = gsv(live.url, "workspace", "cat", "log.md", "--search", "zebra")
    assert none.exit_code == 0 and none.stdout == "" and "no lines of log.md" in none.stderr
    assert "memory/" not in gsv(live.url, "workspace", "cat", "/").stdout
    assert "SOUL.md" in gsv(live.url, "workspace", "cat", "/").stdout


def test_errors_go_to_stderr_with_exit_1(live: RunningGateway, tmp_path: Path) -> None:
    """Missing files, refused paths and unreadable local files: red message, exit 1."""
    missing = gsv(live.url, "workspace", "cat", "ghost.md")
    assert missing.exit_code == 1 and "Not found: ghost.md" in missing.stderr
    escape = gsv(live.url, "workspace", "put", "../escape.md", stdin="x")
    assert escape.exit_code == 1 and "path traversal" in escape.stderr
    bad_agent = gsv(live.url, "workspace", "ls", "--agent", "Bad Agent")
    assert bad_agent.exit_code == 1 and "invalid agentId" in bad_agent.stderr
    nofile = gsv(live.url, "workspace", "put", "x.md", str(tmp_path / "nope.md"))
    assert nofile.exit_code == 1 and "cannot read" in nofile.stderr
    binary = tmp_path / "b.bin"
    binary.write_bytes(b"\xff\xfe\x00")
    refused = gsv(live.url, "workspace", "put", "x.md", str(binary))
    assert refused.exit_code == 1 and "not UTF-8 text" in refused.stderr


def test_edit_writes_back_only_when_changed(
    live: RunningGateway, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The editor's change is saved; an untouched file is not written again."""
    gsv(live.url, "workspace", "put", "SOUL.md", stdin="Calm and exact.\n")
    editor(tmp_path, monkeypatch, "path.write_text(path.read_text().replace('Calm', 'Bold'))")
    edited = gsv(live.url, "workspace", "edit", "SOUL.md")
    assert edited.exit_code == 0 and edited.stdout == "wrote SOUL.md (16 bytes)\n"
    assert on_disk(live, "SOUL.md").read_text() == "Bold and exact.\n"
    stamp = on_disk(live, "SOUL.md").stat().st_mtime_ns
    editor(tmp_path, monkeypatch, "pass")
    untouched = gsv(live.url, "workspace", "edit", "SOUL.md")
    assert untouched.exit_code == 0 and "no changes: SOUL.md" in untouched.stderr
    assert on_disk(live, "SOUL.md").stat().st_mtime_ns == stamp


def test_edit_creates_a_missing_file(
    live: RunningGateway, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A path that does not exist yet opens empty and is created on save."""
    editor(tmp_path, monkeypatch, "assert path.read_text() == ''\npath.write_text('new\\n')")
    created = gsv(live.url, "workspace", "edit", "memory/new.md")
    assert created.exit_code == 0
    assert on_disk(live, "memory/new.md").read_text() == "new\n"


def test_edit_refuses_when_the_editor_fails_or_the_file_changed(
    live: RunningGateway, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failing editor writes nothing; a file changed meanwhile is not overwritten and
    the user's version is kept in a local file."""
    gsv(live.url, "workspace", "put", "USER.md", stdin="Ada\n")
    editor(tmp_path, monkeypatch, "path.write_text('lost')\nsys.exit(3)")
    failed = gsv(live.url, "workspace", "edit", "USER.md")
    assert failed.exit_code == 1 and "exited with status 3" in failed.stderr
    assert on_disk(live, "USER.md").read_text() == "Ada\n"
    target = on_disk(live, "USER.md")
    editor(
        tmp_path,
        monkeypatch,
        f"Path({str(target)!r}).write_text('changed elsewhere')\npath.write_text('mine')",
    )
    conflict = gsv(live.url, "workspace", "edit", "USER.md")
    assert conflict.exit_code == 1 and "changed on the gateway" in conflict.stderr
    assert target.read_text() == "changed elsewhere"
    kept = conflict.stderr.split("It is in ")[1].strip().rstrip(".")
    assert Path(kept).read_text() == "mine"
    Path(kept).unlink()


def test_edit_of_a_folder_is_refused(live: RunningGateway) -> None:
    """Editing a folder is a clear error before any editor starts."""
    gsv(live.url, "workspace", "put", "memory/a.md", stdin="a")
    refused = gsv(live.url, "workspace", "edit", "memory")
    assert refused.exit_code == 1 and "memory is a folder" in refused.stderr
