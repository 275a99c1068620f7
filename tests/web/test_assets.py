"""The web chat's files as shipped (gsv_core/web/static): everything the page references
exists, the page needs no inline script or style (the CSP forbids both), no script turns
text into HTML, the whole page stays small, the wheel ships every file, and what the page
mirrors from Python (slash commands, the default session) has not drifted."""

from __future__ import annotations

import gzip
import re
import tomllib
from fnmatch import fnmatchcase
from html.parser import HTMLParser
from pathlib import Path

from gsv_core.protocol.commands import COMMANDS
from gsv_core.routing import CLI_SESSION_KEY
from gsv_core.web import STATIC_DIR

ROOT = Path(__file__).resolve().parents[2]
JS_DIR = STATIC_DIR / "js"
MAX_GZIPPED = 300 * 1024
# ways of turning a string into markup or code; none may appear in the page's scripts
BANNED = ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function")
IMPORT = re.compile(r"""^\s*(?:import|export)\b[^;]*?\bfrom\s+["']([^"']+)["']""", re.MULTILINE)
NAMED_IMPORT = re.compile(r"""^import\s*\{([^}]*)\}\s*from\s*["']([^"']+)["']""", re.MULTILINE)
EXPORT = re.compile(
    r"""^export\s+(?:async\s+)?(?:function|class|const|let)\s+([A-Za-z_$][\w$]*)"""
    r"""|^export\s*\{([^}]*)\}""",
    re.MULTILINE,
)


class PageParser(HTMLParser):
    """Collects what index.html references and anything inline in it."""

    def __init__(self) -> None:
        super().__init__()
        self.references: list[str] = []
        self.inline: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = dict(attrs)
        for name, value in attrs:
            if name.startswith("on") or name == "style":
                self.inline.append(f"<{tag} {name}=...>")
            if name in ("src", "href") and value and value.startswith("/"):
                self.references.append(value)
        if tag == "style":
            self.inline.append("<style>")
        if tag == "script":
            self._in_script = True
            if not named.get("src"):
                self.inline.append("<script> without src")

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script and data.strip():
            self.inline.append(f"script body: {data.strip()[:40]}")


def parse_page() -> PageParser:
    parser = PageParser()
    parser.feed((STATIC_DIR / "index.html").read_text(encoding="utf-8"))
    return parser


def static_files() -> list[Path]:
    return sorted(p for p in STATIC_DIR.rglob("*") if p.is_file())


def test_every_file_the_page_references_exists_under_assets() -> None:
    """index.html names its files as /assets/<path>, and each is a file in static/."""
    references = parse_page().references
    assert "/assets/js/main.js" in references and "/assets/app.css" in references
    for reference in references:
        assert reference.startswith("/assets/"), reference
        assert (STATIC_DIR / reference.removeprefix("/assets/")).is_file(), reference


def test_every_module_import_resolves_to_a_shipped_file() -> None:
    """Each relative import of each module names a file that exists (no bare specifiers:
    there is no bundler to resolve them)."""
    for module in JS_DIR.rglob("*.js"):
        for target in IMPORT.findall(module.read_text(encoding="utf-8")):
            assert target.startswith("."), f"{module.name}: bare import {target!r}"
            assert (module.parent / target).resolve().is_file(), f"{module.name}: {target}"


def exported_names(module: Path) -> set[str]:
    names: set[str] = set()
    for single, listed in EXPORT.findall(module.read_text(encoding="utf-8")):
        names.update([single] if single else (name.strip() for name in listed.split(",")))
    return names - {""}


def test_every_imported_name_is_exported_by_its_module() -> None:
    """`import { a } from "./x.js"` names something x.js exports: a module that fails to
    link stops the whole page, with nothing on screen to say why."""
    missing = []
    for module in JS_DIR.rglob("*.js"):
        for names, target in NAMED_IMPORT.findall(module.read_text(encoding="utf-8")):
            exported = exported_names((module.parent / target).resolve())
            wanted = {name.strip().split(" as ")[0] for name in names.split(",")} - {""}
            missing += [f"{module.name}: {name} from {target}" for name in wanted - exported]
    assert missing == []


def test_the_page_has_no_inline_script_handler_or_style() -> None:
    """No inline <script> body, no on*= attributes, no style= or <style>: the CSP would
    block them (script-src 'self', style-src 'self')."""
    assert parse_page().inline == []


def test_no_script_parses_text_as_html_or_code() -> None:
    """Model and user text reaches the DOM as text nodes only: no innerHTML, outerHTML,
    insertAdjacentHTML, document.write, eval or new Function anywhere in the scripts."""
    found = [
        f"{path.relative_to(STATIC_DIR)}: {word}"
        for path in JS_DIR.rglob("*.js")
        for word in BANNED
        if word in path.read_text(encoding="utf-8")
    ]
    assert found == []


def test_the_whole_page_is_under_300_kb_gzipped() -> None:
    """Every shipped file, gzipped one by one as the gateway sends them, adds up to less
    than 300 kB."""
    total = sum(len(gzip.compress(path.read_bytes(), 9)) for path in static_files())
    assert 0 < total < MAX_GZIPPED, f"{total} bytes gzipped"


def test_the_wheel_ships_every_file_of_the_page() -> None:
    """pyproject's package-data globs for gsv_core.web cover every file in static/, so
    an installed gsv serves the same page as a checkout."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    globs = pyproject["tool"]["setuptools"]["package-data"]["gsv_core.web"]
    package = STATIC_DIR.parent
    for path in static_files():
        relative = path.relative_to(package).as_posix()
        assert any(glob_matches(glob, relative) for glob in globs), f"{relative} is not shipped"


def glob_matches(glob: str, relative: str) -> bool:
    """setuptools' package-data reading of a glob: `*` never crosses a `/`."""
    parts, patterns = relative.split("/"), glob.split("/")
    return len(parts) == len(patterns) and all(map(fnmatchcase, parts, patterns))


def test_the_page_completes_the_gateway_s_slash_commands() -> None:
    """js/commands.js lists the gateway's commands with the spellings and usage of
    gsv_core.protocol.commands (the page cannot import the Python list)."""
    source = (JS_DIR / "commands.js").read_text(encoding="utf-8")
    block = source.split("export const GATEWAY_COMMANDS = [", 1)[1].split("];", 1)[0]
    entry = re.compile(r'name: "([^"]+)", aliases: \[([^\]]*)\], usage: "([^"]*)"')
    listed = [
        (name, tuple(re.findall(r'"([^"]+)"', aliases)), usage)
        for name, aliases, usage in entry.findall(block)
    ]
    assert listed == [(c.name, c.aliases, c.usage) for c in COMMANDS]


def test_the_page_opens_the_cli_s_session_by_default() -> None:
    """The page's default session is the CLI's (`gsv chat` and the browser continue the
    same conversation)."""
    source = (JS_DIR / "conversation.js").read_text(encoding="utf-8")
    assert f'export const DEFAULT_SESSION = "{CLI_SESSION_KEY}";' in source
