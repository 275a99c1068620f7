"""Telling the owner a budget stopped work: once per budget per day, through `deliver`
(the gateway sends it to the agent's last active conversation: a channel peer, else the
clients of its main session), and kept for `gsv status`. A budget nobody hears about
looks like a broken agent."""

from __future__ import annotations

from collections.abc import Awaitable
from collections.abc import Callable
from typing import Any

from gsv_core.timezones import user_zone
from gsv_core.usage.budget import Reached
from gsv_core.usage.budget import period_starts

# (agent id, text) -> where it went
Deliver = Callable[[str, str], Awaitable[str]]


class BudgetNotices:
    def __init__(
        self, now_ms: Callable[[], int], deliver: Deliver, config: Callable[[], dict[str, Any]]
    ) -> None:
        self._now_ms = now_ms
        self._config = config
        self._deliver = deliver
        self._told: set[tuple[str, int]] = set()  # (budget, the day's start: the budgets' day)
        self.last: dict[str, Any] | None = None  # the latest notice, for gateway.status

    async def tell(self, agent_id: str, reached: Reached) -> bool:
        """Deliver the notice unless this budget's went out today; True when sent."""
        now = self._now_ms()
        key = (reached.budget, period_starts(now, user_zone(self._config()))[0])
        if key in self._told:
            return False
        self._told = {told for told in self._told if told[1] == key[1]} | {key}
        text = reached.message()
        where = await self._deliver(agent_id, text)
        self.last = {"budget": reached.budget, "at": now, "text": text, "to": where}
        return True
