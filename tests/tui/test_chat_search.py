"""`/search QUERY` in the chat TUI over `memory.search` on a real gateway: hits show the
session key, time and snippet as plain text; Enter on one switches to its session; a
query without words, an empty one and a note's hit are answered without leaving. The
opened session is scrolled to the hit's message and marks it, or says where it went."""

from __future__ import annotations

from textual.widgets import OptionList
from textual.widgets import Static

from gsv_cli.tui.app import ChatApp
from gsv_cli.tui.screens.search import SearchScreen
from gsv_cli.tui.widgets.messages import AssistantMessage
from gsv_core.gateway.server import RunningGateway
from tests.fakes.provider import FakeProvider
from tests.tui.chat_screen import notices
from tests.tui.chat_screen import replies
from tests.tui.conftest import KEY
from tests.tui.conftest import SIZE
from tests.tui.conftest import type_and_send
from tests.tui.conftest import wait_until

OTHER = "agent:main:other"
HOSTILE = "fridge [bold red]boom[/] [link=https://evil.example]x[/link] \x1b]52;c;aGk=\x07"


async def open_search(app: ChatApp, pilot: object, query: str) -> SearchScreen:
    await type_and_send(pilot, f"/search {query}")  # type: ignore[arg-type]
    await wait_until(pilot, lambda: isinstance(app.screen, SearchScreen), "the search")  # type: ignore[arg-type]
    screen = app.screen
    assert isinstance(screen, SearchScreen)
    await wait_until(pilot, lambda: screen.searched, "the hits")  # type: ignore[arg-type]
    return screen


def lines(screen: SearchScreen) -> list[str]:
    options = screen.query_one(OptionList)
    return [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]


def status(screen: SearchScreen) -> str:
    return str(screen.query_one("#search-status", Static).content)


async def ask(app: ChatApp, pilot: object, question: str) -> None:
    """Send a question and wait for its reply."""
    count = len(replies(app))
    await type_and_send(pilot, question)  # type: ignore[arg-type]
    await wait_until(pilot, lambda: len(replies(app)) == count + 1, "the reply")  # type: ignore[arg-type]


async def test_a_hit_opens_its_session(app: ChatApp, fake: FakeProvider) -> None:
    """A word said in the main session is found from another one; Enter switches back."""
    fake.enqueue("Noted: the spare key is under the fridge.")
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, app.synced.is_set, "the session to load")
        await ask(app, pilot, "where is the spare key?")
        await type_and_send(pilot, f"/switch {OTHER}")
        await wait_until(pilot, lambda: app.session_key == OTHER and app.synced.is_set(), "switch")
        screen = await open_search(app, pilot, "spare key")
        found = lines(screen)
        assert len(found) == 2 and all(line.startswith(f"{KEY} · ") for line in found)
        assert any("under the fridge" in line for line in found)
        assert status(screen) == "2 hits."
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.session_key == KEY and app.synced.is_set(), "open")
        assert replies(app) == ["Noted: the spare key is under the fridge."]
        await wait_until(pilot, lambda: len(marked(app)) == 1, "the hit marked")


def marked(app: ChatApp) -> list[str]:
    """The texts of the messages a search hit marked."""
    return [str(getattr(w, "source", None) or getattr(w, "text", "")) for w in app.query(".found")]


def in_view(app: ChatApp, widget: AssistantMessage) -> bool:
    view = app.chat.scrollable_content_region
    return widget.region.overlaps(view)


async def test_a_hit_scrolls_to_its_message(app: ChatApp, fake: FakeProvider) -> None:
    """In a long session the first reply is far above; its hit scrolls it into view and
    marks it, and only it."""
    fake.enqueue("The boat is moored at pier nine.")
    for n in range(12):
        fake.enqueue(f"Filler answer {n}.\n\n" + "More words here.\n\n" * 3)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, app.synced.is_set, "the session to load")
        await ask(app, pilot, "where is the boat?")
        for n in range(12):
            await ask(app, pilot, f"filler {n}")
        await app.sync()  # as after a restart: the history loaded from the gateway
        first = app.query(AssistantMessage).first()
        await wait_until(pilot, lambda: not in_view(app, first), "the first reply scrolled away")
        screen = await open_search(app, pilot, "moored")
        assert [line for line in lines(screen) if "moored" in line]
        options = screen.query_one(OptionList)
        options.highlighted = next(
            i for i, hit in enumerate(screen.hits) if hit.get("role") == "assistant"
        )
        await pilot.press("enter")
        await wait_until(pilot, lambda: not isinstance(app.screen, SearchScreen), "closed")
        await wait_until(pilot, lambda: marked(app) == ["The boat is moored at pier nine."], "mark")
        await wait_until(pilot, lambda: in_view(app, first), "scrolled to the hit")


async def test_an_archived_hit_says_where_it_is(app: ChatApp, fake: FakeProvider) -> None:
    """After a reset the hit's message is in an archive: the chat says so and which one."""
    fake.enqueue("The lantern is in the shed.")
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, app.synced.is_set, "the session to load")
        await ask(app, pilot, "where is the lantern?")
        await type_and_send(pilot, "/reset")
        await wait_until(pilot, lambda: replies(app) == [], "the reset")
        screen = await open_search(app, pilot, "lantern")
        archived = [line for line in lines(screen) if "(archived)" in line]
        assert archived, lines(screen)
        await pilot.press("enter")
        await wait_until(pilot, lambda: not isinstance(app.screen, SearchScreen), "closed")
        said = "That message is no longer in this session's history. It is archived in "
        await wait_until(pilot, lambda: any(said in n for n in notices(app)), "the notice")
        assert marked(app) == []


async def test_hits_are_shown_as_text_never_markup(app: ChatApp, fake: FakeProvider) -> None:
    """Markup and escape sequences a stranger could have said are shown, not obeyed."""
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, app.synced.is_set, "the session to load")
        await ask(app, pilot, HOSTILE)
        screen = await open_search(app, pilot, "boom")
        [line] = lines(screen)
        assert "[bold red]boom[/]" in line and "[link=https://evil.example]" in line
        assert "\x1b" not in line and "\x07" not in line


async def test_bad_queries_are_answered_in_place(app: ChatApp, gw: RunningGateway) -> None:
    """No query: a usage line; a query of punctuation only: the gateway's refusal; a note's
    hit: a notice, and the chat stays in its session."""
    await gw.gateway.workspace.write("main", "MEMORY.md", "Tea: oolong.")
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, app.synced.is_set, "the session to load")
        await type_and_send(pilot, "/search")
        await wait_until(pilot, lambda: "Usage: /search QUERY" in notices(app), "the usage")
        screen = await open_search(app, pilot, "!!! ???")
        assert lines(screen) == [] and status(screen).startswith("Cannot search: ")
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, SearchScreen), "closed")
        screen = await open_search(app, pilot, "oolong")
        assert lines(screen) == ["note MEMORY.md:1-1  Tea: oolong."]
        await pilot.press("enter")
        assert isinstance(app.screen, SearchScreen) and app.session_key == KEY
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, SearchScreen), "closed")
        assert app.session_key == KEY
