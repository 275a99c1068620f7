"""The gateway calls the chat TUI makes about models: the writes that configure a
provider (those `gsv onboard` makes, from `gsv_cli.provider_setup`), list its models and
make the one tiny live test call with them unsaved, save them with the model once it
answered, and switch a session's model. A failed try saves nothing: a working setup
stays as it was.

Keys go to the gateway in `config.set` and live in its secret store; nothing here logs
or keeps them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gsv_cli.provider_setup import config_writes
from gsv_core.client import GatewayClient
from gsv_core.protocol import methods as m

LIST_TIMEOUT = 60.0  # the gateway gives the provider 15 s; a slow link gets the rest
TEST_TIMEOUT = 90.0  # the gateway gives the test call 60 s
WRITE_TIMEOUT = 30.0


@dataclass(frozen=True)
class TrialAnswer:
    reply: str
    ms: int


def provider_writes(name: str, base_url: str | None, key: str | None) -> dict[str, Any]:
    """The config writes that configure provider `name`, not made yet (InvalidParams for
    a bad base URL)."""
    return dict(config_writes(name, base_url, key))


async def list_models(
    client: GatewayClient, provider: str, trial: dict[str, Any] | None = None
) -> list[str]:
    """The model ids `provider` offers, with the `trial` writes unsaved (ProviderFailed
    says why not, with the fix)."""
    params = {"provider": provider, "settings": trial or None}
    listed = await client.call(m.MODELS_LIST, params, timeout=LIST_TIMEOUT)
    return [str(model) for model in listed.get("models") or []]


async def try_model(
    client: GatewayClient, provider: str, model: str, trial: dict[str, Any] | None = None
) -> TrialAnswer:
    """One tiny live call to `provider`/`model` (with the `trial` writes, unsaved): its
    answer and how long it took."""
    params = {"provider": provider, "model": model, "settings": trial or None}
    result = await client.call(m.MODELS_TEST, params, timeout=TEST_TIMEOUT)
    return TrialAnswer(str(result.get("reply") or ""), int(result.get("ms") or 0))


async def save_model(
    client: GatewayClient, provider: str, model: str, writes: dict[str, Any] | None = None
) -> None:
    """Save the provider's `writes`, then make `provider`/`model` the gateway's configured
    model (every session's default)."""
    for path, value in (writes or {}).items():
        await client.call(m.CONFIG_SET, {"path": path, "value": value}, timeout=WRITE_TIMEOUT)
    value = {"provider": provider, "id": model}
    await client.call(m.CONFIG_SET, {"path": "model", "value": value}, timeout=WRITE_TIMEOUT)


async def switch_model(client: GatewayClient, key: str, provider: str, model: str) -> None:
    """Make session `key` use `provider`/`model` from its next message on."""
    settings = {"model": {"provider": provider, "id": model}}
    params = {"sessionKey": key, "settings": settings}
    await client.call(m.SESSION_PATCH, params, timeout=WRITE_TIMEOUT)
