"""How spending is written for people, the same in the CLI, the TUI, `/budget` and the
budget's refusal: amounts in USD and the period each budget counts over.

Pure and import-free, so the CLI's light commands (`gsv status`) may read it.
"""

from __future__ import annotations

DAILY, MONTHLY, BACKGROUND = "daily", "monthly", "background"
# what each budget counts, as it follows "spent": "$0.42 spent by background work today"
PERIODS = {DAILY: "today", MONTHLY: "this month", BACKGROUND: "by background work today"}
CENTS, CALL_PLACES = 2, 4  # a limit or a day's spend; a few calls cost fractions of a cent


def usd(amount: float | None, places: int = CENTS) -> str:
    """`$1.50` (`$?`: a cost not known, a model without a price)."""
    return "$?" if amount is None else f"${amount:.{places}f}"
