"""Config secrets at rest: in the secret store only, never in the database, its WAL, logs
or any other file under GSV_HOME; old plain-text databases migrated; bad values refused."""

from __future__ import annotations

import json
import logging
import sqlite3
import uuid
from collections.abc import Iterable
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import keyring
import keyring.backends.fail
import pytest

from gsv_core.client import GatewayClient
from gsv_core.errors import GsvError
from gsv_core.errors import InvalidParams
from gsv_core.gateway.config_service import ConfigService
from gsv_core.gateway.server import ServerConfig
from gsv_core.gateway.server import serve
from gsv_core.localconfig import get_secret
from gsv_core.localconfig import keyring_service
from gsv_core.localconfig import set_secret
from gsv_core.paths import resolve_paths
from gsv_core.storage.config_store import ConfigStore
from gsv_core.storage.db import Database
from gsv_core.storage.db import migrate
from tests.fakes.memory_keyring import MemoryKeyring
from tests.fakes.provider import FakeProvider
from tests.fakes.provider import call
from tests.test_config_secrets import SECRET_PATHS
from tests.test_config_secrets import tree_of


def fresh_values() -> dict[str, str]:
    """A distinct random value per secret path (a grep finds each one alone)."""
    return {path: f"s3cr3t-{uuid.uuid4().hex}" for path in SECRET_PATHS}


def files_under(*roots: Path) -> list[Path]:
    return [p for root in roots for p in root.rglob("*") if p.is_file() and not p.is_symlink()]


def leaks(values: Iterable[str], roots: Iterable[Path], allowed: Path | None = None) -> list[str]:
    """`file: value` for each secret value found in the bytes of a file under `roots`."""
    found = []
    for path in files_under(*roots):
        data = path.read_bytes()
        found += [f"{path}: {v}" for v in values if v.encode() in data and path != allowed]
    return found


def config_entries(keyring: MemoryKeyring) -> dict[tuple[str, str], str]:
    """The keyring's entries but the owner token every gateway keeps there."""
    return {k: v for k, v in keyring.store.items() if k != (keyring_service(), "gateway.token")}


async def set_all(client: GatewayClient, values: Mapping[str, Any]) -> None:
    for path, value in values.items():
        await client.call("config.set", {"path": path, "value": value})


def gateway_at(database: Path, **options: Any) -> Any:
    return serve(ServerConfig(database=database, **options), port=0)


async def test_no_secret_reaches_a_file_outside_the_keyring(
    gsv_home: Path, tmp_path: Path, memory_keyring: MemoryKeyring
) -> None:
    """Each kind of secret set with config.set lands in the keyring; no file under
    GSV_HOME or the database's directory (db, WAL, SHM) holds any of them."""
    values, db_dir = fresh_values(), tmp_path / "gw"
    async with gateway_at(db_dir / "gsv.db") as gw, GatewayClient(gw.url, token=gw.token) as client:
        await set_all(client, values)
        assert leaks(values.values(), [gsv_home, db_dir]) == []  # WAL and SHM live now
        assert {p: gw.gateway.config.setting(p) for p in values} == values
        assert gw.gateway.config.auth_token == values["auth.token"]
    assert leaks(values.values(), [gsv_home, db_dir]) == []
    assert (
        memory_keyring.store[(keyring_service(), "config.apiKeys.openai")]
        == values["apiKeys.openai"]
    )
    assert get_secret("gateway.token") == values["auth.token"]  # the CLI's token, shared
    async with gateway_at(db_dir / "gsv.db") as again:
        assert {p: again.gateway.config.setting(p) for p in values} == values


async def test_without_a_keyring_secrets_go_to_the_0600_file_only(
    gsv_home: Path, tmp_path: Path
) -> None:
    """With the keyring failing, secrets.toml (0600) is the only file holding them."""
    keyring.set_keyring(keyring.backends.fail.Keyring())
    values, db_dir = fresh_values(), tmp_path / "gw"
    secrets_file = resolve_paths().secrets_file
    async with gateway_at(db_dir / "gsv.db") as gw, GatewayClient(gw.url, token=gw.token) as client:
        await set_all(client, values)
        assert leaks(values.values(), [gsv_home, db_dir], allowed=secrets_file) == []
    stored = secrets_file.read_text()
    assert all(value in stored for value in values.values())
    assert secrets_file.stat().st_mode & 0o777 == 0o600
    async with gateway_at(db_dir / "gsv.db") as again:
        assert {p: again.gateway.config.setting(p) for p in values} == values


async def test_a_removed_secret_leaves_the_store(memory_keyring: MemoryKeyring) -> None:
    """null removes a secret key's entry; replacing a subtree removes the keys it drops."""
    async with (
        gateway_at(Path(resolve_paths().database)) as gw,
        GatewayClient(gw.url, token=gw.token) as c,
    ):
        await set_all(c, {"apiKeys.openai": "sk-1", "channels.slack.appToken": "xapp-1",
                          "channels.slack.botToken": "xoxb-1"})  # fmt: skip
        await c.call("config.set", {"path": "apiKeys.openai", "value": None})
        await c.call("config.set", {"path": "channels.slack", "value": {"botToken": "xoxb-2"}})
        found = await c.call("config.get", {"path": "apiKeys.openai"})
    assert "value" not in found
    assert config_entries(memory_keyring) == {
        (keyring_service(), "config.channels.slack.botToken"): "xoxb-2"
    }


# -- migration ---------------------------------------------------------------------------


def old_database(path: Path, rows: Mapping[str, Any]) -> None:
    """A database as an older gsv left it: config overrides as plain JSON rows."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    migrate(conn)
    for key, value in rows.items():
        conn.execute(
            "INSERT INTO config_overrides (key, value, updated_at) VALUES (?, ?, 0)",
            (key, json.dumps(value)),
        )
    conn.close()


async def test_plain_text_secrets_of_an_old_database_are_moved(
    tmp_path: Path, memory_keyring: MemoryKeyring, caplog: pytest.LogCaptureFixture
) -> None:
    """At first start the plain-text values move to the store, still work through the
    gateway, and are gone from the database file and its WAL; one line counts them."""
    values = fresh_values()
    database = tmp_path / "old" / "gsv.db"
    old_database(database, tree_of({**values, "model.id": "kept-model"}))
    assert all(v.encode() in database.read_bytes() for v in values.values())  # the control
    caplog.set_level(logging.INFO)
    token = values["auth.token"]
    async with gateway_at(database) as gw, GatewayClient(gw.url, token=token) as client:
        assert {p: gw.gateway.config.setting(p) for p in values} == values
        assert (await client.call("config.get", {"path": "apiKeys.openai"}))["value"] == "***"
        assert gw.gateway.config.setting("model.id") == "kept-model"
        assert leaks(values.values(), [database.parent]) == []  # db, WAL, SHM while running
    assert leaks(values.values(), [database.parent]) == []
    moved = [r.getMessage() for r in caplog.records if "plain-text secret" in r.getMessage()]
    assert moved == [f"moved {len(values)} plain-text secret(s) from the database to the "
                     "secret store"]  # fmt: skip
    assert get_secret("config.channels.slack.appToken") == values["channels.slack.appToken"]
    async with gateway_at(database) as again:  # the markers resolve; nothing moves twice
        assert {p: again.gateway.config.setting(p) for p in values} == values
    assert len([r for r in caplog.records if "plain-text secret" in r.getMessage()]) == 1


async def test_a_marker_without_its_secret_reads_as_unset(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The gateway still starts; the key reads as unset; a warning names the key. A
    marker naming another key's secret is not followed."""
    set_secret("gateway.token", "the-owner-token")
    database = tmp_path / "gsv.db"
    old_database(database, {
        "apiKeys": {"openai": {"$secret": "config.apiKeys.openai"}},
        "channels": {"x": {"botToken": {"$secret": "gateway.token"}}},
    })  # fmt: skip
    async with gateway_at(database) as gw, GatewayClient(gw.url, token=gw.token) as client:
        found = await client.call("config.get", {"path": "apiKeys.openai"})
        assert "value" not in found
        assert "botToken" not in gw.gateway.config.effective["channels"]["x"]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("config key apiKeys.openai" in w and "missing" in w for w in warnings)
    assert any("config key channels.x.botToken" in w for w in warnings)


# -- masking -----------------------------------------------------------------------------


async def test_every_secret_is_masked_in_reads_tool_results_and_logs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """config.get (whole and by path) and gsv__ConfigGet show *** for every secret key;
    no log record carries a value."""
    caplog.set_level(logging.DEBUG)
    values, fake = fresh_values(), FakeProvider()
    options = {"provider_factory": fake.factory}
    async with (
        gateway_at(tmp_path / "gsv.db", **options) as gw,
        GatewayClient(gw.url, token=gw.token) as client,
    ):
        await set_all(client, values)
        whole = await client.call("config.get", {})
        by_path = [await client.call("config.get", {"path": p}) for p in values]
        await ask_config_tool(client, fake, list(values))
    assert [r["value"] for r in by_path] == ["***"] * len(values)
    assert not any(v in json.dumps(whole) for v in values.values())
    tool_results = [
        m["content"][0]["text"] for m in fake.requests[-1].messages if m["role"] == "toolResult"
    ]
    assert len(tool_results) == len(values) + 1
    assert all('"value": "***"' in text for text in tool_results[:-1])
    assert not any(v in text for text in tool_results for v in values.values())
    logged = "\n".join(r.getMessage() + (r.exc_text or "") for r in caplog.records)
    assert logged and not any(v in logged for v in values.values())


async def ask_config_tool(client: GatewayClient, fake: FakeProvider, paths: list[str]) -> None:
    """One run in which the model reads each path, then the whole config, with the tool."""
    fake.enqueue(*[call("gsv__ConfigGet", {"path": p}) for p in paths], call("gsv__ConfigGet"))
    fake.enqueue("done")
    ended: dict[str, Any] = {}
    events = client.events()
    sent = await client.call(
        "chat.send", {"sessionKey": "agent:main:main", "message": "read the config"}
    )
    async for frame in events:
        if frame.payload.get("runId") == sent["runId"] and frame.payload.get("state") in (
            "final",
            "error",
        ):
            ended = frame.payload
            break
    assert ended["state"] == "final"


# -- bad input ---------------------------------------------------------------------------

BAD_VALUES = [
    ("channels.telegram.botToken", 123456789),
    ("channels.telegram.botToken", ""),
    ("channels.telegram.botToken", "   "),
    ("channels.telegram.botToken", ["a-token"]),
    ("channels.telegram.botToken", {"$secret": "gateway.token"}),
    ("apiKeys.openai", 42),
    ("apiKeys.openai", ""),
    ("auth.token", ""),
    ("channels.slack", {"appToken": "xapp-fine", "botToken": 7}),
    ("channels.slack", {"appToken": "xapp-fine", "botToken": ""}),
]


@pytest.mark.parametrize(("path", "value"), BAD_VALUES)
async def test_a_bad_secret_is_refused_and_nothing_is_written(
    tmp_path: Path, memory_keyring: MemoryKeyring, path: str, value: Any
) -> None:
    """InvalidParams names the key; the config, the store and the database are unchanged."""
    database = tmp_path / "gsv.db"
    async with gateway_at(database) as gw, GatewayClient(gw.url, token=gw.token) as client:
        await set_all(client, {"channels.slack.appToken": "xapp-before"})
        before = dict(memory_keyring.store), gw.gateway.config.overrides
        with pytest.raises(InvalidParams, match=path.replace(".", r"\.")):
            await client.call("config.set", {"path": path, "value": value})
        assert (dict(memory_keyring.store), gw.gateway.config.overrides) == before
    assert b"xapp-fine" not in database.read_bytes()
    assert config_entries(memory_keyring) == {
        (keyring_service(), "config.channels.slack.appToken"): "xapp-before"
    }


class FlakyVault:
    """A secret store that refuses one name (after storing the ones before it)."""

    def __init__(self, fail_on: str) -> None:
        self.fail_on = fail_on
        self.entries: dict[str, str] = {}

    def load(self, names: Iterable[str]) -> dict[str, str]:
        return {n: self.entries[n] for n in names if n in self.entries}

    def save(self, secrets: Mapping[str, str]) -> None:
        for name, value in secrets.items():
            if name == self.fail_on:
                raise GsvError(f"could not store {name}")
            self.entries[name] = value

    def delete(self, names: Iterable[str]) -> None:
        for name in names:
            self.entries.pop(name, None)


async def test_a_failed_store_write_is_undone(tmp_path: Path) -> None:
    """The store failing halfway through a write: the entries already written are put
    back as they were, the row and the live config are unchanged."""
    db = await Database.open(tmp_path / "gsv.db")
    try:
        vault = FlakyVault(fail_on="config.channels.slack.botToken")
        service = await ConfigService.load(ConfigStore(db), vault)
        await service.set("channels.slack.appToken", "xapp-old")
        await service.set("apiKeys.openai", "sk-kept")
        value = {"appToken": "xapp-new", "extraToken": "new-entry", "botToken": "xoxb-new"}
        with pytest.raises(GsvError, match=r"could not store config\.channels\.slack\.botToken"):
            await service.set("channels.slack", value)
        assert vault.entries == {
            "config.channels.slack.appToken": "xapp-old",
            "config.apiKeys.openai": "sk-kept",
        }
        assert service.setting("channels.slack.appToken") == "xapp-old"
        reloaded = await ConfigService.load(ConfigStore(db), vault)
        assert reloaded.overrides == service.overrides
    finally:
        await db.close()


# -- channel accounts ----------------------------------------------------------------------


async def test_call_time_channel_tokens_are_kept_in_the_store(
    tmp_path: Path, memory_keyring: MemoryKeyring
) -> None:
    """A token passed in channel.start's config goes to the store (the account row keeps
    a marker), comes back for the restart, and leaves the store at logout."""
    token, database = f"s3cr3t-{uuid.uuid4().hex}", tmp_path / "gsv.db"
    config = {"botToken": token, "mode": "polling"}
    async with gateway_at(database) as gw, GatewayClient(gw.url, token=gw.token) as client:
        await client.call(
            "channel.start", {"channel": "test", "accountId": "w.1", "config": config}
        )
        assert leaks([token], [tmp_path]) == []
    assert config_entries(memory_keyring) == {
        (keyring_service(), "channel.test.w%2E1.botToken"): token
    }
    async with gateway_at(database) as gw, GatewayClient(gw.url, token=gw.token) as client:
        assert [r.config for r in await gw.gateway.channels.accounts()] == [config]
        await client.call("channel.logout", {"channel": "test", "accountId": "w.1"})
    assert config_entries(memory_keyring) == {}


async def test_plain_text_channel_tokens_of_an_old_database_are_moved(
    tmp_path: Path, memory_keyring: MemoryKeyring
) -> None:
    """An account row an older gsv wrote with its token in plain text: the token moves
    to the store at start, the account still gets it, the database bytes lose it."""
    token, database = f"s3cr3t-{uuid.uuid4().hex}", tmp_path / "gsv.db"
    old_database(database, {})
    conn = sqlite3.connect(database, isolation_level=None)
    conn.execute(
        "INSERT INTO channel_accounts (channel, account_id, running, config) "
        "VALUES ('test', 'default', 1, ?)",
        (json.dumps({"appSecret": token}),),
    )
    conn.close()  # the last connection checkpoints the WAL into the file
    assert token.encode() in database.read_bytes()
    async with gateway_at(database) as gw:
        assert [r.config for r in await gw.gateway.channels.accounts()] == [{"appSecret": token}]
        assert leaks([token], [tmp_path]) == []
    assert config_entries(memory_keyring) == {
        (keyring_service(), "channel.test.default.appSecret"): token
    }


async def test_a_failed_migration_does_not_stop_the_gateway(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The store refusing the plain-text values at start: the config still loads with
    them, the rows stay as they were (the next start tries again), the error is logged."""
    database = tmp_path / "gsv.db"
    old_database(database, {"apiKeys": {"openai": "sk-plain"}})
    db = await Database.open(database)
    try:
        vault = FlakyVault("config.apiKeys.openai")
        service = await ConfigService.load(ConfigStore(db), vault)
        assert service.setting("apiKeys.openai") == "sk-plain"
        assert await ConfigStore(db).load() == {"apiKeys": {"openai": "sk-plain"}}
        vault.fail_on = "nothing"  # the store works again: the next write stores it first
        await service.set("apiKeys.google", "g-key")
        assert vault.entries == {
            "config.apiKeys.openai": "sk-plain",
            "config.apiKeys.google": "g-key",
        }
    finally:
        await db.close()
    assert any("could not move plain-text secrets" in r.getMessage() for r in caplog.records)


async def test_a_key_pool_is_kept_key_by_key_in_the_store_and_masked(
    gsv_home: Path, tmp_path: Path, memory_keyring: MemoryKeyring
) -> None:
    """`apiKeys.openai` as a list: each key its own store entry, no file holds one, reads
    show one mask a key, and a restarted gateway has the pool back in order."""
    keys = [f"sk-pool-{uuid.uuid4().hex}" for _ in range(3)]
    db_dir = tmp_path / "gw"
    async with gateway_at(db_dir / "gsv.db") as gw, GatewayClient(gw.url, token=gw.token) as client:
        await client.call("config.set", {"path": "apiKeys.openai", "value": keys})
        shown = await client.call("config.get", {"path": "apiKeys.openai"})
        assert shown["value"] == ["***", "***", "***"]
        assert leaks(keys, [gsv_home, db_dir]) == []
    names = [(keyring_service(), f"config.apiKeys.openai.{i}") for i in range(3)]
    assert [memory_keyring.store[name] for name in names] == keys
    async with gateway_at(db_dir / "gsv.db") as again:
        assert again.gateway.config.setting("apiKeys.openai") == keys


async def test_a_pool_written_back_with_masks_keeps_its_keys(
    tmp_path: Path, memory_keyring: MemoryKeyring
) -> None:
    """Writing back `["***", new]` (a read, edited) keeps the masked key and adds the new."""
    async with gateway_at(tmp_path / "gsv.db") as gw, GatewayClient(gw.url, token=gw.token) as c:
        await c.call("config.set", {"path": "apiKeys.openai", "value": ["sk-one", "sk-two"]})
        await c.call("config.set", {"path": "apiKeys.openai", "value": ["***", "sk-three"]})
        assert gw.gateway.config.setting("apiKeys.openai") == ["sk-one", "sk-three"]
