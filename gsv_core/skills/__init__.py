"""Skills: `skills/{name}/SKILL.md` instructions the agent reads when a task
calls for them, offered only when some connected node can carry them out.

    manifest.py     SKILL.md frontmatter (YAML): name, description, always, requirements
    discovery.py    global and agent-local skills in the workspace (agent copies win)
    policy.py       config `skills.entries` overrides: enabled, always, requires
    bincache.py     per-node `node.probe` answers with a freshness window
    eligibility.py  which nodes meet a skill's requirements, and why not (pure)
    prompt.py       the `## Skills (Mandatory Scan)` section of the system prompt
    bundled.py      the skills gsv ships, seeded into the global area once
    service.py      SkillService: status, update (probes), prompt section
"""

from gsv_core.skills.service import NodeAccess
from gsv_core.skills.service import SkillService

__all__ = ["NodeAccess", "SkillService"]
