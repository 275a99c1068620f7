"""What a guest's run may reach (docs/security.md): a guest never gets the owner's.

A run started by a guest (gsv_core/authority.py) is offered, and may call, only:

* the workspace tools inside its own folder, `guests/<channel>/<sender>/` (its paths are
  taken relative to that folder: `notes.md` is `guests/telegram/bob/notes.md`), and
  gsv__WebFetch, saving there only;
* gsv__Message back to its own conversation;
* gsv__ToolSearch (which finds only these);
* gsv__MemorySearch and gsv__MemoryGet, which find its own conversation only
  (gateway/memory_reach.py);
* node and MCP tools the owner grants it in `channels.<name>.guestTools` (name patterns,
  `laptop__Read`, `mcp_weather__*`; none by default).

Everything else (sessions, sub-agents, cron, transfers, config, logs, other people's
conversations, the owner's files) is not offered, and a call of it anyway fails with a
tool result that says why. Runs of the owner and the system are untouched.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Any

from gsv_core.agent.tools import SEARCH_TOOL
from gsv_core.authority import guest_area
from gsv_core.authority import is_guest
from gsv_core.errors import InvalidParams
from gsv_core.errors import ToolFailed
from gsv_core.workspace.paths import join
from gsv_core.workspace.paths import normalise_path

WORKSPACE_TOOLS = frozenset({"gsv__ReadFile", "gsv__WriteFile", "gsv__EditFile", "gsv__DeleteFile"})
MESSAGE_TOOL = "gsv__Message"
WEB_FETCH = "gsv__WebFetch"
# scoped to the guest's own conversation by the tools themselves (memory_reach.py)
MEMORY_TOOLS = frozenset({"gsv__MemorySearch", "gsv__MemoryGet"})
# the gateway's own tools a guest may call, their paths confined to the guest's folder
GUEST_NATIVE = WORKSPACE_TOOLS | MEMORY_TOOLS | {MESSAGE_TOOL, WEB_FETCH, SEARCH_TOOL}
NOT_FOR_GUESTS = "is not available to a guest of the owner"


@dataclass(frozen=True)
class GuestReach:
    """One guest run's reach: its folder, its conversation and the owner's grants."""

    area: str  # guests/<channel>/<sender>
    channel: str
    account_id: str
    peer_id: str
    grants: tuple[str, ...]  # channels.<name>.guestTools

    @classmethod
    def of(cls, context: dict[str, Any] | None, settings: dict[str, Any]) -> GuestReach | None:
        """The reach of a run started with `context` (None for the owner's and the
        system's: theirs is whole); `settings` is `channels.<name>`."""
        if context is None or not is_guest(context):
            return None
        grants = tuple(str(p) for p in settings.get("guestTools") or [] if isinstance(p, str))
        peer = context.get("peer") or {}
        account = str(context.get("accountId") or "default")
        return cls(guest_area(context), str(context["channel"]), account, str(peer.get("id")),
                   grants)  # fmt: skip

    def offers(self, name: str) -> bool:
        """Whether the tool is offered to (and may be called by) this guest at all."""
        if name.startswith("gsv__"):
            return name in GUEST_NATIVE
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in self.grants)

    def confine(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        """The call's arguments as the guest may make it (paths inside its folder);
        ToolFailed saying why when it may not be made at all."""
        if not self.offers(name):
            raise ToolFailed(f"{name} {NOT_FOR_GUESTS}: {self._why(name)}")
        if name in WORKSPACE_TOOLS:
            return {**args, "path": self._inside(args.get("path"))}
        if name == WEB_FETCH and args.get("saveTo") is not None:
            return {**args, "saveTo": self._inside(args.get("saveTo"))}
        if name == MESSAGE_TOOL:
            self._own_conversation(args)
        return args

    def _why(self, name: str) -> str:
        if name.startswith("gsv__"):
            return "a guest's run may use its own files, the web and this conversation only"
        return f"the owner has not granted it in channels.{self.channel}.guestTools"

    def _inside(self, raw: Any) -> str:
        """A workspace path taken relative to the guest's folder."""
        if raw is None:
            return self.area
        if not isinstance(raw, str):
            raise ToolFailed("path must be a string")
        try:
            path = normalise_path(raw)
        except InvalidParams as exc:
            raise ToolFailed(exc.message) from None
        if path == self.area or path.startswith(self.area + "/"):
            return path
        return join(self.area, path)

    def _own_conversation(self, args: dict[str, Any]) -> None:
        channel, to, account = args.get("channel"), args.get("to"), args.get("accountId")
        here = (channel in (None, self.channel) and to in (None, self.peer_id)
                and account in (None, self.account_id))  # fmt: skip
        if not here:
            raise ToolFailed(
                f"{MESSAGE_TOOL} from a guest's run goes back to that guest only "
                f"({self.channel} {self.peer_id}), not to {channel or self.channel} {to}"
            )
