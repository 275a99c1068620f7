"""Whether a WhatsApp account is connected: there is no socket to keep, so "connected"
means the token and phone number id were checked against the Graph API. When the Graph API
cannot be reached (at start or on a send) the account re-checks with jittered exponential
backoff; a rejected token stops it with a clear status."""

from __future__ import annotations

import asyncio
import logging

from gsv_core.channels.accounts import AccountAdapter
from gsv_core.channels.whatsapp.account import Account
from gsv_core.channels.whatsapp.account import graph_error
from gsv_core.channels.whatsapp.account import masked_reason
from gsv_core.errors import GsvError

log = logging.getLogger(__name__)


class WhatsAppConnection(AccountAdapter[Account]):
    """Checking the credentials for `WhatsAppChannel`, now and after a loss."""

    async def _check(self, account: Account) -> bool:
        """Ask the Graph API about our phone number. False when it could not be reached;
        raises when it refused the token or does not know the number."""
        import httpx

        settings = account.settings
        try:
            response = await account.client.get(
                settings.phone_number_id, params={"fields": "display_phone_number,verified_name"}
            )
        except httpx.HTTPError as exc:
            self._lost(account, f"graph api unreachable: {masked_reason(exc, settings)}")
            return False
        if response.status_code >= 500:
            self._lost(account, f"graph api unavailable (HTTP {response.status_code})")
            return False
        if response.status_code >= 400:
            error = graph_error(response, settings)
            self._update(account, connected=False, authenticated=False, error=error.message)
            raise error
        number = response.json()
        account.status.extra.update(
            displayPhoneNumber=number.get("display_phone_number"),
            verifiedName=number.get("verified_name"),
        )
        self._update(account, connected=True, authenticated=True, error=None)
        log.info("whatsapp account %s ready for %s", account.status.account_id,
                 number.get("display_phone_number"))  # fmt: skip
        return True

    def _lost(self, account: Account, reason: str) -> None:
        if account.status.connected or account.status.error != reason:
            log.warning("whatsapp account %s: %s", account.status.account_id, reason)
        self._update(account, connected=False, error=reason)

    def _recheck_later(self, account: Account) -> None:
        if account.task is None or account.task.done():
            name = f"whatsapp-check:{account.status.account_id}"
            account.task = asyncio.create_task(self._recheck(account), name=name)

    async def _recheck(self, account: Account) -> None:
        failures = 0
        while True:
            failures += 1
            await self._sleep(self._backoff(failures))
            try:
                if await self._check(account):
                    return
            except GsvError as exc:
                log.error("whatsapp account %s stopped: %s", account.status.account_id,
                          exc.message)  # fmt: skip
                return
