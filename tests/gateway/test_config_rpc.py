"""config.get / config.set on a live gateway: masking, validation, defaults, persistence."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gsv_core.client import GatewayClient
from gsv_core.config import DEFAULTS
from gsv_core.errors import Conflict
from gsv_core.errors import InvalidParams
from gsv_core.gateway.server import RunningGateway
from gsv_core.gateway.server import ServerConfig
from gsv_core.gateway.server import serve
from tests.wire import handshake
from tests.wire import open_raw


async def test_full_config_read_returns_defaults(gateway: RunningGateway) -> None:
    """Without a path, config.get returns the effective config (defaults included)."""
    async with GatewayClient(gateway.url, token=gateway.token) as client:
        payload = await client.call("config.get")
    assert payload["config"]["model"] == {"provider": "anthropic", "id": "claude-sonnet-4-20250514"}
    assert payload["config"]["timeouts"] == {"llmMs": 300000, "toolMs": 60000}
    assert payload["config"]["cron"]["maxJobs"] == 200
    # the one value every gateway has set: the owner token made on first start, masked
    assert payload["config"] == {**DEFAULTS, "auth": {"token": "***"}}


@pytest.mark.parametrize(
    ("path", "secret"),
    [
        ("auth.token", "tok-123"),
        ("apiKeys.openai", "sk-live-abc"),
        ("apiKeys.mistral", "mistral-key"),
        ("channels.telegram.botToken", "123:abc"),
        ("channels.slack.signingSecret", "shh"),
    ],
)
async def test_secrets_are_masked_in_every_read(
    gateway: RunningGateway, path: str, secret: str
) -> None:
    """Secrets masked in every read: the whole config, the parent object and the exact path all show ***."""
    async with GatewayClient(gateway.url, token=gateway.token) as client:
        await client.call("config.set", {"path": path, "value": secret})
        whole = await client.call("config.get")
        exact = await client.call("config.get", {"path": path})
        parent_path = path.rsplit(".", 1)[0]
        parent = await client.call("config.get", {"path": parent_path})
    assert secret not in repr(whole) + repr(exact) + repr(parent)
    assert exact == {"path": path, "value": "***"}
    assert parent["value"][path.rsplit(".", 1)[1]] == "***"


async def test_set_then_get_by_path_and_nested_merge(gateway: RunningGateway) -> None:
    """A dotted set changes one leaf; its siblings keep their defaults."""
    async with GatewayClient(gateway.url, token=gateway.token) as client:
        assert await client.call("config.set", {"path": "model.id", "value": "gpt-5"}) == {
            "ok": True,
            "path": "model.id",
        }
        model = await client.call("config.get", {"path": "model"})
        missing = await client.call("config.get", {"path": "model.nothing"})
    assert model["value"] == {"provider": "anthropic", "id": "gpt-5"}
    assert missing == {"path": "model.nothing"}


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        ("timeouts.toolMs", "fast", "timeouts.toolMs"),
        ("timeouts.toolMs", 10, "timeouts.toolMs"),
        ("session.dmScope", "everyone", "session.dmScope"),
        ("cron.enabled", "yes", "cron.enabled"),
        ("modle.id", "x", "modle"),
        ("model", "gpt", "model"),
        ("channels.whatsapp.dmPolicy", "sometimes", "channels.whatsapp.dmPolicy"),
        ("channels.outboxMaxAgeHours", 0, "channels.outboxMaxAgeHours"),
        ("channels.outboxMaxAgeHours", 24 * 31, "channels.outboxMaxAgeHours"),
        ("channels.outboxMaxAgeHours", "a day", "channels.outboxMaxAgeHours"),
        ("channels.outboxMaxAgeHours", 1.5, "channels.outboxMaxAgeHours"),
        ("channels.telegram", 24, "channels.telegram"),
    ],
)
async def test_bad_values_are_refused_with_400_naming_the_field(
    gateway: RunningGateway, path: str, value: Any, field: str
) -> None:
    """Type errors, out-of-range values and unknown keys are 400; nothing is changed."""
    async with GatewayClient(gateway.url, token=gateway.token) as client:
        before = await client.call("config.get")
        with pytest.raises(InvalidParams) as caught:
            await client.call("config.set", {"path": path, "value": value})
        after = await client.call("config.get")
    assert field in caught.value.message
    assert caught.value.details["errors"][0]["field"] == field
    assert before == after


@pytest.mark.parametrize("path", ["", "model..id", ".model", "model.", "a b"])
async def test_malformed_paths_are_refused(gateway: RunningGateway, path: str) -> None:
    """Empty segments and spaces are not config paths."""
    async with GatewayClient(gateway.url, token=gateway.token) as client:
        with pytest.raises(InvalidParams):
            await client.call("config.set", {"path": path, "value": 1})
        with pytest.raises(InvalidParams):
            await client.call("config.get", {"path": path})


async def test_setting_null_restores_the_default(gateway: RunningGateway) -> None:
    """`config.set PATH null` removes the override (the default is back)."""
    tool_timeout = gateway.gateway.tool_timeout  # read through the looked-up settings
    async with GatewayClient(gateway.url, token=gateway.token) as client:
        assert tool_timeout() == 60.0
        await client.call("config.set", {"path": "timeouts.toolMs", "value": 5000})
        assert (await client.call("config.get", {"path": "timeouts.toolMs"}))["value"] == 5000
        assert tool_timeout() == 5.0
        await client.call("config.set", {"path": "timeouts.toolMs", "value": None})
        assert (await client.call("config.get", {"path": "timeouts.toolMs"}))["value"] == 60000
        assert tool_timeout() == 60.0
        await client.call(
            "config.set", {"path": "model", "value": {"provider": "openai", "id": "gpt"}}
        )
        await client.call("config.set", {"path": "model", "value": None})
        assert (await client.call("config.get", {"path": "model.provider"}))["value"] == "anthropic"
    assert gateway.gateway.config.overrides == {"auth": {"token": gateway.token}}


async def test_overrides_survive_a_gateway_restart(tmp_path: Path) -> None:
    """config.set is on disk before it is acknowledged; a new gateway on the same file sees it."""
    config = ServerConfig(database=tmp_path / "persist.db")
    async with (
        serve(config, port=0) as first,
        GatewayClient(first.url, token=first.token) as client,
    ):
        await client.call("config.set", {"path": "userTimezone", "value": "Europe/Berlin"})
        await client.call("config.set", {"path": "apiKeys.anthropic", "value": "sk-ant"})
    async with (
        serve(config, port=0) as second,
        GatewayClient(second.url, token=second.token) as client,
    ):
        tz = await client.call("config.get", {"path": "userTimezone"})
        key = await client.call("config.get", {"path": "apiKeys.anthropic"})
    assert tz["value"] == "Europe/Berlin"
    assert key["value"] == "***"
    assert second.gateway.config.effective["apiKeys"]["anthropic"] == "sk-ant"


async def test_a_renamed_key_stored_by_an_older_gsv_still_applies(tmp_path: Path) -> None:
    """agent.maxIterations, stored under its old name, reads as agent.maxToolSteps after a
    restart; out-of-range values are refused under either name."""
    config = ServerConfig(database=tmp_path / "persist.db")
    async with (
        serve(config, port=0) as first,
        GatewayClient(first.url, token=first.token) as client,
    ):
        await client.call("config.set", {"path": "agent.maxIterations", "value": 7})
        for path in ("agent.maxIterations", "agent.maxToolSteps"):
            with pytest.raises(InvalidParams, match=path):
                await client.call("config.set", {"path": path, "value": 0})
    async with (
        serve(config, port=0) as second,
        GatewayClient(second.url, token=second.token) as client,
    ):
        steps = await client.call("config.get", {"path": "agent.maxToolSteps"})
    assert steps["value"] == 7
    assert second.gateway.config.overrides["agent"] == {"maxIterations": 7}


async def test_the_new_name_written_with_its_section_wins_over_the_old(
    gateway: RunningGateway,
) -> None:
    """A section read (both names shown) and written back with maxToolSteps changed: the
    new value applies, not the old name's."""
    async with GatewayClient(gateway.url, token=gateway.token) as client:
        await client.call("config.set", {"path": "agent.maxIterations", "value": 7})
        section = (await client.call("config.get", {"path": "agent"}))["value"]
        assert section["maxIterations"] == section["maxToolSteps"] == 7
        await client.call("config.set", {"path": "agent", "value": {**section, "maxToolSteps": 9}})
        steps = await client.call("config.get", {"path": "agent.maxToolSteps"})
    assert steps["value"] == 9


async def test_the_owner_token_cannot_be_removed(gateway: RunningGateway) -> None:
    """A credential is always required: auth.token can change, never go."""
    token = gateway.token
    async with GatewayClient(gateway.url, token=token) as client:
        with pytest.raises(Conflict, match="always needs"):
            await client.call("config.set", {"path": "auth.token", "value": None})
        with pytest.raises(Conflict):
            await client.call("config.set", {"path": "auth", "value": {}})
    assert gateway.gateway.config.auth_token == token


async def test_serve_refuses_a_public_host_without_tls(tmp_path: Path) -> None:
    """Beyond loopback: TLS, or --insecure-no-tls for a trusted network (no socket opened)."""
    with pytest.raises(InvalidParams, match="--insecure-no-tls"):
        async with serve(ServerConfig(database=tmp_path / "x.db"), host="0.0.0.0", port=0):
            pass


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("token", True), ("botToken", True), ("password", True), ("apiKey", True),
        ("api_key", True), ("signingSecret", True), ("secretAccessKey", True),
        ("reserveTokens", False), ("maxTokens", False), ("mainKey", False), ("id", False),
    ],
)  # fmt: skip
def test_secret_key_names_are_recognised_without_catching_token_counts(
    name: str, secret: bool
) -> None:
    """Credentials are masked; token counts such as compaction.reserveTokens are not."""
    from gsv_core.config.mask import is_secret_key

    assert is_secret_key(name) is secret


async def test_stored_changes_notify_listeners_and_refused_ones_do_not(
    gateway: RunningGateway,
) -> None:
    """Parts that cache the config (the heartbeat timer) hear of every stored change, by
    path; a refused value changes nothing and tells no one."""
    heard: list[str] = []
    gateway.gateway.config.listeners.append(heard.append)
    async with GatewayClient(gateway.url, token=gateway.token) as client:
        await client.call("config.set", {"path": "agents.defaultHeartbeat.every", "value": "1h"})
        with pytest.raises(InvalidParams, match="cannot read 'hourly' as an interval"):
            await client.call(
                "config.set", {"path": "agents.defaultHeartbeat.every", "value": "hourly"}
            )
        got = await client.call("config.get", {"path": "agents.defaultHeartbeat.every"})
    assert heard == ["agents.defaultHeartbeat.every"]
    assert got["value"] == "1h"


async def test_a_change_is_announced_to_clients_without_its_value(
    gateway: RunningGateway,
) -> None:
    """The other clients get `config.changed` with the path, never the value; the writer
    gets only its answer."""
    async with (
        GatewayClient(gateway.url, token=gateway.token) as writer,
        GatewayClient(gateway.url, token=gateway.token) as watcher,
    ):
        await writer.call("config.set", {"path": "apiKeys.openai", "value": "sk-announce-42"})
        frame = await anext(aiter(watcher.events()))
        async with await open_raw(gateway.url) as raw:
            await handshake(raw)
            params = {"path": "model.id", "value": "gpt-5"}
            await raw.send(
                json.dumps({"type": "req", "id": "w", "method": "config.set", "params": params})
            )
            answer = json.loads(await raw.recv())
            # had the writer been told, the event would come before this answer
            get = {"path": "model.id"}
            await raw.send(
                json.dumps({"type": "req", "id": "r", "method": "config.get", "params": get})
            )
            next_frame = json.loads(await raw.recv())
            second = await anext(aiter(watcher.events()))
    assert frame.event == "config.changed" and frame.payload == {"path": "apiKeys.openai"}
    assert "sk-announce-42" not in repr(frame)
    assert answer["id"] == "w" and answer["ok"]
    assert next_frame["id"] == "r" and next_frame["payload"]["value"] == "gpt-5"
    assert second.payload == {"path": "model.id"}
