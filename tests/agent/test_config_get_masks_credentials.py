"""gsv__ConfigGet (and config.get) mask credentials that hide under ordinary names: a
URL's user part and query, every MCP server `env` and `headers` value and what carries a
credential in its `args`. A config read masked and written back keeps the real values."""

from __future__ import annotations

import json
from typing import Any

from gsv_core.client import GatewayClient
from gsv_core.config.mask import mask_secrets
from gsv_core.gateway.server import RunningGateway
from tests.agent.conftest import EventLog
from tests.agent.conftest import send
from tests.fakes.provider import FakeProvider
from tests.fakes.provider import call

LEAKS = ("hunter2", "S3cretPw", "BSA-live-123", "pw@h", "ghp_abc", "LEAKED-QUERY-KEY",
         "LEAKED-HEADER", "admin")  # fmt: skip
PG = {
    "command": "npx",
    "enabled": False,
    "args": ["-y", "server-postgres", "postgresql://admin:S3cretPw@db.internal/prod"],
}
BRAVE = {
    "command": "npx",
    "enabled": False,
    "args": ["server-brave", "--api-key", "BSA-live-123"],
    "env": {"DATABASE_URL": "postgres://u:pw@h/db", "GITHUB_PAT": "ghp_abc"},
}
SEARCH = {"url": "https://mcp.example.com/mcp?apiKey=LEAKED-QUERY-KEY", "enabled": False,
          "headers": {"X-Auth": "LEAKED-HEADER"}}  # fmt: skip
BASE_URL = "https://user:hunter2@llm.corp.example/v1"


async def configure(client: GatewayClient) -> None:
    for name, server in (("pg", PG), ("brave", BRAVE), ("search", SEARCH)):
        await client.call("config.set", {"path": f"mcp.servers.{name}", "value": server})
    await client.call("config.set", {"path": "providers.corp",
                                     "value": {"api": "openai", "baseUrl": BASE_URL,
                                               "apiKey": "sk-real"}})  # fmt: skip


async def test_the_model_sees_no_credential_through_config_get(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    await configure(client)
    fake.enqueue(call("gsv__ConfigGet", {}), call("gsv__ConfigGet", {"path": "mcp.servers"}),
                 call("gsv__ConfigGet", {"path": "providers.corp.baseUrl"}))  # fmt: skip
    fake.enqueue("ok")
    run = (await send(client, "show me the config"))["runId"]
    assert (await log.ended(run))["state"] == "final"
    results = [m for m in fake.requests[-1].messages if m["role"] == "toolResult"]
    assert len(results) == 3
    for result in results:
        text = result["content"][0]["text"]
        assert not [leak for leak in LEAKS if leak in text], text
    whole = json.loads(results[0]["content"][0]["text"])["config"]
    servers = whole["mcp"]["servers"]
    assert servers["pg"]["args"] == ["-y", "server-postgres", "postgresql://***@db.internal/prod"]
    assert servers["brave"]["args"] == ["server-brave", "--api-key", "***"]
    assert servers["brave"]["env"] == {"DATABASE_URL": "***", "GITHUB_PAT": "***"}
    assert servers["search"]["headers"] == {"X-Auth": "***"}
    assert servers["search"]["url"] == "https://mcp.example.com/mcp?***"
    assert whole["providers"]["corp"]["baseUrl"] == "https://***@llm.corp.example/v1"


async def test_a_masked_config_written_back_keeps_the_real_values(
    gw: RunningGateway, client: GatewayClient
) -> None:
    """Read masked, change one field, write the whole server back: only that field changes."""
    await configure(client)
    for name, server in (("pg", PG), ("brave", BRAVE), ("search", SEARCH)):
        shown = (await client.call("config.get", {"path": f"mcp.servers.{name}"}))["value"]
        await client.call("config.set", {"path": f"mcp.servers.{name}",
                                         "value": {**shown, "timeoutMs": 5000}})  # fmt: skip
        assert gw.gateway.config.setting(f"mcp.servers.{name}") == {**server, "timeoutMs": 5000}
    shown = (await client.call("config.get", {"path": "providers.corp"}))["value"]
    assert shown["apiKey"] == "***"
    await client.call("config.set", {"path": "providers.corp", "value": shown})
    assert gw.gateway.config.setting("providers.corp.baseUrl") == BASE_URL
    assert gw.gateway.config.setting("providers.corp.apiKey") == "sk-real"


def test_url_credentials_are_masked_wherever_they_are() -> None:
    masked = mask_secrets({"a": "see https://a:b@h.example/x?k=1#t here",
                           "b": "https://h.example/plain", "c": "no url, a?b"})  # fmt: skip
    assert masked == {"a": "see https://***@h.example/x?***#*** here",
                      "b": "https://h.example/plain", "c": "no url, a?b"}  # fmt: skip


def test_masking_leaves_ordinary_settings_alone() -> None:
    config: dict[str, Any] = {"model": {"id": "x"}, "mcp": {"servers": {"s": {
        "command": "npx", "cwd": "/srv", "args": ["a"]}}}}  # fmt: skip
    masked = mask_secrets(config)
    assert masked["model"] == {"id": "x"}
    assert masked["mcp"]["servers"]["s"] == {"command": "npx", "cwd": "/srv", "args": ["a"]}


def test_mcp_args_keep_what_carries_no_credential() -> None:
    """The owner still sees which directory a filesystem server serves; only the value
    of a secret-named option, a secret-looking NAME=value and URL credentials are masked,
    and each masked arg written back keeps its real value."""
    from gsv_core.config import set_override

    args = ["-y", "server-filesystem", "/home/me/projects", "--api-key", "k-1", "--token=t-2",
            "API_KEY=k-3", "https://u:p@h/x?key=4", "--verbose"]  # fmt: skip
    config = {"mcp": {"servers": {"fs": {"command": "npx", "args": args}}}}
    shown = mask_secrets(config)["mcp"]["servers"]["fs"]["args"]
    assert shown == ["-y", "server-filesystem", "/home/me/projects", "--api-key", "***",
                     "--token=***", "API_KEY=***", "https://***@h/x?***", "--verbose"]  # fmt: skip
    written = set_override(config, "mcp.servers.fs.args", shown)
    assert written["mcp"]["servers"]["fs"]["args"] == args


def test_a_section_under_a_secret_name_is_masked_all_through() -> None:
    """`channels.x` takes any key: a `secrets` section's entries are secret whatever
    their own names."""
    config = {"channels": {"foo": {"secrets": {"bot": "b-1", "nested": {"x": "b-2"}}}}}
    assert mask_secrets(config)["channels"]["foo"]["secrets"] == {
        "bot": "***",
        "nested": {"x": "***"},
    }


def test_a_header_credential_in_mcp_args_is_masked() -> None:
    """mcp-remote's `--header "Authorization: Bearer X"`, a key header, a bare token."""
    from gsv_core.config import set_override

    args = ["mcp-remote", "https://h/mcp", "--header", "Authorization: Bearer t-1",
            "-H", "X-Api-Key: k-2", "Bearer t-3", "--verbose"]  # fmt: skip
    config = {"mcp": {"servers": {"r": {"command": "npx", "args": args}}}}
    shown = mask_secrets(config)["mcp"]["servers"]["r"]["args"]
    assert shown == ["mcp-remote", "https://h/mcp", "--header", "Authorization: ***",
                     "-H", "X-Api-Key: ***", "Bearer ***", "--verbose"]  # fmt: skip
    assert set_override(config, "mcp.servers.r.args", shown)["mcp"]["servers"]["r"]["args"] == args
