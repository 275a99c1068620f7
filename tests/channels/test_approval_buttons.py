"""Approval prompts with buttons on messengers, end to end: a real gateway whose fake model
calls a tool the policy asks about (gsv__ReadFile, so no node is needed), the Telegram
adapter against the fake Bot API, the Slack adapter against the fake Slack, and Discord
through its seam. A press answers like a "yes"/"no" reply: only an owner, the same
approval, and the prompt is edited to say how it ended."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from collections.abc import Callable
from collections.abc import Iterator
from typing import Any

import pytest

from gsv_core.channels.discord import DiscordChannel
from gsv_core.channels.discord.seam import DiscordPress
from gsv_core.client import GatewayClient
from gsv_core.gateway.server import RunningGateway
from tests.fakes.discord_seam import ADA as DISCORD_ADA
from tests.fakes.discord_seam import BOB as DISCORD_BOB
from tests.fakes.discord_seam import GENERAL
from tests.fakes.discord_seam import TOKEN
from tests.fakes.discord_seam import FakeDiscord
from tests.fakes.discord_seam import dm
from tests.fakes.discord_seam import in_guild
from tests.fakes.provider import FakeProvider
from tests.fakes.provider import call
from tests.fakes.slack_api import ADA as SLACK_ADA
from tests.fakes.slack_api import APP_TOKEN
from tests.fakes.slack_api import BOB as SLACK_BOB
from tests.fakes.slack_api import BOT_TOKEN
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_api import fake_slack
from tests.fakes.telegram_api import ADA
from tests.fakes.telegram_api import BOB
from tests.fakes.telegram_api import ApiCall
from tests.fakes.telegram_api import FakeTelegramAPI
from tests.fakes.telegram_api import fake_telegram_api
from tests.fakes.telegram_api import group_chat
from tests.fakes.telegram_api import private_chat
from tests.waiting import until

NOT_OWNER = "Only the owner can approve this, in the conversation that asked."
ENDED = "That approval already ended."


async def ask_for_config_reads(
    client: GatewayClient, fake: FakeProvider, reply: str, timeout: int | None = None
) -> None:
    """A rule that makes gsv__ReadFile wait for a human (a tool a guest's run may call
    too), and a model that calls it, then says `reply`."""
    section: dict[str, Any] = {"rules": [{"tool": "gsv__ReadFile", "decision": "ask"}]}
    if timeout is not None:
        section["timeoutSeconds"] = timeout
    await client.call("config.set", {"path": "toolApproval", "value": section})
    fake.enqueue(call("gsv__ReadFile", {"path": "notes.md"}))
    fake.enqueue(reply)


async def pending(client: GatewayClient) -> list[dict[str, Any]]:
    approvals: list[dict[str, Any]] = (await client.call("tool.approvals"))["approvals"]
    return approvals


def model_saw(fake: FakeProvider, text: str) -> bool:
    return any(text in json.dumps(request.messages) for request in fake.requests)


# -- Telegram ------------------------------------------------------------------------------


@pytest.fixture
def api() -> Iterator[FakeTelegramAPI]:
    with fake_telegram_api() as server:
        yield server


async def start_telegram(client: GatewayClient, api: FakeTelegramAPI) -> None:
    value = {
        "botToken": api.token, "apiBaseUrl": api.url, "pollTimeout": 1, "dmPolicy": "open",
        "groups": {"requireMention": False}, "owners": [str(ADA["id"])],
        "sendRatePerMinute": 600,
    }  # fmt: skip
    await client.call("config.set", {"path": "channels.telegram", "value": value})
    await client.call("channel.start", {"channel": "telegram"})


async def called(api: FakeTelegramAPI, predicate: Callable[[ApiCall], bool]) -> ApiCall:
    return await asyncio.to_thread(api.wait_for, predicate)


async def telegram_prompt(api: FakeTelegramAPI) -> dict[str, Any]:
    """The approval prompt the bot sent (waits for it)."""
    await called(api, lambda c: c.method == "sendMessage" and "reply_markup" in c.params)
    return next(m for m in api.sent if "reply_markup" in m)


async def press(api: FakeTelegramAPI, message: dict[str, Any], data: str, **who: Any) -> Any:
    """Press a button; the answerCallbackQuery Telegram got for it."""
    query = api.press(message, data, **who)
    api.enqueue_update(callback_query=query)
    answer = await called(
        api, lambda c: c.method == "answerCallbackQuery"
        and c.params["callback_query_id"] == query["id"],
    )  # fmt: skip
    return answer.params.get("text")


def buttons(message: dict[str, Any]) -> list[tuple[str, str]]:
    rows = message["reply_markup"]["inline_keyboard"]
    return [(b["text"], b["callback_data"]) for row in rows for b in row]


async def test_telegram_prompt_has_buttons_and_the_owner_allows(
    client: GatewayClient, api: FakeTelegramAPI, fake: FakeProvider
) -> None:
    """The prompt carries Allow / Deny for its approval; the owner's Allow answers the
    press, the run finishes, and the prompt is edited to say Approved without buttons."""
    await ask_for_config_reads(client, fake, "The model is set.")
    await start_telegram(client, api)
    api.enqueue_update(message=api.message(private_chat(ADA), "which model?"))
    prompt = await telegram_prompt(api)
    [approval] = await pending(client)
    approval_id = approval["approvalId"]
    assert f"Approval needed ({approval_id})" in prompt["text"]
    assert buttons(prompt) == [
        ("Allow", f"approve:{approval_id}:allow"), ("Deny", f"approve:{approval_id}:deny"),
    ]  # fmt: skip
    assert await press(api, prompt, f"approve:{approval_id}:allow") == "Approved gsv__ReadFile."
    await called(api, lambda c: c.params.get("text") == "The model is set.")
    edited = await called(api, lambda c: c.method == "editMessageText")
    assert edited.params["message_id"] == prompt["message_id"]
    assert "Approved." in prompt["text"] and "reply_markup" not in prompt
    assert await pending(client) == []
    assert not model_saw(fake, "denied by user")


async def test_telegram_deny_refuses_the_call(
    client: GatewayClient, api: FakeTelegramAPI, fake: FakeProvider
) -> None:
    """Deny: the model gets "denied by user" and the prompt says Denied."""
    await ask_for_config_reads(client, fake, "Fine, I will not.")
    await start_telegram(client, api)
    api.enqueue_update(message=api.message(private_chat(ADA), "which model?"))
    prompt = await telegram_prompt(api)
    approval_id = (await pending(client))[0]["approvalId"]
    assert await press(api, prompt, f"approve:{approval_id}:deny") == "Denied gsv__ReadFile."
    await called(api, lambda c: c.params.get("text") == "Fine, I will not.")
    assert model_saw(fake, "denied by user")
    await called(api, lambda c: c.method == "editMessageText")
    assert "Denied." in prompt["text"] and "reply_markup" not in prompt


async def test_telegram_a_non_owner_in_a_group_cannot_approve(
    client: GatewayClient, api: FakeTelegramAPI, fake: FakeProvider
) -> None:
    """In a group, Bob asked; his own press is refused and the approval stays pending
    (with its buttons); the owner's press then approves it."""
    await ask_for_config_reads(client, fake, "Done for Bob.")
    await start_telegram(client, api)
    group = group_chat()
    api.enqueue_update(message=api.message(group, "read the model please", sender=BOB))
    prompt = await telegram_prompt(api)
    assert prompt["chat"]["id"] == group["id"]
    approval_id = (await pending(client))[0]["approvalId"]
    answer = await press(api, prompt, f"approve:{approval_id}:allow", sender=BOB)
    assert answer == NOT_OWNER
    assert [a["approvalId"] for a in await pending(client)] == [approval_id]
    assert "reply_markup" in prompt and api.calls_to("editMessageText") == []
    assert await press(api, prompt, f"approve:{approval_id}:allow") == "Approved gsv__ReadFile."
    await called(api, lambda c: c.params.get("text") == "Done for Bob.")


async def test_telegram_a_sub_agents_prompt_has_buttons_in_the_spawning_group(
    client: GatewayClient, api: FakeTelegramAPI, fake: FakeProvider
) -> None:
    """A sub-agent's call waits for a human: its prompt (saying it is a sub-agent's) goes
    with buttons to the group the parent was asked in; Bob's press is refused, the
    owner's approves, the prompt is edited, and the parent's answer follows."""
    rules = {"rules": [{"tool": "gsv__ConfigGet", "decision": "ask"}]}
    await client.call("config.set", {"path": "toolApproval", "value": rules})
    fake.enqueue(call("gsv__Spawn", {"task": "Read the model id", "tools": ["gsv__ConfigGet"]}))
    fake.enqueue(call("gsv__ConfigGet", {"path": "model.id"}))
    fake.enqueue("It is set.")
    fake.enqueue("The helper read it.")
    await start_telegram(client, api)
    group = group_chat()
    # the owner asks (a guest's run may not spawn sub-agents); Bob only presses
    api.enqueue_update(message=api.message(group, "ask a helper for the model"))
    prompt = await telegram_prompt(api)
    [approval] = await pending(client)
    assert ":spawn:" in approval["sessionKey"] and prompt["chat"]["id"] == group["id"]
    assert "sub-agent working on: Read the model id" in prompt["text"]
    data = f"approve:{approval['approvalId']}:allow"
    assert await press(api, prompt, data, sender=BOB) == NOT_OWNER
    assert await press(api, prompt, data) == "Approved gsv__ConfigGet."
    await called(api, lambda c: c.params.get("text") == "The helper read it.")
    await called(api, lambda c: c.method == "editMessageText")
    assert "Approved." in prompt["text"] and "reply_markup" not in prompt


async def test_telegram_a_press_on_a_settled_or_expired_approval_says_it_ended(
    client: GatewayClient, api: FakeTelegramAPI, fake: FakeProvider
) -> None:
    """An approval nobody answers expires closed (the model is told, the prompt says
    Expired); pressing its button afterwards says it already ended."""
    await ask_for_config_reads(client, fake, "Too late then.", timeout=1)
    await start_telegram(client, api)
    api.enqueue_update(message=api.message(private_chat(ADA), "which model?"))
    prompt = await telegram_prompt(api)
    approval_id = buttons(prompt)[0][1].split(":")[1]
    await called(api, lambda c: c.method == "editMessageText")
    assert "Expired" in prompt["text"] and "reply_markup" not in prompt
    await called(api, lambda c: c.params.get("text") == "Too late then.")
    assert model_saw(fake, "approval timed out")
    assert await press(api, prompt, f"approve:{approval_id}:allow") == ENDED


async def test_telegram_malformed_button_data_is_ignored(
    client: GatewayClient, api: FakeTelegramAPI, fake: FakeProvider
) -> None:
    """Presses with data that is not an approval button are answered with nothing and
    change nothing; the bot keeps answering messages."""
    await start_telegram(client, api)
    fake.enqueue("Hello.")
    api.enqueue_update(message=api.message(private_chat(ADA), "hi"))
    await called(api, lambda c: c.params.get("text") == "Hello.")
    message = api.sent[-1]
    for data in ("garbage", "approve:", "approve:abc123:maybe", "approve::allow"):
        assert await press(api, message, data) is None
    assert await press(api, message, "approve:abc123:deny") == ENDED
    fake.enqueue("Still here.")
    api.enqueue_update(message=api.message(private_chat(ADA), "you ok?"))
    await called(api, lambda c: c.params.get("text") == "Still here.")


# -- Slack ---------------------------------------------------------------------------------


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with fake_slack() as running:
        yield running


async def start_slack(client: GatewayClient, slack: FakeSlack) -> None:
    value = {
        "appToken": APP_TOKEN, "botToken": BOT_TOKEN, "apiBaseUrl": slack.api_url,
        "dmPolicy": "open", "groups": {"requireMention": False}, "owners": [SLACK_ADA],
    }  # fmt: skip
    await client.call("config.set", {"path": "channels.slack", "value": value})
    await client.call("channel.start", {"channel": "slack"})
    await slack.wait_for(lambda: slack.sessions >= 1)


async def slack_prompt(slack: FakeSlack) -> dict[str, Any]:
    await slack.wait_for(lambda: any("blocks" in m for m in slack.posted))
    return next(m for m in slack.posted if "blocks" in m)


def slack_buttons(posted: dict[str, Any]) -> list[dict[str, Any]]:
    [actions] = [b for b in posted["blocks"] if b["type"] == "actions"]
    elements: list[dict[str, Any]] = actions["elements"]
    return elements


async def slack_press(slack: FakeSlack, posted: dict[str, Any], action_id: str, user: str) -> str:
    """Press a button as `user`; the ephemeral answer they got."""
    before = len(slack.ephemeral)
    envelope = await slack.press(posted, action_id, user=user)
    await slack.wait_acked(envelope)
    await slack.wait_for(lambda: len(slack.ephemeral) > before)
    answer = slack.ephemeral[-1]
    assert answer["user"] == user and answer["channel"] == posted["channel"]
    return str(answer["text"])


async def test_slack_prompt_has_buttons_and_the_owner_allows(
    client: GatewayClient, slack: FakeSlack, fake: FakeProvider
) -> None:
    """The prompt is Block Kit with Allow (primary) / Deny (danger); the owner's press is
    acknowledged and answered, the run finishes, and chat.update drops the buttons."""
    await ask_for_config_reads(client, fake, "The model is set.")
    await start_slack(client, slack)
    await slack.send_event(slack.message("which model?"))
    prompt = await slack_prompt(slack)
    approval_id = (await pending(client))[0]["approvalId"]
    assert "Approval needed" in prompt["text"] and prompt["blocks"][0]["type"] == "section"
    assert [(b["text"]["text"], b["action_id"], b["style"]) for b in slack_buttons(prompt)] == [
        ("Allow", f"approve:{approval_id}:allow", "primary"),
        ("Deny", f"approve:{approval_id}:deny", "danger"),
    ]
    answer = await slack_press(slack, prompt, f"approve:{approval_id}:allow", SLACK_ADA)
    assert answer == "Approved gsv__ReadFile."
    await slack.wait_for(lambda: any(m["text"] == "The model is set." for m in slack.posted))
    await slack.wait_for(lambda: slack.updates())
    assert slack.updates()[0].params["ts"] == prompt["ts"]
    assert "Approved." in prompt["text"] and "blocks" not in prompt
    assert await pending(client) == []


async def test_slack_deny_and_a_non_owner_in_a_channel(
    client: GatewayClient, slack: FakeSlack, fake: FakeProvider
) -> None:
    """In a channel Bob asked: his press is refused and the approval stays pending; the
    owner's Deny refuses the call (the model sees "denied by user"); a later press says
    the approval already ended."""
    await ask_for_config_reads(client, fake, "Fine, I will not.")
    await start_slack(client, slack)
    await slack.send_event(
        slack.message("read the model", user=SLACK_BOB, channel="C0TEAM", channel_type="channel")
    )
    prompt = await slack_prompt(slack)
    assert prompt["channel"] == "C0TEAM"
    approval_id = (await pending(client))[0]["approvalId"]
    deny = f"approve:{approval_id}:deny"
    assert await slack_press(slack, prompt, deny, SLACK_BOB) == NOT_OWNER
    assert [a["approvalId"] for a in await pending(client)] == [approval_id]
    assert "blocks" in prompt and slack.updates() == []
    assert await slack_press(slack, prompt, deny, SLACK_ADA) == "Denied gsv__ReadFile."
    await slack.wait_for(lambda: any(m["text"] == "Fine, I will not." for m in slack.posted))
    assert model_saw(fake, "denied by user")
    await slack.wait_for(lambda: slack.updates())
    assert "Denied." in prompt["text"] and "blocks" not in prompt
    assert await slack_press(slack, prompt, deny, SLACK_ADA) == ENDED


async def test_slack_malformed_presses_are_acknowledged_and_ignored(
    client: GatewayClient, slack: FakeSlack, fake: FakeProvider
) -> None:
    """A press of an unknown button, or an interactive payload missing its parts, is
    acknowledged and answers nothing; messages still get through."""
    await start_slack(client, slack)
    fake.enqueue("Hello.")
    await slack.send_event(slack.message("hi"))
    await slack.wait_for(lambda: slack.posted)
    envelope = await slack.press(slack.posted[0], "not-ours", user=SLACK_ADA)
    await slack.wait_acked(envelope)
    await slack.send_raw({"envelope_id": "e-bad", "type": "interactive",
                          "payload": {"type": "block_actions", "actions": []}})  # fmt: skip
    await slack.wait_acked("e-bad")
    fake.enqueue("Still here.")
    await slack.send_event(slack.message("you ok?"))
    await slack.wait_for(lambda: any(m["text"] == "Still here." for m in slack.posted))
    assert slack.ephemeral == []


# -- Discord (through its seam) --------------------------------------------------------------


@pytest.fixture
async def discord_fake(gw: RunningGateway, client: GatewayClient) -> FakeDiscord:
    fake_discord = FakeDiscord()
    gw.gateway.channels.adapters["discord"] = DiscordChannel(fake_discord.build)
    value = {
        "botToken": TOKEN, "dmPolicy": "open", "groups": {"requireMention": False},
        "owners": [DISCORD_ADA.id], "sendRatePerMinute": 600,
    }  # fmt: skip
    await client.call("config.set", {"path": "channels.discord", "value": value})
    await client.call("channel.start", {"channel": "discord"})
    return fake_discord


def discord_press(
    fake_discord: FakeDiscord, index: int, custom_id: str, user: Any = DISCORD_ADA
) -> DiscordPress:
    sent = fake_discord.sent[index]
    kind = "dm" if sent.channel_id != GENERAL else "channel"
    return DiscordPress(custom_id, sent.channel_id, kind, user, fake_discord.message_id(index),
                        "general" if kind == "channel" else None)  # fmt: skip


async def test_discord_prompt_has_buttons_and_the_owner_allows(
    client: GatewayClient, discord_fake: FakeDiscord, fake: FakeProvider
) -> None:
    """The prompt goes out with Allow / Deny components; the owner's press is answered,
    the run finishes, and the prompt is edited to say Approved, without buttons."""
    await ask_for_config_reads(client, fake, "The model is set.")
    await discord_fake.inject(dm("which model?"))
    await until(lambda: any(s.actions for s in discord_fake.sent), "the prompt")
    index = next(i for i, s in enumerate(discord_fake.sent) if s.actions)
    approval_id = (await pending(client))[0]["approvalId"]
    assert [(a.label, a.id, a.style) for a in discord_fake.sent[index].actions] == [
        ("Allow", f"approve:{approval_id}:allow", "primary"),
        ("Deny", f"approve:{approval_id}:deny", "danger"),
    ]
    allow = discord_press(discord_fake, index, f"approve:{approval_id}:allow")
    assert await discord_fake.press(allow) == "Approved gsv__ReadFile."
    await until(lambda: "The model is set." in discord_fake.texts(), "the reply")
    await until(lambda: discord_fake.edits, "the prompt's edit")
    settled = discord_fake.sent[index]
    assert "Approved." in settled.text and settled.actions == ()


async def test_discord_a_non_owner_cannot_approve_and_deny_refuses(
    client: GatewayClient, discord_fake: FakeDiscord, fake: FakeProvider
) -> None:
    """In a server channel Bob's press is refused and the approval stays pending; the
    owner's Deny refuses the call; unknown button ids and later presses change nothing."""
    await ask_for_config_reads(client, fake, "Fine, I will not.")
    await discord_fake.inject(in_guild("read the model", "100000000000000009", author=DISCORD_BOB))
    await until(lambda: any(s.actions for s in discord_fake.sent), "the prompt")
    index = next(i for i, s in enumerate(discord_fake.sent) if s.actions)
    approval_id = (await pending(client))[0]["approvalId"]
    deny = f"approve:{approval_id}:deny"
    bob_press = discord_press(discord_fake, index, deny, DISCORD_BOB)
    assert await discord_fake.press(bob_press) == NOT_OWNER
    assert await discord_fake.press(discord_press(discord_fake, index, "approve:x")) is None
    assert [a["approvalId"] for a in await pending(client)] == [approval_id]
    assert await discord_fake.press(discord_press(discord_fake, index, deny)) == (
        "Denied gsv__ReadFile."
    )
    await until(lambda: "Fine, I will not." in discord_fake.texts(), "the reply")
    assert model_saw(fake, "denied by user")
    await until(lambda: discord_fake.edits, "the prompt's edit")
    assert await discord_fake.press(discord_press(discord_fake, index, deny)) == ENDED


async def test_telegram_stopping_the_run_cancels_the_prompt_at_once(
    client: GatewayClient, api: FakeTelegramAPI, fake: FakeProvider
) -> None:
    """/stop while the approval waits: the approval ends `cancelled` now (not at its
    deadline), the prompt says so and loses its buttons, and a late press says it ended."""
    await ask_for_config_reads(client, fake, "never said", timeout=3600)
    await start_telegram(client, api)
    api.enqueue_update(message=api.message(private_chat(ADA), "which model?"))
    prompt = await telegram_prompt(api)
    [approval] = await pending(client)
    api.enqueue_update(message=api.message(private_chat(ADA), "/stop"))
    edited = await called(api, lambda c: c.method == "editMessageText")
    assert edited.params["message_id"] == prompt["message_id"]
    assert "Cancelled: the run stopped." in prompt["text"] and "reply_markup" not in prompt
    assert await pending(client) == []
    assert await press(api, prompt, f"approve:{approval['approvalId']}:allow") == ENDED
    assert not model_saw(fake, "never said")
