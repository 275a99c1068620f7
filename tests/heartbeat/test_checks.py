"""HEARTBEAT.md: which files hold no task (skip without a model call)."""

from __future__ import annotations

import pytest

from gsv_core.heartbeat.checks import EMPTY_HEARTBEAT_FILE
from gsv_core.heartbeat.checks import NO_HEARTBEAT_FILE
from gsv_core.heartbeat.checks import checklist_skip
from gsv_core.workspace.templates import workspace_templates


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\n\n   \n",
        "# HEARTBEAT.md",
        "# Heartbeat checklist\n\n## Morning\n### Evening\n",
        "<!-- nothing yet -->",
        "# Title\n<!--\n- Check the backup.\n-->\n",
        "<!-- an unclosed comment\n- Check the backup.",
        "---\n===\n***\n",
        "# Tasks\n-\n- \n* [ ]\n- [ ]\n",
        "#\n##\n",
    ],
)
def test_files_without_a_task_are_empty(text: str) -> None:
    """Headings, comments, rules, blank lines and empty bullets are no task."""
    assert checklist_skip(text) == EMPTY_HEARTBEAT_FILE


def test_the_shipped_template_is_empty() -> None:
    """The HEARTBEAT.md a new agent starts with does not cost a model call."""
    assert checklist_skip(workspace_templates()["HEARTBEAT.md"]) == EMPTY_HEARTBEAT_FILE


@pytest.mark.parametrize(
    "text",
    [
        "- Check the backup.",
        "# Checklist\n<!-- a note -->\n- Look at the calendar.",
        "Check the mail",
        "<!-- a --> check the mail <!-- b -->",
        "- [ ] water the plants",
        "#todo call mum",
    ],
)
def test_files_with_a_task_are_not_skipped(text: str) -> None:
    """Any line with text outside comments and headings is a task."""
    assert checklist_skip(text) is None


def test_a_missing_file_has_its_own_reason() -> None:
    """No HEARTBEAT.md at all: no_heartbeat_file."""
    assert checklist_skip(None) == NO_HEARTBEAT_FILE
