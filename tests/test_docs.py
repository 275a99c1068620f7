"""docs/protocol.md stays true to gsv_core.protocol and gsv_core.errors."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

from gsv_core import errors
from gsv_core.protocol import events
from gsv_core.protocol.methods import METHODS

DOC = (Path(__file__).resolve().parents[1] / "docs" / "protocol.md").read_text()


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
    rows = _table_rows("Methods", r"`([a-z.]+)`")
    for name, spec in METHODS.items():
        assert name in rows, f"{name} is missing from docs/protocol.md"
        documented = rows[name][0]
        if spec.needs_connect:
            assert {m.strip() for m in documented.split(",")} == set(spec.modes), name
        else:
            assert documented == "before connect", name


def test_every_event_is_documented() -> None:
    """Each event constant has a row in the events table."""
    rows = _table_rows("Events", r"`([a-z.]+)`")
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


ROOT = Path(__file__).resolve().parents[1]
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
