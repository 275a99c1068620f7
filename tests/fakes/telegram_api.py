"""A fake Telegram Bot API server on 127.0.0.1, for driving python-telegram-bot (and so the
Telegram channel adapter) over real HTTP.

It is a stdlib `ThreadingHTTPServer` in a daemon thread. Point a bot at it with
`apiBaseUrl = server.url` (methods at `/bot<token>/<method>`, files at
`/file/bot<token>/<path>`, as on api.telegram.org).

    with fake_telegram_api() as api:
        chat = private_chat(ADA)
        api.enqueue_update(message=api.message(chat, "hello"))         # a user writes
        api.enqueue_update(message=api.message(chat, photo=api.photo(b"...")))
        api.fail_next("sendMessage", 429, "Too Many Requests: retry after 3", retry_after=3)
        api.drop_next("getUpdates", times=2)        # close the connection without answering
        ...
        api.calls_to("sendMessage")[-1].params       # what the bot sent
        api.enqueue_update(callback_query=api.press(api.sent[-1], "approve:ab12cd:allow"))
        api.wait_for(lambda call: call.method == "getUpdates" and ...)   # blocks (use to_thread)

Methods: getMe, getUpdates (long polling: answers as soon as an update at or past `offset`
is queued, else after `timeout` seconds, capped at MAX_POLL; updates below `offset` are
confirmed and forgotten, as Telegram does; `allowed_updates` is honoured), sendMessage
(validates `parse_mode="HTML"` the way Telegram does and enforces the 4,096-unit limit),
sendMessage keeps a `reply_markup` (inline keyboard) on the message it returns and in `sent`;
answerCallbackQuery (once per query, as Telegram allows); editMessageText (a message the
bot sent; without `reply_markup` the keyboard goes, as on Telegram) and
editMessageReplyMarkup; sendChatAction, getFile, deleteWebhook. Every call is recorded,
including rejected ones.
A token other than `server.token` gets 401 Unauthorized.
"""

from __future__ import annotations

import html
import itertools
import json
import re
import threading
import time
from collections import defaultdict
from collections import deque
from collections.abc import Callable
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qsl
from urllib.parse import unquote
from urllib.parse import urlsplit

from tests.fakes.quiet_http import QuietHTTPServer
from tests.waiting import WAIT

BOT_TOKEN = "7000001:AAH-fake-bot-token_for-tests-9z"
BOT_USER: dict[str, Any] = {
    "id": 7000001,
    "is_bot": True,
    "first_name": "GSV",
    "username": "gsv_test_bot",
    "can_join_groups": True,
    "can_read_all_group_messages": False,
    "supports_inline_queries": False,
}
ADA: dict[str, Any] = {
    "id": 1001,
    "is_bot": False,
    "first_name": "Ada",
    "last_name": "Lovelace",
    "username": "ada",
}
BOB: dict[str, Any] = {"id": 1002, "is_bot": False, "first_name": "Bob", "username": "bob"}
MAX_POLL = 10.0  # seconds a getUpdates may hang, whatever timeout the client asks for
MAX_TEXT = 4096

# values that Telegram takes as strings; everything else in a form body is JSON-encoded
_STRING_PARAMS = {"text", "caption", "parse_mode", "action", "file_id", "callback_query_id"}
_HTML_TAGS = {
    "b", "strong", "i", "em", "u", "ins", "s", "strike", "del", "span", "tg-spoiler",
    "a", "code", "pre", "blockquote", "tg-emoji",
}  # fmt: skip
_TAG = re.compile(r"<(/?)([a-zA-Z][\w-]*)((?:\s[^<>]*)?)>")
_ENTITY = re.compile(r"&(?:lt|gt|amp|quot|#\d+|#x[0-9a-fA-F]+);")


def private_chat(user: dict[str, Any]) -> dict[str, Any]:
    chat = {"id": user["id"], "type": "private", "first_name": user["first_name"]}
    if "username" in user:
        chat["username"] = user["username"]
    return chat


def group_chat(
    chat_id: int = -1001234, title: str = "Team", *, forum: bool = False
) -> dict[str, Any]:
    chat: dict[str, Any] = {"id": chat_id, "type": "supergroup", "title": title}
    if forum:
        chat["is_forum"] = True
    return chat


def channel_chat(chat_id: int = -1005678, title: str = "News") -> dict[str, Any]:
    return {"id": chat_id, "type": "channel", "title": title, "username": "news"}


def mention(text: str, handle: str) -> list[dict[str, Any]]:
    """The `mention` entity Telegram attaches for `handle` (e.g. "@gsv_test_bot") in text;
    offsets are in UTF-16 units, as the Bot API counts them."""
    at = text.index(handle)
    offset = len(text[:at].encode("utf-16-le")) // 2
    return [{"type": "mention", "offset": offset, "length": len(handle.encode("utf-16-le")) // 2}]


@dataclass(frozen=True)
class ApiCall:
    method: str
    params: dict[str, Any]
    token: str


@dataclass(frozen=True)
class _Fault:
    status: int | None  # None: drop the connection without an answer
    description: str = ""
    retry_after: int | None = None


class _ApiError(Exception):
    def __init__(self, status: int, description: str) -> None:
        super().__init__(description)
        self.status = status
        self.description = description


class FakeTelegramAPI:
    def __init__(self, token: str = BOT_TOKEN) -> None:
        self.token = token
        self.calls: list[ApiCall] = []
        self.sent: list[dict[str, Any]] = []  # messages the bot sent, as Telegram returned them
        self._updates: list[dict[str, Any]] = []
        self._files: dict[str, dict[str, Any]] = {}
        self._file_data: dict[str, bytes] = {}
        self._chats: dict[int, dict[str, Any]] = {}
        self._faults: dict[str, deque[_Fault]] = defaultdict(deque)
        self._update_ids = itertools.count(1)
        self._message_ids = itertools.count(100)
        self._file_ids = itertools.count(1)
        self._query_ids = itertools.count(1)
        self.answered: dict[str, dict[str, Any]] = {}  # callback query id -> the answer
        self._cond = threading.Condition()
        self._closing = False
        self._httpd = QuietHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self.port: int = self._httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    # -- scripting -----------------------------------------------------------------------

    def message(
        self,
        chat: dict[str, Any],
        text: str | None = None,
        *,
        sender: dict[str, Any] | None = ADA,
        **fields: Any,
    ) -> dict[str, Any]:
        """A Message object from a user in `chat`; `fields` adds any Bot API field
        (caption, entities, reply_to_message, message_thread_id, photo, voice, ...)."""
        with self._cond:
            self._chats[chat["id"]] = chat
            message_id = next(self._message_ids)
        message: dict[str, Any] = {"message_id": message_id, "date": int(time.time()), "chat": chat}
        if sender is not None:
            message["from"] = sender
        if text is not None:
            message["text"] = text
        message.update(fields)
        return message

    def enqueue_update(self, **update: Any) -> int:
        """Queue an update (`message=...`, `edited_message=...`, `channel_post=...`)."""
        with self._cond:
            update_id = next(self._update_ids)
            self._updates.append({"update_id": update_id, **update})
            self._cond.notify_all()
        return update_id

    def press(
        self, message: dict[str, Any], data: str, *, sender: dict[str, Any] = ADA
    ) -> dict[str, Any]:
        """A CallbackQuery: `sender` pressed the inline button carrying `data` under the
        bot's `message` (enqueue it as `callback_query=`)."""
        return {
            "id": f"cbq-{next(self._query_ids)}", "from": sender,
            "chat_instance": f"ci-{message['chat']['id']}", "message": message, "data": data,
        }  # fmt: skip

    def add_file(
        self, data: bytes, path: str, *, declared_size: int | None = None
    ) -> dict[str, Any]:
        """Store a downloadable file; returns the file fields a message refers to it by."""
        number = next(self._file_ids)
        file = {
            "file_id": f"file-{number}",
            "file_unique_id": f"unique-{number}",
            "file_size": len(data) if declared_size is None else declared_size,
        }
        with self._cond:
            self._files[file["file_id"]] = {**file, "file_path": path}
            self._file_data[path] = data
        return file

    def photo(self, data: bytes) -> list[dict[str, Any]]:
        """PhotoSize list: a thumbnail (other bytes) first, the full picture last."""
        thumb = self.add_file(b"thumbnail", f"photos/thumb-{len(self._files)}.jpg")
        full = self.add_file(data, f"photos/full-{len(self._files)}.jpg")
        return [{**thumb, "width": 90, "height": 60}, {**full, "width": 1280, "height": 853}]

    def voice(self, data: bytes, duration: int = 3) -> dict[str, Any]:
        file = self.add_file(data, f"voice/file-{len(self._files)}.oga")
        return {**file, "duration": duration, "mime_type": "audio/ogg"}

    def document(
        self, data: bytes, file_name: str, mime_type: str, *, declared_size: int | None = None
    ) -> dict[str, Any]:
        file = self.add_file(
            data, f"documents/file-{len(self._files)}", declared_size=declared_size
        )
        return {**file, "file_name": file_name, "mime_type": mime_type}

    def fail_next(
        self, method: str, status: int, description: str, *, retry_after: int | None = None
    ) -> None:
        """Answer the next call of `method` with an error (429 with `retry_after` too)."""
        with self._cond:
            self._faults[method].append(_Fault(status, description, retry_after))

    def drop_next(self, method: str, *, times: int = 1) -> None:
        """Close the connection of the next `times` calls of `method` without answering."""
        with self._cond:
            self._faults[method].extend(_Fault(None) for _ in range(times))

    # -- inspection ----------------------------------------------------------------------

    def calls_to(self, method: str) -> list[ApiCall]:
        with self._cond:
            return [call for call in self.calls if call.method == method]

    def wait_for(self, predicate: Callable[[ApiCall], bool], timeout: float = WAIT) -> ApiCall:
        """Block until a recorded call satisfies `predicate` (call it via asyncio.to_thread)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for call in self.calls:
                    if predicate(call):
                        return call
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError("the fake Telegram API never saw the expected call")
                self._cond.wait(remaining)

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        with self._cond:
            self._closing = True
            self._cond.notify_all()  # release long polls
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    # -- the server side -----------------------------------------------------------------

    def _record(self, call: ApiCall) -> _Fault | None:
        with self._cond:
            self.calls.append(call)
            self._cond.notify_all()
            if call.token != self.token:
                return _Fault(401, "Unauthorized")
            faults = self._faults.get(call.method)
            return faults.popleft() if faults else None

    def _answer(self, method: str, params: dict[str, Any]) -> Any:
        handler = getattr(self, f"_api_{method}", None)
        if handler is None:
            raise _ApiError(404, "Not Found")
        return handler(params)

    def _api_getMe(self, params: dict[str, Any]) -> Any:
        return BOT_USER

    def _api_deleteWebhook(self, params: dict[str, Any]) -> Any:
        return True

    def _api_sendChatAction(self, params: dict[str, Any]) -> Any:
        if "chat_id" not in params or "action" not in params:
            raise _ApiError(400, "Bad Request: chat_id and action are required")
        return True

    def _api_getUpdates(self, params: dict[str, Any]) -> Any:
        offset = params.get("offset")
        limit = int(params.get("limit") or 100)
        allowed = params.get("allowed_updates") or None
        deadline = time.monotonic() + min(float(params.get("timeout") or 0), MAX_POLL)
        with self._cond:
            if offset is not None:  # everything below the offset is confirmed
                self._updates = [u for u in self._updates if u["update_id"] >= offset]
            while True:
                ready = [u for u in self._updates if _allowed(u, allowed)][:limit]
                remaining = deadline - time.monotonic()
                if ready or self._closing or remaining <= 0:
                    return ready
                self._cond.wait(remaining)

    def _api_sendMessage(self, params: dict[str, Any]) -> Any:
        text = str(params.get("text") or "")
        visible = visible_text(text) if params.get("parse_mode") == "HTML" else text
        if not visible.strip():
            raise _ApiError(400, "Bad Request: message text is empty")
        if len(visible.encode("utf-16-le")) // 2 > MAX_TEXT:
            raise _ApiError(400, "Bad Request: message is too long")
        chat_id = params["chat_id"]
        with self._cond:
            chat = self._chats.get(chat_id) or _unknown_chat(chat_id)
            message: dict[str, Any] = {
                "message_id": next(self._message_ids),
                "from": BOT_USER,
                "chat": chat,
                "date": int(time.time()),
                "text": visible,
            }
            if params.get("message_thread_id") is not None:
                message["message_thread_id"] = params["message_thread_id"]
                message["is_topic_message"] = True
            if params.get("reply_markup"):
                message["reply_markup"] = _inline_keyboard(params["reply_markup"])
            self.sent.append(message)
        return message

    def _api_answerCallbackQuery(self, params: dict[str, Any]) -> Any:
        query_id = str(params.get("callback_query_id") or "")
        with self._cond:
            if not query_id.startswith("cbq-") or query_id in self.answered:
                raise _ApiError(400, "Bad Request: query is too old and response timeout "
                                     "expired or query ID is invalid")  # fmt: skip
            self.answered[query_id] = params
        return True

    def _api_editMessageText(self, params: dict[str, Any]) -> Any:
        text = str(params.get("text") or "")
        visible = visible_text(text) if params.get("parse_mode") == "HTML" else text
        if not visible.strip():
            raise _ApiError(400, "Bad Request: message text is empty")
        with self._cond:
            message = self._sent_message(params)
            if message["text"] == visible and "reply_markup" not in message:
                raise _ApiError(400, "Bad Request: message is not modified")
            message["text"] = visible
            self._set_markup(message, params.get("reply_markup"))
            return dict(message)

    def _api_editMessageReplyMarkup(self, params: dict[str, Any]) -> Any:
        with self._cond:
            message = self._sent_message(params)
            self._set_markup(message, params.get("reply_markup"))
            return dict(message)

    def _sent_message(self, params: dict[str, Any]) -> dict[str, Any]:
        for message in self.sent:
            if (message["chat"]["id"], message["message_id"]) == (
                params.get("chat_id"), params.get("message_id"),
            ):  # fmt: skip
                return message
        raise _ApiError(400, "Bad Request: message to edit not found")

    def _set_markup(self, message: dict[str, Any], markup: Any) -> None:
        if markup:
            message["reply_markup"] = _inline_keyboard(markup)
        else:
            message.pop("reply_markup", None)

    def _api_getFile(self, params: dict[str, Any]) -> Any:
        with self._cond:
            file = self._files.get(str(params.get("file_id")))
        if file is None:
            raise _ApiError(400, "Bad Request: invalid file_id")
        return file

    def _file_bytes(self, path: str) -> bytes | None:
        with self._cond:
            return self._file_data.get(path)


def _inline_keyboard(markup: Any) -> dict[str, Any]:
    """An InlineKeyboardMarkup as Telegram keeps it; refuses what Telegram refuses."""
    markup = json.loads(markup) if isinstance(markup, str) else markup
    rows = markup.get("inline_keyboard") if isinstance(markup, dict) else None
    if not isinstance(rows, list) or not all(isinstance(row, list) for row in rows):
        raise _ApiError(400, "Bad Request: can't parse reply keyboard markup JSON object")
    for button in (b for row in rows for b in row):
        data = button.get("callback_data")
        if not button.get("text") or data is None or not 1 <= len(data.encode()) <= 64:
            raise _ApiError(400, "Bad Request: BUTTON_DATA_INVALID")
    return {"inline_keyboard": rows}


def _unknown_chat(chat_id: Any) -> dict[str, Any]:
    if isinstance(chat_id, int) and chat_id > 0:
        return {"id": chat_id, "type": "private", "first_name": "User"}
    return {"id": chat_id, "type": "supergroup", "title": "Group"}


def _allowed(update: dict[str, Any], allowed: list[str] | None) -> bool:
    return allowed is None or any(kind in update for kind in allowed)


def visible_text(text: str) -> str:
    """The visible text of a parse_mode=HTML message; rejects what Telegram rejects."""
    stack: list[str] = []
    out: list[str] = []
    pos = 0
    while pos < len(text):
        char = text[pos]
        if char == "<":
            tag = _TAG.match(text, pos)
            if tag is None:
                raise _ApiError(400, f"Bad Request: can't parse entities: unexpected < at {pos}")
            name = tag.group(2).lower()
            if name not in _HTML_TAGS:
                raise _ApiError(
                    400, f'Bad Request: can\'t parse entities: Unsupported start tag "{name}"'
                )
            if not tag.group(1):
                stack.append(name)
            elif not stack or stack.pop() != name:
                raise _ApiError(400, f'Bad Request: can\'t parse entities: bad end tag "{name}"')
            pos = tag.end()
        elif char == "&":
            entity = _ENTITY.match(text, pos)
            if entity is None:
                raise _ApiError(400, f"Bad Request: can't parse entities: bare & at {pos}")
            out.append(html.unescape(entity.group(0)))
            pos = entity.end()
        elif char == ">":
            raise _ApiError(400, f"Bad Request: can't parse entities: bare > at {pos}")
        else:
            out.append(char)
            pos += 1
    if stack:
        raise _ApiError(400, f'Bad Request: can\'t parse entities: unclosed tag "{stack[-1]}"')
    return "".join(out)


def _decode_params(pairs: list[tuple[str, str]]) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for key, value in pairs:
        if key in _STRING_PARAMS:
            params[key] = value
            continue
        try:
            params[key] = json.loads(value)
        except ValueError:
            params[key] = value
    return params


@contextmanager
def fake_telegram_api(token: str = BOT_TOKEN) -> Iterator[FakeTelegramAPI]:
    server = FakeTelegramAPI(token)
    server.start()
    try:
        yield server
    finally:
        server.close()


def _handler_for(server: FakeTelegramAPI) -> type[BaseHTTPRequestHandler]:
    class Handler(_Handler):
        owner = server

    return Handler


_METHOD_PATH = re.compile(r"/bot([^/]+)/(\w+)")
_FILE_PATH = re.compile(r"/file/bot([^/]+)/(.+)")


class _Handler(BaseHTTPRequestHandler):
    owner: FakeTelegramAPI
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # as llm_server.py: no ~40 ms stall per answer

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    def do_GET(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def _dispatch(self) -> None:
        parts = urlsplit(self.path)
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        file = _FILE_PATH.fullmatch(unquote(parts.path))  # PTB quotes the ":" of the token
        if file:
            self._serve_file(file.group(1), file.group(2))
            return
        route = _METHOD_PATH.fullmatch(parts.path)
        if route is None:
            self._send_json(404, {"ok": False, "error_code": 404, "description": "Not Found"})
            return
        params = _decode_params(parse_qsl(parts.query) + self._body_pairs(body))
        fault = self.owner._record(ApiCall(route.group(2), params, route.group(1)))
        if fault is not None:
            self._fail(fault)
            return
        try:
            result = self.owner._answer(route.group(2), params)
        except _ApiError as err:
            self._send_error(err.status, err.description)
            return
        self._send_json(200, {"ok": True, "result": result})

    def _body_pairs(self, body: bytes) -> list[tuple[str, str]]:
        if not body:
            return []
        if "json" in self.headers.get("content-type", ""):
            return [
                (k, v if isinstance(v, str) else json.dumps(v)) for k, v in json.loads(body).items()
            ]
        return parse_qsl(body.decode(), keep_blank_values=True)

    def _serve_file(self, token: str, path: str) -> None:
        data = self.owner._file_bytes(path) if token == self.owner.token else None
        if data is None:
            self._send_error(404, "Not Found")
            return
        self._send(200, "application/octet-stream", data)

    def _fail(self, fault: _Fault) -> None:
        if fault.status is None:
            self.close_connection = True  # hang up without a status line
            return
        extra = {"parameters": {"retry_after": fault.retry_after}} if fault.retry_after else {}
        self._send_error(fault.status, fault.description, extra)

    def _send_error(
        self, status: int, description: str, extra: dict[str, Any] | None = None
    ) -> None:
        payload = {"ok": False, "error_code": status, "description": description, **(extra or {})}
        self._send_json(status, payload)

    def _send_json(self, status: int, payload: Any) -> None:
        self._send(status, "application/json", json.dumps(payload).encode())

    def _send(self, status: int, content_type: str, data: bytes) -> None:
        try:
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (a cancelled long poll)
