"""The docs stay true to the code: docs/protocol.md to what the gateway serves and to
gsv_core.protocol and gsv_core.errors, every file the docs name exists, the walk-throughs
of docs/architecture.md name real functions, and code comments cite only docs that exist."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest
from pydantic import BaseModel

from gsv_core import errors
from gsv_core.client import GatewayClient
from gsv_core.gateway.server import RunningGateway
from gsv_core.protocol import events
from gsv_core.protocol.close_codes import CloseCode
from gsv_core.protocol.frames import INVALID_DATA
from gsv_core.protocol.methods import METHODS
from gsv_core.protocol.schemas.auth import AuthInviteParams
from gsv_core.protocol.schemas.auth import AuthRevokeParams

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "protocol.md").read_text()
# a method or event row: its name in backticks, `+` when it is gsv's own
NAME_CELL = r"`([a-z.]+)`\+?"


def _section(title: str) -> str:
    return DOC.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def _table_rows(section: str, first_cell: str) -> dict[str, list[str]]:
    rows: dict[str, list[str]] = {}
    for line in _section(section).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        match = re.fullmatch(first_cell, cells[0]) if cells else None
        if line.startswith("|") and match:
            rows[match.group(1)] = cells[1:]
    return rows


def test_every_method_is_documented_with_its_modes() -> None:
    """Each protocol method has a row in the methods table naming exactly its modes."""
    rows = _table_rows("Methods", NAME_CELL)
    for name, spec in METHODS.items():
        assert name in rows, f"{name} is missing from docs/protocol.md"
        documented = rows[name][0]
        if spec.needs_connect:
            assert {m.strip() for m in documented.split(",")} == set(spec.modes), name
        else:
            assert documented == "before connect", name


@pytest.mark.parametrize(
    ("method", "model"),
    [("auth.invite", AuthInviteParams), ("auth.revoke", AuthRevokeParams)],
)
def test_the_credential_methods_document_every_param(method: str, model: type[BaseModel]) -> None:
    """Who may take a node id and who is signed out rest on these params: each has its row."""
    row = "|".join(_table_rows("Methods", NAME_CELL)[method])  # `\|` in a cell splits it too
    named = set(re.findall(r"[{,]\s*(\w+)\??(?=[,}:])", row))
    missing = [name for name in model.model_fields if name not in named]
    assert not missing, f"{method} params missing from docs/protocol.md: {missing}"


def test_every_event_is_documented() -> None:
    """Each event constant has a row in the events table."""
    rows = _table_rows("Events", NAME_CELL)
    for name in events.EVENTS:
        assert name in rows, f"event {name} is missing from docs/protocol.md"


@pytest.mark.parametrize("cls", [c for c in vars(errors).values() if isinstance(c, type)
                                 and issubclass(c, errors.GsvError) and c is not errors.GsvError
                                 and c.__base__ is errors.GsvError])  # fmt: skip
def test_every_error_code_is_documented(cls: type[errors.GsvError]) -> None:
    """Each wire code of the error tree has a row with its class."""
    rows = _table_rows("Error codes", r"(\d{3})")
    assert str(cls.code) in rows
    assert rows[str(cls.code)][0] == f"`{cls.__name__}`"


async def test_what_the_gateway_serves_is_documented(gateway: RunningGateway) -> None:
    """Every method a real gateway serves and every event it emits (its hello-ok) has a row."""
    async with GatewayClient(gateway.url, token=gateway.token) as client:
        assert client.hello is not None
        features = client.hello["features"]
    assert features["methods"] == gateway.gateway.router.methods()
    assert "chat.send" in features["methods"] and "chat" in features["events"]
    assert set(features["events"]) == set(events.EVENTS)  # hello-ok names every event it sends
    methods, emitted = _table_rows("Methods", NAME_CELL), _table_rows("Events", NAME_CELL)
    missing = [m for m in features["methods"] if m not in methods]
    missing += [f"event {e}" for e in features["events"] if e not in emitted]
    assert not missing, "missing from docs/protocol.md: " + ", ".join(missing)


def test_every_close_code_is_documented() -> None:
    """Each close code the gateway sends has a row in the close-code table."""
    rows = _table_rows("Close codes", r"(\d{4})")
    for code in [*CloseCode, INVALID_DATA]:
        assert str(int(code)) in rows, f"close code {int(code)} is missing from docs/protocol.md"


DOCS = sorted((ROOT / "docs").glob("*.md"))
SOURCE_DIRS = ("gsv_core", "gsv_cli", "tests", "bench", "scripts", "examples")
PY_NAME = re.compile(r"`([\w./-]+\.py)`")


def _python_files() -> list[str]:
    return [str(p.relative_to(ROOT)) for d in SOURCE_DIRS for p in (ROOT / d).rglob("*.py")]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_python_files_the_docs_name_exist(doc: Path) -> None:
    """Each backticked `*.py` name in docs/ is a file of the repository (a partial path
    such as `gateway/nodes.py` matches the end of one)."""
    files = _python_files()
    named = set(PY_NAME.findall(doc.read_text()))
    gone = [n for n in named if not any(f == n or f.endswith("/" + n) for f in files)]
    assert not gone, f"docs/{doc.name} names files that do not exist: {sorted(gone)}"


def _walk_through_rows() -> list[tuple[str, str]]:
    """(file, function) of every row of docs/architecture.md's walk-through tables."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    rows = []
    for section in text.split("\n## ")[1:]:
        if not section.startswith("Walk-through"):
            continue
        for line in section.splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) >= 3 and cells[1].endswith(".py`") and cells[2].startswith("`"):
                rows.append((cells[1].strip("`"), cells[2].strip("`")))
    return rows


DEFINITION = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def _defines(tree: ast.Module, dotted: str) -> bool:
    """Whether a module defines `name` or `Class.method` (functions and classes)."""
    body: list[ast.stmt] = tree.body
    for part in dotted.split("."):
        found = [n for n in body if isinstance(n, DEFINITION) and n.name == part]
        if not found:
            return False
        body = found[0].body
    return True


def test_walk_throughs_name_real_functions() -> None:
    """Every step of the architecture walk-throughs names a function its file defines."""
    rows = _walk_through_rows()
    assert len(rows) >= 20
    wrong = [
        f"{path}: {name}"
        for path, name in rows
        if not (ROOT / path).is_file() or not _defines(ast.parse((ROOT / path).read_text()), name)
    ]
    assert not wrong, "docs/architecture.md walk-throughs name what does not exist:\n" + (
        "\n".join(wrong)
    )


# documents that live outside the repository: the original's spec and its numbered known
# weaknesses, the seeds, the issue tracker
OUTSIDE_CITATION = re.compile(
    r"\bspec(\s+section)?\s+\d+|\bseed[\s-]*00\d|\bfix(es)?\s+(of\s+)?18\.\d+|\(18\.\d+\)"
    r"|\bissue\s+\d+",
    re.IGNORECASE,
)
DOC_LINK = re.compile(r"\bdocs/([\w./-]+\.md)(?:#([\w-]+))?")


def _comments_and_docstrings() -> list[tuple[str, int, str]]:
    """(file, line, text) of every comment and docstring in gsv_core/ and gsv_cli/."""
    found: list[tuple[str, int, str]] = []
    for path in sorted([*ROOT.glob("gsv_core/**/*.py"), *ROOT.glob("gsv_cli/**/*.py")]):
        name = str(path.relative_to(ROOT))
        source = path.read_text()
        with io.StringIO(source) as stream:
            for token in tokenize.generate_tokens(stream.readline):
                if token.type == tokenize.COMMENT:
                    found.append((name, token.start[0], token.string))
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                doc = ast.get_docstring(node, clean=False)
                if doc is not None:
                    found.append((name, node.body[0].lineno, doc))
    return found


def _anchors(doc: str) -> set[str]:
    """GitHub's anchors of a markdown file's headings."""
    anchors = set()
    for line in doc.splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            anchors.add(re.sub(r"\s", "-", re.sub(r"[^\w\s-]", "", title)))
    return anchors


def test_comments_cite_only_documents_in_the_repository() -> None:
    """No comment or docstring cites the spec, a seed or an issue number; a docs/ link exists."""
    cited: list[str] = []
    broken: list[str] = []
    for name, line, text in _comments_and_docstrings():
        if match := OUTSIDE_CITATION.search(text):
            cited.append(f"{name}:{line}: {match.group(0)!r}")
        for doc, anchor in DOC_LINK.findall(text):
            target = ROOT / "docs" / doc
            if not target.is_file():
                broken.append(f"{name}:{line}: docs/{doc}")
            elif anchor and anchor not in _anchors(target.read_text()):
                broken.append(f"{name}:{line}: docs/{doc}#{anchor}")
    assert not cited, "say what it means instead of citing outside documents:\n" + "\n".join(cited)
    assert not broken, "cited docs that do not exist:\n" + "\n".join(broken)
