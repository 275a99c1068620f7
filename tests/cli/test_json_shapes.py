"""Every listing prints one `--json` shape, `{"<things>": [...], "count": n}`:
a script reads `count` and the list by its plural name, whatever the command."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from gsv_cli.main import app
from gsv_core.gateway.server import RunningGateway

LISTINGS = [
    (["sessions", "list"], "sessions"),
    (["cron", "list"], "jobs"),
    (["pairing", "list"], "pairs"),
    (["approvals", "list"], "approvals"),
    (["approvals", "rules"], "rules"),
    (["channels", "list"], "channels"),
    (["channels", "credentials"], "credentials"),
    (["skills", "list"], "skills"),
    (["nodes", "list"], "nodes"),
    (["tools", "list"], "tools"),
    (["usage"], "groups"),
    (["web", "list"], "credentials"),
]


@pytest.mark.parametrize(("command", "things"), LISTINGS, ids=[" ".join(c) for c, _ in LISTINGS])
def test_every_listing_has_the_one_json_shape(
    live: RunningGateway, command: list[str], things: str
) -> None:
    for args in (["--json", *command], [*command, "--json"]):
        result = CliRunner().invoke(app, ["--url", live.url, *args])
        assert result.exit_code == 0, result.output
        data = json.loads(result.stdout)
        assert isinstance(data[things], list) and data["count"] == len(data[things])
