"""Hostile text renders inert: model (and user) text with HTML, event handlers and
script links becomes text or safe Markdown (docs/web.md, Rendering). Each payload is
sent by the user and answered by the model, so both renderings are checked."""

from __future__ import annotations

import pytest
from playwright.async_api import Page
from playwright.async_api import expect

from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.llm_server import reply
from tests.web.conftest import BROWSER_LOOP
from tests.web.conftest import Pages
from tests.web.conftest import messages
from tests.web.conftest import send

pytestmark = BROWSER_LOOP

END = "END-OF-PAYLOAD"
SAFE_SCHEMES = ("http:", "https:", "mailto:")
# no element of these kinds may come out of Markdown (images show as links)
FORBIDDEN = "script, iframe, frame, object, embed, img, svg, math, style, link, meta, base, form"

PAYLOADS = {
    "script": "<script>window.__x=1</script>",
    "img-onerror": '<img src=x onerror="window.__x=1">',
    "javascript-link": "[a](javascript:window.__x=1)",
    "mixed-case-scheme": "[a](JaVaScRiPt:window.__x=1)",
    "spaces-before-scheme": "[a](  javascript:window.__x=1)",
    "tab-in-scheme": "[a](java\tscript:window.__x=1)",
    "image-attribute-break": '![i](x" onerror="window.__x=1)',
    "html-anchor": '<a href="javascript:window.__x=1">a</a>',
    "data-url": "[a](data:text/html,<script>window.__x=1</script>)",
    "entity-colon": "[a](javascript&#58;window.__x=1)",
    "entity-letters": "[a](&#106;avascript:window.__x=1)",
    "autolink": "<javascript:window.__x=1>",
    "reference-link": "[a][r]\n\n[r]: javascript:window.__x=1",
    "vbscript": "[a](vbscript:msgbox(1))",
    "iframe": '<iframe src="javascript:parent.__x=1"></iframe>',
    "svg-onload": '<svg onload="window.__x=1"></svg>',
    "alert-in-img": "<img src=x onerror=alert(1)>",
    "code-span-html": "`<img src=x onerror=window.__x=1>`",
    "link-title-break": '[a](https://example.com "t" onmouseover="window.__x=1")',
}

# the rendered Markdown and the user's messages (however the page renders those)
RENDERED = '.md, [data-testid="message"][data-role="user"]'
INERT_CHECK = """([rendered, forbidden]) => {
    const mds = [...document.querySelectorAll(rendered)];
    const inside = mds.flatMap(md => [...md.querySelectorAll('*')]);
    return {
        x: window.__x === undefined ? null : String(window.__x),
        forbidden: mds.flatMap(md => [...md.querySelectorAll(forbidden)]).map(e => e.outerHTML),
        handlers: inside.filter(e => [...e.attributes].some(a => a.name.startsWith('on')))
                        .map(e => e.outerHTML),
        hrefs: inside.filter(e => e.hasAttribute('href')).map(e => [e.tagName, e.href]),
    };
}"""


@pytest.mark.parametrize("payload", PAYLOADS.values(), ids=PAYLOADS.keys())
async def test_hostile_text_renders_inert(
    page: Page, llm: FakeLLMServer, pages: Pages, payload: str
) -> None:
    """No script runs (window.__x stays undefined, no dialog), no dangerous element or
    event handler is in the rendered Markdown, and every link is http, https or mailto."""
    llm.enqueue(reply(f"{payload}\n\n", END))
    await send(page, f"{payload}\n\n{END}")
    await expect(messages(page, "assistant").last.locator(".md")).to_contain_text(END)
    await expect(messages(page, "user").last).to_contain_text(END)
    # hover every link: an injected onmouseover would fire
    for link in await page.locator(".md a").all():
        await link.hover()
    found = await page.evaluate(INERT_CHECK, [RENDERED, FORBIDDEN])
    assert found["x"] is None, "a script ran"
    assert pages.dialogs == [], "a script opened a dialog"
    assert found["forbidden"] == []
    assert found["handlers"] == []
    unsafe = [(tag, href) for tag, href in found["hrefs"] if not href.startswith(SAFE_SCHEMES)]
    assert unsafe == []
