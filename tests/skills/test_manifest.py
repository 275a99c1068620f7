"""SKILL.md frontmatter parsing: fields, defaults, the original's nested forms, and clear
errors for malformed files."""

from __future__ import annotations

import pytest

from gsv_core.skills.manifest import Requirements
from gsv_core.skills.manifest import SkillManifestError
from gsv_core.skills.manifest import parse_manifest
from gsv_core.skills.manifest import split_frontmatter

FULL = """---
name: tmux
description: Run long jobs in tmux.
always: true
bins: [tmux]
anyBins: [vim, nvim]
env: [TERM]
os: [Linux, darwin]
capabilities: [shell.exec]
---
# tmux

Body text.
"""


def test_every_field_is_read_from_the_frontmatter() -> None:
    """name, description, always and the five requirement lists come from the YAML."""
    manifest = parse_manifest(FULL, "folder")
    assert (manifest.name, manifest.description, manifest.always) == (
        "tmux", "Run long jobs in tmux.", True,
    )  # fmt: skip
    assert manifest.requirements == Requirements(
        bins=("tmux",), any_bins=("vim", "nvim"), env=("TERM",), os=("linux", "macos"),
        capabilities=("shell.exec",),
    )  # fmt: skip
    assert manifest.body == "# tmux\n\nBody text.\n"


def test_missing_fields_default_to_the_folder_and_the_first_paragraph() -> None:
    """No name: the folder name; no description: the body's first paragraph after the
    headings; no always: false; no requirements: none."""
    text = "---\nbins: []\n---\n# Title\n## Sub\n\nFirst line\ncontinues here.\n\nSecond.\n"
    manifest = parse_manifest(text, "my-skill")
    assert manifest.name == "my-skill"
    assert manifest.description == "First line continues here."
    assert manifest.always is False and manifest.requirements.empty


def test_a_file_without_frontmatter_is_a_skill_with_defaults() -> None:
    """Plain markdown is fine: defaults all round, the whole text is the body."""
    manifest = parse_manifest("# Notes\r\n\r\nUse it well.\r\n", "notes")
    assert (manifest.name, manifest.description, manifest.body) == (
        "notes", "Use it well.", "# Notes\n\nUse it well.\n",
    )  # fmt: skip


def test_long_first_paragraphs_are_cut_to_200_characters() -> None:
    """A default description is at most 200 characters, ending in '...' when cut."""
    manifest = parse_manifest("word " * 100, "long")
    assert len(manifest.description) == 200 and manifest.description.endswith("...")


def test_requires_block_and_metadata_json_with_trailing_commas_are_understood() -> None:
    """`requires:` and the original's metadata JSON (gsv/openclaw/clawdbot namespaces,
    trailing commas) give requirements; top-level keys win over both."""
    text = """---
description: x
bins: [top]
requires:
  bins: [from-requires]
  env: [HOME]
metadata: {"openclaw": {"emoji": "🧪", "requires": {"capabilities": ["text.search",],
  "os": ["linux"],},},}
---
"""
    manifest = parse_manifest(text, "k")
    assert manifest.requirements == Requirements(
        bins=("top",), env=("HOME",), os=("linux",), capabilities=("text.search",)
    )
    assert manifest.emoji == "🧪"


def test_metadata_given_as_a_json_string_is_parsed() -> None:
    """metadata: '<json>' (a quoted string, as the original wrote it) still counts."""
    text = '---\nmetadata: \'{"gsv": {"requires": {"bins": ["jq"]}}}\'\n---\nbody\n'
    assert parse_manifest(text, "k").requirements.bins == ("jq",)


def test_always_accepts_true_and_false_strings() -> None:
    """'true'/'false' in quotes are booleans too (the original's frontmatter had no types)."""
    assert parse_manifest("---\nalways: 'TRUE'\n---\n", "k").always is True


@pytest.mark.parametrize(
    ("frontmatter", "message"),
    [
        ("name: [unclosed\ndescription: x", "invalid YAML frontmatter"),
        ("- just\n- a list", "frontmatter must be a mapping"),
        ("always: sometimes", "always must be true or false"),
        ("name: {a: 1}", "name must be text"),
        ("bins: tmux git: x", "invalid YAML frontmatter"),
        ("bins: [1, 2]", "bins must be a list of names"),
        ("bins: [../bin/sh]", "bins has an invalid name '../bin/sh'"),
        ("env: ['BAD NAME']", "env has an invalid name"),
        ("capabilities: [teleport]", "capabilities has an invalid name 'teleport'"),
        ("requires: [bins]", "requires must be a mapping"),
        ("metadata: '{\"gsv\": [1,'", "metadata is not valid JSON"),
        ("metadata: just words", "metadata must be a mapping"),
        ("metadata: {gsv: [1]}", "metadata.gsv must be a mapping"),
    ],
)
def test_malformed_frontmatter_raises_a_clear_error(frontmatter: str, message: str) -> None:
    """Each kind of bad frontmatter names its problem (and never another exception type)."""
    with pytest.raises(SkillManifestError) as caught:
        parse_manifest(f"---\n{frontmatter}\n---\nbody\n", "k")
    assert message in caught.value.message


def test_yaml_errors_name_the_line_in_the_file() -> None:
    """The line number counts from the top of SKILL.md (the opening --- is line 1)."""
    with pytest.raises(SkillManifestError) as caught:
        parse_manifest("---\nname: ok\ndescription: [oops\n---\n", "k")
    assert "(line 3, column" in caught.value.message


def test_unterminated_frontmatter_is_an_error() -> None:
    """An opening --- without a closing one is refused, not read as body."""
    with pytest.raises(SkillManifestError, match="no closing ---"):
        split_frontmatter("---\nname: x\n\n# body\n")
