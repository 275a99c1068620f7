"""The status bar names the model the next message will use (Pilot, real gateway, scripted
model): after a config change by another client, a `/model` switch, and a directive-only
`/model:p/id` that holds for one message."""

from __future__ import annotations

from gsv_cli.tui.app import ChatApp
from gsv_core.client import GatewayClient
from gsv_core.gateway.server import RunningGateway
from tests.fakes.provider import FakeProvider
from tests.tui.chat_screen import idle
from tests.tui.conftest import SIZE
from tests.tui.conftest import type_and_send
from tests.tui.conftest import wait_until

DEFAULT = "anthropic/claude-sonnet-4-20250514"


async def test_a_config_change_elsewhere_shows_at_once(app: ChatApp, gw: RunningGateway) -> None:
    """`gsv config set model ...` in another terminal: the header follows without a reload."""
    async with GatewayClient(gw.url, token=gw.token) as other, app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, app.synced.is_set, "the session to load")
        assert app.status.model == DEFAULT
        model = {"provider": "openai", "id": "gpt-5"}
        await other.call("config.set", {"path": "model", "value": model})
        await wait_until(pilot, lambda: app.status.model == "openai/gpt-5", "the new model")
        assert "openai/gpt-5 · think off" in app.status.render()


async def test_a_switch_and_a_one_message_model_show_in_the_header(
    app: ChatApp, client: GatewayClient, fake: FakeProvider
) -> None:
    """`/model p/id` switches the session; `/model:p/id` alone holds for the next message
    only, so the header shows it until that message has run."""
    fake.enqueue("answered")
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, app.synced.is_set, "the session to load")
        await type_and_send(pilot, "/model openai/gpt-5")
        await wait_until(pilot, lambda: app.status.model == "openai/gpt-5", "the switch")
        await type_and_send(pilot, "/model:google/gemini-pro")
        await wait_until(pilot, lambda: app.status.model == "google/gemini-pro", "the one-off")
        await type_and_send(pilot, "hello")
        await wait_until(pilot, lambda: fake.requests and idle(app), "the run")
        assert fake.requests[-1].model == "gemini-pro"
        await wait_until(pilot, lambda: app.status.model == "openai/gpt-5", "the session's own")


async def test_the_status_bar_shows_todays_spend_after_a_run(
    app: ChatApp, client: GatewayClient, fake: FakeProvider
) -> None:
    """Every run's cost lands in the usage ledger; the status bar shows the day's total."""
    dear = {"input": 100_000, "output": 100_000}  # the fake's 10 in, 5 out: 1.50 USD
    if not client.connected:
        await client.connect()
    await client.call("config.set", {"path": "pricing", "value": {DEFAULT.split("/")[1]: dear}})
    fake.enqueue("answered")
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, app.synced.is_set, "the session to load")
        assert "$0.00 today" in app.status.render()
        await type_and_send(pilot, "hello")
        await wait_until(pilot, lambda: "$1.50 today" in app.status.render(), "the spend")
