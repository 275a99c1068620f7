"""`gsv chat`: talk to the agent.

    gsv chat [-s SESSION]                        the full-screen chat (in a terminal)
    gsv chat "message" [-s SESSION] [--json]    one message, the reply streamed to stdout
    echo "message" | gsv chat -                  the message from stdin

The reply streams to stdout as it arrives, rendered as Markdown on a terminal and left as
the model's raw text when piped; tool activity goes to stderr, one line per call. A call
that needs your approval is asked on the terminal (allow once, always allow its program,
deny); without a terminal the prompt says how to answer with `gsv approvals`. Exit 0 when
the run ends with a final answer, 1 on an error (also from a command such as
`/think bad`), 130 on Ctrl-C (which stops the run first). `--json` prints the chat.send
result and then every event of the run as JSON lines.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING
from typing import Annotated
from typing import Any

import typer

from gsv_cli import output
from gsv_cli.state import CliState

if TYPE_CHECKING:
    from gsv_core.client import GatewayClient
    from gsv_core.protocol.frames import EventFrame


def chat(
    ctx: typer.Context,
    message: Annotated[
        str | None, typer.Argument(help='The message ("-" reads it from stdin).')
    ] = None,
    session: Annotated[
        str | None,
        typer.Option("--session", "-s", help="Session key, whole: a new key starts a new session."),
    ] = None,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print every event as a JSON line.")
    ] = False,
) -> None:
    """Send MESSAGE to the agent and stream the reply; without one, open the chat."""
    from gsv_cli.runner import run

    state: CliState = ctx.obj
    if message is None and not state.wants_json(json_output) and _interactive():
        open_chat(state, session)
        return
    text = _message_text(message)
    key = _session_key(session)
    code = run(lambda: _one_shot(state, key, text, state.wants_json(json_output)))
    raise typer.Exit(code)


def _interactive() -> bool:
    return sys.stdin.isatty() and sys.stdout.isatty()


def open_chat(state: CliState, session: str | None) -> None:
    """The full-screen chat TUI on SESSION (`gsv chat`, `gsv up`); its log goes to
    logs/chat.log, never to the screen."""
    from gsv_cli.logsetup import configure_logging
    from gsv_cli.runner import run
    from gsv_cli.tui.app import run_chat
    from gsv_core.paths import resolve_paths

    key = _session_key(session)
    configure_logging(resolve_paths().log_file("chat"), stderr=False)
    run(lambda: run_chat(state.url(), state.token(), key))


def _message_text(message: str | None) -> str:
    if message == "-" or (message is None and not sys.stdin.isatty()):
        text = sys.stdin.read()
    elif message is None:
        output.fail(
            'give a message: gsv chat "hello" (or pipe one in: echo hello | gsv chat -); '
            "without one, gsv chat opens the full-screen chat when run in a terminal"
        )
    else:
        text = message
    if not text.strip():
        output.fail("the message is empty")
    return text.strip("\n")


def _session_key(flag: str | None) -> str:
    from gsv_core.localconfig import load_local_config
    from gsv_core.routing import cli_session_key

    configured = load_local_config().get("session.default_key")
    return cli_session_key(flag if flag is not None else configured)


async def _one_shot(state: CliState, key: str, text: str, as_json: bool) -> int:
    import contextlib
    import uuid

    from gsv_cli.runner import gateway_client
    from gsv_core.errors import GsvError
    from gsv_core.protocol.methods import CHAT_SEND
    from gsv_core.protocol.methods import CHAT_SUBSCRIBE

    run_id = str(uuid.uuid4())
    async with gateway_client(state) as client:
        printer = _Printer(as_json)
        events = client.events()  # subscribe before sending: no delta may be missed
        # only this session's conversation: a busy gateway's other sessions are not
        # streamed to a script that follows one reply (an older gateway without the
        # method sends them all, and they are skipped by run id)
        with contextlib.suppress(GsvError):
            await client.call(CHAT_SUBSCRIBE, {"sessionKeys": [key]})
        result = await client.call(CHAT_SEND, {"sessionKey": key, "message": text, "runId": run_id})
        if as_json:
            output.print_json_line(result)
        if result.get("status") != "started" and not result.get("queued"):
            return _print_immediate(result, as_json)
        if result.get("status") == "paused" and not as_json:
            # queued while an approval waits: say so, then follow the message's own run
            output.print_hint(str(result.get("response", "")))
        try:
            return await printer.follow(events, run_id, client)
        except BaseException:
            await _stop_run(client, key)
            raise


def _print_immediate(result: dict[str, Any], as_json: bool) -> int:
    """Commands and directive-only messages answer at once."""
    if not as_json:
        if result.get("response"):
            output.write_text(str(result["response"]).rstrip("\n") + "\n")
        if result.get("error"):
            output.print_error(str(result["error"]))
    return 1 if result.get("error") else 0


async def _stop_run(client: GatewayClient, key: str) -> None:
    """Ctrl-C: stop the run we started rather than leave it working unseen."""
    import asyncio
    import contextlib

    from gsv_core.errors import GsvError
    from gsv_core.protocol.methods import CHAT_SEND

    with contextlib.suppress(GsvError, asyncio.CancelledError, TimeoutError):
        await client.call(CHAT_SEND, {"sessionKey": key, "message": "/stop"}, timeout=5)


class _Printer:
    """Renders one run's events: the reply to stdout (gsv_cli/reply.py), tool lines to
    stderr."""

    def __init__(self, as_json: bool) -> None:
        from gsv_cli.reply import reply_writer

        self.as_json = as_json
        self.reply = reply_writer()

    async def follow(self, events: Any, run_id: str, client: GatewayClient) -> int:
        from gsv_core.errors import ConnectionClosed
        from gsv_core.protocol.events import TOOL_APPROVAL

        try:
            async for frame in events:
                payload = frame.payload if isinstance(frame.payload, dict) else {}
                if payload.get("runId") != run_id:
                    continue
                if frame.event == TOOL_APPROVAL and payload.get("state") == "pending":
                    self.reply.end()
                    await _approve(client, payload, not self.as_json and _interactive())
                done = self.show(frame)
                if done is not None:
                    return done
        finally:  # also on Ctrl-C: a live Markdown display hides the cursor until it ends
            self.reply.end()
        raise ConnectionClosed("the connection to the gateway closed before the reply ended")

    def show(self, frame: EventFrame) -> int | None:
        from gsv_core.protocol import events

        payload: dict[str, Any] = frame.payload
        if self.as_json:
            output.print_json_line({"event": frame.event, **payload})
            return _outcome(payload.get("state"))
        if frame.event == events.CHAT_TOOL:
            self._tool(payload.get("tool") or {})
            return None
        state = payload.get("state")
        if frame.event == events.SESSION_NOTICE:
            self.reply.end()
            output.print_hint(str(payload.get("text", "")))  # e.g. which model answered
            return None
        if state == events.CHAT_DELTA and payload.get("replace"):
            self.reply.replace(str(payload.get("text", "")))
        elif state == events.CHAT_DELTA:
            self.reply.add(str(payload.get("text", "")))
        elif state in (events.CHAT_PARTIAL, events.CHAT_FINAL, events.CHAT_ERROR):
            self.reply.end()
        if state == events.CHAT_ERROR:
            output.print_error(str(payload.get("error", "the run failed")))
        return _outcome(state)

    def _tool(self, tool: dict[str, Any]) -> None:
        if tool.get("phase") != "end":
            return
        self.reply.end()
        name = str(tool.get("name", "?"))
        took = f"{tool.get('durationMs', 0)} ms"
        if tool.get("isError"):
            output.print_hint(f"[tool] {name} failed ({took}): {tool.get('summary', '')}")
        else:
            output.print_hint(f"[tool] {name} ({took})")


def _outcome(state: object) -> int | None:
    """The exit code a chat event's state ends the run with (None: not ended)."""
    from gsv_core.protocol import events

    return {events.CHAT_FINAL: 0, events.CHAT_ERROR: 1}.get(str(state))


async def _approve(client: GatewayClient, approval: dict[str, Any], interactive: bool) -> None:
    """Ask on the terminal: once, always (when a rule is offered), or deny. Without a
    terminal, say how to answer from another shell."""
    import asyncio

    from gsv_core.errors import GsvError
    from gsv_core.protocol.methods import TOOL_APPROVE

    approval_id, rules = approval["approvalId"], approval.get("alwaysAllow") or []
    output.print_hint(f"Approval needed ({approval_id}): {approval.get('tool')}")
    output.print_hint(f"  {str(approval.get('summary', ''))[:400]}")
    output.print_hint(f"  why: {approval.get('reason', '')}")
    if not interactive:
        output.print_hint(f"  answer: gsv approvals approve {approval_id} | deny {approval_id}")
        return
    always = f" / [a]lways allow {', '.join(rules)}" if rules else ""
    question = f"Allow? [o]nce{always} / [d]eny: "
    answer = (await asyncio.to_thread(_read_answer, question)).strip().lower()[:1]
    params: dict[str, Any] = {"approvalId": approval_id, "decision": "allow"}
    if answer == "a" and rules:
        params["remember"] = "always"
    elif answer != "o":
        params["decision"] = "deny"
    try:
        await client.call(TOOL_APPROVE, params)
    except GsvError as exc:
        output.print_error(f"cannot answer the approval: {exc.message}")


def _read_answer(question: str) -> str:
    sys.stderr.write(question)
    sys.stderr.flush()
    return sys.stdin.readline()
