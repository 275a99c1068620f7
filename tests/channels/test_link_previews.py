"""No link previews on the agent's messages unless the owner turns them on, per channel
(issue 42.7): a platform that previews a link fetches it, so an injected
`https://evil/?d=<secret>` would leak with no tool call.

A real gateway with the scripted model; what each platform receives: the request bodies
the fake Telegram Bot API, the fake Slack and the fake Graph API (WhatsApp) get over real
HTTP, and what Discord's seam is asked (tests/channels/discord/test_real_client.py has
discord.py's own bodies). Every kind of message is covered: a gsv__Message send, an
approval prompt and its edit when it settles, the reply, a cron delivery, a heartbeat
alert."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from dataclasses import field
from typing import Any

import pytest

from gsv_core.channels.discord import DiscordChannel
from gsv_core.client import GatewayClient
from gsv_core.errors import InvalidParams
from gsv_core.gateway.server import RunningGateway
from tests.channels.test_approval_buttons import pending
from tests.channels.test_approval_buttons import until
from tests.channels.test_whatsapp import post
from tests.fakes import graph_api
from tests.fakes.discord_seam import ADA as DISCORD_ADA
from tests.fakes.discord_seam import TOKEN
from tests.fakes.discord_seam import FakeDiscord
from tests.fakes.discord_seam import dm
from tests.fakes.graph_api import CREDENTIALS
from tests.fakes.graph_api import FakeGraph
from tests.fakes.graph_api import fake_graph
from tests.fakes.graph_api import text_message
from tests.fakes.graph_api import webhook_body
from tests.fakes.provider import FakeProvider
from tests.fakes.provider import call
from tests.fakes.slack_api import ADA as SLACK_ADA
from tests.fakes.slack_api import APP_TOKEN
from tests.fakes.slack_api import BOT_TOKEN
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_api import fake_slack
from tests.fakes.telegram_api import ADA
from tests.fakes.telegram_api import FakeTelegramAPI
from tests.fakes.telegram_api import fake_telegram_api
from tests.fakes.telegram_api import private_chat

LINK = "https://evil.example/?d="
KINDS = ("note", "Approval needed", "reply", "cron", "beat")  # words in each kind
CHECKLIST = "# Heartbeat checklist\n\n- Check whether the nightly backup succeeded.\n"


@dataclass
class Platform:
    """One platform as the test drives it: how the owner writes, and what the platform
    received, each message or edit as (text, the field that turns its previews on or off)."""

    name: str
    owner: str
    settings: dict[str, Any]
    write: Callable[[str], Any]  # the owner writes to the agent (awaitable)
    messages: Callable[[], list[tuple[str, Any]]]
    edits: Callable[[], list[tuple[str, Any]]] = field(default=lambda: [])
    off: Any = None  # the field's value when previews are off ...
    on: Any = None  # ... and when they are on
    started: Callable[[], Any] | None = None  # waits until the account is connected


def telegram(api: FakeTelegramAPI) -> Platform:
    def bodies(method: str) -> list[tuple[str, Any]]:
        return [(str(c.params["text"]), c.params.get("link_preview_options"))
                for c in api.calls_to(method)]  # fmt: skip

    async def write(text: str) -> None:
        api.enqueue_update(message=api.message(private_chat(ADA), text))

    return Platform(
        "telegram", str(ADA["id"]),
        {"botToken": api.token, "apiBaseUrl": api.url, "pollTimeout": 1},
        write, lambda: bodies("sendMessage"), lambda: bodies("editMessageText"),
        off={"is_disabled": True}, on=None,  # None: left out, Telegram's default (a preview)
    )  # fmt: skip


def slack(fake_api: FakeSlack) -> Platform:
    def bodies(method: str) -> list[tuple[str, Any]]:
        return [(str(c.params["text"]), (c.params.get("unfurl_links"), c.params.get("unfurl_media")))
                for c in fake_api.calls if c.method == method]  # fmt: skip

    async def write(text: str) -> None:
        await fake_api.send_event(fake_api.message(text))

    async def started() -> None:
        await fake_api.wait_for(lambda: fake_api.sessions >= 1)

    return Platform(
        "slack", SLACK_ADA,
        {"appToken": APP_TOKEN, "botToken": BOT_TOKEN, "apiBaseUrl": fake_api.api_url},
        write, lambda: bodies("chat.postMessage"), lambda: bodies("chat.update"),
        off=(False, False), on=(True, True), started=started,
    )  # fmt: skip


def discord(seam: FakeDiscord) -> Platform:
    def edits() -> list[tuple[str, Any]]:
        # Discord takes no flags with an edit: the message keeps those it was sent with
        by_id = {seam.message_id(i): sent for i, sent in enumerate(seam.sent)}
        return [(text, by_id[message_id].suppress_embeds) for _, message_id, text in seam.edits]

    return Platform(
        "discord", DISCORD_ADA.id, {"botToken": TOKEN}, lambda text: seam.inject(dm(text)),
        lambda: [(s.text, s.suppress_embeds) for s in seam.sent], edits,
        off=True, on=False,  # suppress_embeds: the SUPPRESS_EMBEDS flag
    )  # fmt: skip


def whatsapp(graph: FakeGraph, gw: RunningGateway) -> Platform:
    async def write(text: str) -> None:
        status, _ = await post(gw, webhook_body(text_message(text)))
        assert status == 200

    return Platform(
        "whatsapp", graph_api.ADA, {**CREDENTIALS, "apiBaseUrl": graph.api_url}, write,
        lambda: [(b["text"]["body"], b["text"]["preview_url"]) for b in graph.sent],
        off=False, on=True,  # no buttons, so no edits
    )  # fmt: skip


async def make(name: str, stack: AsyncExitStack, gw: RunningGateway) -> Platform:
    if name == "telegram":
        return telegram(stack.enter_context(fake_telegram_api()))
    if name == "slack":
        return slack(await stack.enter_async_context(fake_slack()))
    if name == "whatsapp":
        return whatsapp(await stack.enter_async_context(fake_graph()), gw)
    seam = FakeDiscord()
    gw.gateway.channels.adapters["discord"] = DiscordChannel(seam.build)
    return discord(seam)


@pytest.fixture(params=["telegram", "slack", "discord", "whatsapp"])
async def platform(
    request: pytest.FixtureRequest, gw: RunningGateway, client: GatewayClient
) -> AsyncIterator[Platform]:
    """The platform's fake, and its channel running on the gateway with the owner set."""
    async with AsyncExitStack() as stack:
        found = await make(request.param, stack, gw)
        await start(client, found)
        yield found


async def start(client: GatewayClient, platform: Platform, **settings: Any) -> None:
    value = {**platform.settings, "dmPolicy": "pairing", "allowFrom": [platform.owner],
             "owners": [platform.owner], "sendRatePerMinute": 600, **settings}  # fmt: skip
    await client.call("config.set", {"path": f"channels.{platform.name}", "value": value})
    await client.call("channel.start", {"channel": platform.name})
    if platform.started is not None:
        await platform.started()


def texts(platform: Platform) -> list[str]:
    return [text for text, _ in platform.messages() + platform.edits()]


def has(platform: Platform, words: str) -> bool:
    return any(words in text for text in texts(platform))


async def every_kind_of_message(client: GatewayClient, fake: FakeProvider, p: Platform) -> None:
    """The owner writes; the agent sends a gsv__Message, asks before a tool (the approval
    prompt, edited once the approval settles where the platform has buttons) and replies;
    then a cron task and a heartbeat alert are delivered to the owner. Each carries a link."""
    rule = {"rules": [{"tool": "gsv__ConfigGet", "decision": "ask"}]}
    await client.call("config.set", {"path": "toolApproval", "value": rule})
    fake.enqueue(call("gsv__Message", {"text": f"note {LINK}1"}))
    fake.enqueue(call("gsv__ConfigGet", {"path": f"channels.{p.name}.linkPreviews"}))
    fake.enqueue(f"reply {LINK}2")
    await p.write("which setting?")
    await until(lambda: has(p, "Approval needed"), "the approval prompt")
    [approval] = await pending(client)
    await client.call("tool.approve", {"approvalId": approval["approvalId"], "decision": "allow"})
    await until(lambda: has(p, f"reply {LINK}2"), "the reply")
    if p.name != "whatsapp":
        await until(lambda: has(p, "Approved."), "the prompt's edit")
    fake.enqueue(f"cron {LINK}3")
    job = {"name": "report", "schedule": {"kind": "at", "atMs": int(time.time() * 1000) + 3_600_000},
           "spec": {"mode": "task", "message": "report", "deliver": True}}  # fmt: skip
    added = (await client.call("cron.add", job))["job"]
    await client.call("cron.run", {"id": added["id"], "mode": "force"})
    await until(lambda: has(p, f"cron {LINK}3"), "the cron delivery")
    await client.call("workspace.write", {"path": "HEARTBEAT.md", "content": CHECKLIST})
    fake.enqueue(f"beat {LINK}4")
    beat = await client.call("heartbeat.trigger", {})
    assert beat.get("deliveredTo", "").startswith(f"{p.name}:"), beat
    await until(lambda: has(p, f"beat {LINK}4"), "the heartbeat alert")
    assert [kind for kind in KINDS if not has(p, kind)] == []


def previews_of(platform: Platform) -> list[Any]:
    return [flag for _, flag in platform.messages() + platform.edits()]


async def test_the_agents_messages_go_out_without_link_previews(
    client: GatewayClient, fake: FakeProvider, platform: Platform
) -> None:
    """By default every message and edit reaches the platform with previews off: Telegram
    `link_preview_options.is_disabled`, Slack `unfurl_links` and `unfurl_media` false,
    Discord's SUPPRESS_EMBEDS flag, WhatsApp `preview_url` false."""
    await every_kind_of_message(client, fake, platform)
    sent = previews_of(platform)
    assert len(sent) >= len(KINDS) and sent == [platform.off] * len(sent), platform.messages()
    if platform.name != "whatsapp":
        assert platform.edits(), "the settled prompt was edited"


async def test_an_owner_turns_link_previews_on_for_a_running_channel(
    client: GatewayClient, fake: FakeProvider, platform: Platform
) -> None:
    """`channels.<name>.linkPreviews: true`, set while the channel runs, applies from the
    next message on, to every kind and to the prompt's edit."""
    path = f"channels.{platform.name}.linkPreviews"
    assert (await client.call("config.get", {"path": path}))["value"] is False
    await client.call("config.set", {"path": path, "value": True})
    await every_kind_of_message(client, fake, platform)
    sent = previews_of(platform)
    assert len(sent) >= len(KINDS) and sent == [platform.on] * len(sent), platform.messages()


async def test_link_previews_are_a_setting_of_each_channel(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider
) -> None:
    """Turned on for Telegram only: the owner's reply there has a preview, the one on
    Slack (setting left out) has none."""
    async with AsyncExitStack() as stack:
        on, off = await make("telegram", stack, gw), await make("slack", stack, gw)
        await start(client, on, linkPreviews=True)
        await start(client, off)
        for platform in (on, off):
            fake.enqueue(f"reply {LINK}{platform.name}")
            await platform.write("a link please")
            await until(lambda p=platform: has(p, f"reply {LINK}{p.name}"), "the reply")
        assert previews_of(on) == [on.on] and previews_of(off) == [off.off]


@pytest.mark.parametrize("value", ["yes", "true", 1, 0, [], {"on": True}])
async def test_a_link_previews_value_other_than_true_or_false_is_refused(
    client: GatewayClient, value: Any
) -> None:
    """config.set refuses it naming the setting, alone or in the channel's object;
    the setting keeps its value (false)."""
    path = "channels.discord.linkPreviews"
    with pytest.raises(InvalidParams, match=rf"{path} expects true or false"):
        await client.call("config.set", {"path": path, "value": value})
    whole = {"botToken": TOKEN, "linkPreviews": value}
    with pytest.raises(InvalidParams, match=rf"{path} expects true or false"):
        await client.call("config.set", {"path": "channels.discord", "value": whole})
    assert (await client.call("config.get", {"path": path}))["value"] is False
