"""Sandbox access tokens: one delegated credential per sandbox, scoped to that sandbox.

The plaintext is returned only by create and rotate; reads show a hint. A request that
authenticates with a token acts as the sandbox's account, limited to that sandbox.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fake_server.models.errors import Conflict, NotFound
from fake_server.models.sandbox import AccessToken, Sandbox
from fake_server.models.transitions import ENDING

if TYPE_CHECKING:
    from fake_server.models.account.table import SandboxTable

__all__ = ["AccessToken", "Tokens"]


class Tokens:
    """A sandbox's access token (``account.tokens``). A service over the account's table."""

    def __init__(self, account: SandboxTable) -> None:
        self.account = account

    def create_access_token(self, sandbox_id: str) -> AccessToken:
        sandbox = self.account.sandbox(sandbox_id)
        _alive(sandbox)
        if sandbox.access_token is not None:
            raise Conflict("sandbox already has an access token; rotate it", code="token_exists")
        sandbox.access_token = AccessToken(sandbox.ctx.ids.access_token(), sandbox.clock.time())
        return sandbox.access_token

    def get_access_token(self, sandbox_id: str) -> AccessToken | None:
        return self.account.sandbox(sandbox_id).access_token

    def rotate_access_token(self, sandbox_id: str) -> AccessToken:
        sandbox = self.account.sandbox(sandbox_id)
        _alive(sandbox)
        current = sandbox.access_token
        if current is None:
            raise NotFound("sandbox has no access token", code="token_not_found")
        sandbox.access_token = AccessToken(
            sandbox.ctx.ids.access_token(), current.created_at, rotated_at=sandbox.clock.time()
        )
        return sandbox.access_token

    def disable_access_token(self, sandbox_id: str) -> AccessToken | None:
        """Revoke the token; the last state is returned (``None``: there was none)."""
        sandbox = self.account.sandbox(sandbox_id)
        token, sandbox.access_token = sandbox.access_token, None
        return token


def _alive(sandbox: Sandbox) -> None:
    if sandbox.status in ENDING:
        raise Conflict(f"sandbox is {sandbox.status}", code="invalid_state")
