"""Agent Markdown as Telegram HTML, and splitting under the limit in UTF-16 units."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from gsv_core.channels.telegram.formatting import format_html
from gsv_core.channels.telegram.formatting import split_text
from gsv_core.channels.telegram.formatting import utf16_len
from tests.fakes.telegram_api import visible_text


@pytest.mark.parametrize(
    ("markdown", "html"),
    [
        ("x < y && z > w", "x &lt; y &amp;&amp; z &gt; w"),
        ("**bold** *it* _it_ ~~gone~~", "<b>bold</b> <i>it</i> <i>it</i> <s>gone</s>"),
        ("a snake_case_name, __init__ and 2*3*4", "a snake_case_name, __init__ and 2*3*4"),
        ("use `a<b>` now", "use <code>a&lt;b&gt;</code> now"),
        ("[docs](https://ex.com/?a=1&b=2)", '<a href="https://ex.com/?a=1&amp;b=2">docs</a>'),
        ("[x](javascript:alert(1))", "[x](javascript:alert(1))"),
        ("# Title\n- one\n* two", "<b>Title</b>\n• one\n• two"),
        ("> quoted\n> more\nafter", "<blockquote>quoted\nmore</blockquote>\nafter"),
        (
            "```python\nif a < b:\n    pass\n```\ndone",
            '<pre><code class="language-python">if a &lt; b:\n    pass</code></pre>\ndone',
        ),
        ("```\nnever closed <x>", "<pre>never closed &lt;x&gt;</pre>"),
        ("**a _b** c_", "<b>a _b</b> c_"),
    ],
)
def test_markdown_becomes_telegram_html(markdown: str, html: str) -> None:
    """Escaping, emphasis, code, links, headings, lists, quotes and fences convert safely."""
    assert format_html(markdown) == html


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(st.text())
def test_formatted_text_is_always_accepted_and_never_longer(markdown: str) -> None:
    """Any input yields HTML Telegram accepts, whose visible text fits where the input did."""
    visible = visible_text(format_html(markdown))
    assert utf16_len(visible) <= utf16_len(markdown)


def test_split_prefers_boundaries_and_counts_utf16() -> None:
    """Chunks fit the limit in UTF-16 units and break at paragraphs, lines, then words."""
    assert split_text("short") == ["short"]
    assert split_text("  \n ") == []
    assert split_text("aaaa\n\nbbbb", limit=6) == ["aaaa", "bbbb"]
    assert split_text("one two three", limit=8) == ["one two", "three"]
    emoji = split_text("😀" * 5000)
    assert [utf16_len(c) for c in emoji] == [4096, 4096, 1808]
    assert "".join(emoji) == "😀" * 5000
