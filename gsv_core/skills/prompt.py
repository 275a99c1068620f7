"""The system prompt's skills section, `## Skills (Mandatory Scan)`.

It lists the eligible skills (name, description, where the file is and the path to read
it by, and the nodes it works on when it needs some), tells the agent to read the one
skill that applies with the workspace read tool before acting, and inlines the `always`
skills whole. Counts of skills left out say why they are missing. No eligible skill: no
section. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable
from html import escape

from gsv_core.skills.eligibility import SkillStatus

HEADING = "## Skills (Mandatory Scan)"
DEFAULT_READ_TOOL = "gsv__ReadFile"
# an always-on skill should be short; a runaway file must not crowd out the conversation
MAX_INLINE_CHARS = 20_000


def read_tool_name(tool_names: Iterable[str]) -> str:
    """The run's workspace read tool as the run spells it (case-insensitive match)."""
    wanted = DEFAULT_READ_TOOL.lower()
    return next((name for name in tool_names if name.lower() == wanted), DEFAULT_READ_TOOL)


def skills_section(statuses: list[SkillStatus], read_tool: str = DEFAULT_READ_TOOL) -> str:
    eligible = [status for status in statuses if status.verdict.eligible]
    if not eligible:
        return ""
    lines = [HEADING, *_instructions(read_tool), *_filter_lines(statuses)]
    lines.append("<available_skills>")
    for status in eligible:
        lines += _entry(status)
    lines.append("</available_skills>")
    return "\n".join(lines)


def _instructions(read_tool: str) -> list[str]:
    return [
        "Skills are instructions for particular kinds of work. Before you reply, scan the "
        "descriptions in <available_skills>.",
        f"- If exactly one skill clearly applies, read its <read_path> with `{read_tool}` "
        "first, then follow it.",
        "- If several apply, choose the most specific one and read only that one.",
        "- If none applies, read none.",
        "- Read at most one skill up front; read another only when the work moves on to it.",
        "- A skill that lists <nodes> works on those nodes only: use their tools for it.",
        '- Skills marked always="true" are included in full; do not read them again.',
    ]


def _filter_lines(statuses: list[SkillStatus]) -> list[str]:
    hidden = [s for s in statuses if not s.verdict.eligible]
    disabled = sum(1 for s in hidden if not s.skill.enabled)
    broken = sum(1 for s in hidden if s.skill.enabled and s.skill.problem is not None)
    unmet = len(hidden) - disabled - broken
    lines = []
    if disabled:
        lines.append(f"Config filter: {disabled} skill(s) hidden by skills.entries policy.")
    if unmet:
        lines.append(
            f"Requirement filter: {unmet} skill(s) hidden because no connected node "
            "meets their requirements."
        )
    if broken:
        lines.append(f"Invalid filter: {broken} skill(s) hidden because their SKILL.md is invalid.")
    return lines


def _entry(status: SkillStatus) -> list[str]:
    skill = status.skill
    always = ' always="true"' if skill.always else ""
    lines = [
        f'<skill name="{escape(skill.name)}"{always}>',
        f"<description>{escape(skill.description, quote=False)}</description>",
        f"<location>{escape(skill.file.location, quote=False)}</location>",
        f"<read_path>{escape(skill.file.read_path, quote=False)}</read_path>",
    ]
    if status.verdict.hosts:
        lines.append(f"<nodes>{escape(', '.join(status.verdict.hosts), quote=False)}</nodes>")
    if skill.always and skill.file.manifest is not None:
        body = skill.file.manifest.body.strip()
        if len(body) > MAX_INLINE_CHARS:
            body = body[:MAX_INLINE_CHARS] + f"\n[truncated; read {skill.file.read_path}]"
        lines += ["<content>", body, "</content>"]
    lines.append("</skill>")
    return lines
