"""The error answers of the providers gsv speaks, with their real bodies and headers, for
scripting the fake LLM server (tests/fakes/llm_server.py). Bodies and header names are
copied from answers of api.anthropic.com and api.openai.com (and Cloudflare's 502 page in
front of them); request ids and organisation names are made up."""

from __future__ import annotations

import json
from typing import Any

from tests.fakes.llm_turns import ErrorReply
from tests.fakes.llm_turns import StreamError

_ANTHROPIC_HEADERS = {"request-id": "req_011CTestRequestId", "x-should-retry": "true",
                      "anthropic-organization-id": "0f1e2d3c-test"}  # fmt: skip


def _anthropic(status: int, kind: str, message: str, **headers: str) -> ErrorReply:
    body = {"type": "error", "error": {"type": kind, "message": message},
            "request_id": "req_011CTestRequestId"}  # fmt: skip
    should_retry = "true" if status in (429, 500, 529) else "false"
    all_headers = {**_ANTHROPIC_HEADERS, "x-should-retry": should_retry, **headers}
    return ErrorReply(status, message, headers=all_headers, body=json.dumps(body))


def _openai(status: int, message: str, kind: str, code: str | None, **headers: str) -> ErrorReply:
    body: dict[str, Any] = {"error": {"message": message, "type": kind, "param": None,
                                      "code": code}}  # fmt: skip
    all_headers = {"x-request-id": "req_7f3e9test", "openai-processing-ms": "12", **headers}
    return ErrorReply(status, message, headers=all_headers, body=json.dumps(body))


ANTHROPIC_RATE_LIMIT = _anthropic(
    429,
    "rate_limit_error",
    "Number of request tokens has exceeded your per-minute rate limit "
    "(https://docs.anthropic.com/en/api/rate-limits); see the response headers for current "
    "usage. Please reduce the prompt length or the maximum tokens requested, or try again later.",
    **{"retry-after": "7", "anthropic-ratelimit-input-tokens-limit": "40000",
       "anthropic-ratelimit-input-tokens-remaining": "0",
       "anthropic-ratelimit-input-tokens-reset": "2026-11-28T16:00:07Z"},
)  # fmt: skip
ANTHROPIC_OVERLOADED = _anthropic(529, "overloaded_error", "Overloaded")
ANTHROPIC_API_ERROR = _anthropic(500, "api_error", "Internal server error")
ANTHROPIC_PROMPT_TOO_LONG = _anthropic(
    400, "invalid_request_error", "prompt is too long: 208310 tokens > 200000 maximum"
)
ANTHROPIC_BAD_KEY = _anthropic(401, "authentication_error", "invalid x-api-key")
ANTHROPIC_NO_MODEL = _anthropic(404, "not_found_error", "model: alpha-1")
# the `error` event Anthropic sends inside a 200 stream
ANTHROPIC_STREAM_OVERLOADED = StreamError("Overloaded", "overloaded_error")

OPENAI_RATE_LIMIT = _openai(
    429,
    "Rate limit reached for gpt-4o in organization org-test on tokens per min (TPM): "
    "Limit 30000, Used 29876, Requested 512. Please try again in 1.024s. Visit "
    "https://platform.openai.com/account/rate-limits to learn more.",
    "tokens",
    "rate_limit_exceeded",
    **{"retry-after": "2", "x-ratelimit-limit-tokens": "30000",
       "x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "1.024s"},
)  # fmt: skip
OPENAI_NO_QUOTA = _openai(
    429,
    "You exceeded your current quota, please check your plan and billing details. For more "
    "information on this error, read the docs: "
    "https://platform.openai.com/docs/guides/error-codes/api-errors.",
    "insufficient_quota",
    "insufficient_quota",
)
OPENAI_CONTEXT_LENGTH = _openai(
    400,
    "This model's maximum context length is 128000 tokens. However, your messages resulted "
    "in 130012 tokens. Please reduce the length of the messages.",
    "invalid_request_error",
    "context_length_exceeded",
)
OPENAI_SERVER_ERROR = _openai(
    500,
    "The server had an error while processing your request. Sorry about that!",
    "server_error",
    None,
)
OPENAI_BAD_GATEWAY = ErrorReply(
    502,
    "Bad Gateway",
    headers={"content-type": "text/html", "server": "cloudflare", "cf-ray": "8e1f0test-AMS"},
    body="<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 "
    "Bad Gateway</h1></center>\r\n<hr><center>cloudflare</center>\r\n</body>\r\n</html>\r\n",
)
OPENAI_UNAVAILABLE = _openai(
    503,
    "The engine is currently overloaded, please try again later.",
    "server_error",
    None,
    **{"retry-after": "1"},
)
OPENAI_BAD_KEY = _openai(
    401,
    "Incorrect API key provided: sk-proj-****************wxyz. You can find your API key at "
    "https://platform.openai.com/account/api-keys.",
    "invalid_request_error",
    "invalid_api_key",
)
# the error chunk OpenAI-compatible servers (OpenRouter, vLLM) send inside a 200 stream
OPENAI_STREAM_ERROR = StreamError("Upstream provider overloaded", "server_error")
# OpenRouter (OpenAI-compatible) out of credit: HTTP 402 with a numeric code
OPENROUTER_NO_CREDIT = ErrorReply(
    402,
    "Insufficient credits",
    body=json.dumps({"error": {"message": "Insufficient credits. Add more using "
                               "https://openrouter.ai/settings/credits", "code": 402}}),
)  # fmt: skip
