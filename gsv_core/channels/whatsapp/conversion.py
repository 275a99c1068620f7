"""WhatsApp's webhook payloads as gsv's: the messages in a payload, media kinds,
timestamps. Phone numbers become E.164 (`+15551234567`) where they are used."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

MAX_MEDIA_BYTES = 25 * 1024 * 1024
MEDIA_KINDS = {"image": "image", "sticker": "image", "audio": "audio", "video": "video",
               "document": "document"}  # fmt: skip


def messages_of(payload: Any) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(phone number id, change value, message) for every message of a webhook payload;
    delivery statuses and other fields are not conversation."""
    if not isinstance(payload, dict) or payload.get("object") != "whatsapp_business_account":
        return
    for entry in payload.get("entry") or []:
        for change in (entry or {}).get("changes") or []:
            value = (change or {}).get("value") or {}
            if change.get("field") != "messages" or not isinstance(value, dict):
                continue
            phone_number_id = str((value.get("metadata") or {}).get("phone_number_id") or "")
            for message in value.get("messages") or []:
                if isinstance(message, dict):
                    yield phone_number_id, value, message


def seconds_to_ms(timestamp: Any) -> int | None:
    try:
        return int(timestamp) * 1000
    except (TypeError, ValueError):
        return None
