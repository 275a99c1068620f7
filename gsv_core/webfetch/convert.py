"""What came back, as text for the model: HTML as Markdown (markdownify over
BeautifulSoup, without scripts, styles and other non-content), or as plain text; JSON
pretty-printed; other text as it is. Binary content is not returned (its type and size
are)."""

from __future__ import annotations

import json
import re
from typing import Literal

from gsv_core.errors import ToolFailed
from gsv_core.webfetch.fetch import Fetched

Format = Literal["markdown", "text", "raw"]
HTML_TYPES = {"text/html", "application/xhtml+xml"}
TEXT_TYPES = {"application/xml", "application/javascript", "application/x-yaml",
              "application/yaml", "application/toml", ""}  # fmt: skip
# elements that are never page content
DROPPED = ["script", "style", "noscript", "template", "svg", "iframe", "head"]
_BLANK_RUNS = re.compile(r"\n{3,}")


def as_text(fetched: Fetched, fmt: Format) -> str:
    kind = fetched.content_type
    if not _is_text(kind):
        size = len(fetched.body)
        raise ToolFailed(f"{fetched.url} is {kind or 'binary'} ({size} bytes read), not text: "
                         "not returned")  # fmt: skip
    text = fetched.body.decode(fetched.charset or "utf-8", errors="replace")
    if fmt == "raw":
        return text
    if kind in HTML_TYPES:
        return _markdown(text) if fmt == "markdown" else _plain(text)
    if kind == "application/json" or kind.endswith("+json"):
        return _pretty_json(text)
    return text


def _is_text(kind: str) -> bool:
    return (kind.startswith("text/") or kind in HTML_TYPES or kind in TEXT_TYPES
            or kind == "application/json" or kind.endswith(("+json", "+xml")))  # fmt: skip


def _soup(html: str) -> object:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    for element in soup(DROPPED):
        element.decompose()
    return soup


def _markdown(html: str) -> str:
    from markdownify import MarkdownConverter

    text = MarkdownConverter(heading_style="ATX", bullets="-").convert_soup(_soup(html))
    return _BLANK_RUNS.sub("\n\n", text).strip() + "\n"


def _plain(html: str) -> str:
    soup = _soup(html)
    text = soup.get_text("\n")  # type: ignore[attr-defined]
    lines = (line.strip() for line in text.splitlines())
    return _BLANK_RUNS.sub("\n\n", "\n".join(lines)).strip() + "\n"


def _pretty_json(text: str) -> str:
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False) + "\n"
    except ValueError:
        return text  # not JSON after all: as it came
