"""The world: every account of one fake, by API key."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fake_server.models.account.account import Account

if TYPE_CHECKING:
    from fake_server.models.context import Context
    from fake_server.models.sandbox import Sandbox

__all__ = ["World"]


class World:
    """All accounts of one fake, by API key."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.accounts: dict[str, Account] = {}
        self._requests = 0

    @property
    def requests(self) -> int:
        """How many request ids were handed out (a restarted ``serve`` goes on from there)."""
        return self._requests

    @requests.setter
    def requests(self, count: int) -> None:
        self._requests = count

    def next_request_id(self) -> str:
        """The ``X-Request-Id`` of the next request: numbered, so a seed replays the same."""
        self._requests += 1
        return f"req-{self._requests:012d}"

    def add_account(self, api_key: str | None = None) -> Account:
        key = api_key if api_key is not None else self.ctx.ids.api_key()
        if not key or not key.isprintable() or len(key) > 512:
            raise ValueError("an API key must be 1-512 printable characters")
        if key in self.accounts:
            raise ValueError("that API key already belongs to an account")
        account = Account(account_id=self.ctx.ids.user_id(), api_key=key, ctx=self.ctx)
        self.accounts[key] = account
        return account

    def account_for_key(self, api_key: str) -> Account | None:
        return self.accounts.get(api_key)

    def sandboxes(self) -> list[Sandbox]:
        return [s for a in self.accounts.values() for s in a.sandboxes.values()]

    def find_sandbox(self, sandbox_id: str) -> Sandbox | None:
        for account in self.accounts.values():
            sandbox = account.sandboxes.get(sandbox_id)
            if sandbox is not None:
                return sandbox
        return None

    def token_owner(self, token: str) -> tuple[Account, str] | None:
        """The account and sandbox a sandbox access token acts for, if it is current."""
        for account in self.accounts.values():
            for sandbox in account.sandboxes.values():
                current = sandbox.access_token
                if current is not None and current.token == token:
                    return account, sandbox.id
        return None

    def account_of(self, sandbox_id: str) -> Account | None:
        for account in self.accounts.values():
            if sandbox_id in account.sandboxes:
                return account
        return None

    def clear(self) -> None:
        """Kill every process and drop every account."""
        for account in self.accounts.values():
            for sandbox_id in list(account.sandboxes):
                account.forget_sandbox(sandbox_id)
            account.resources.templates.clear()
        self.accounts.clear()
        self._requests = 0
        self.ctx.resources = type(self.ctx.resources)()  # settings and bucket contents too
