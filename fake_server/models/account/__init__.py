"""One account (one API key) and the world of every account: the sandbox table, credit and
resources, and the services that run a sandbox's operations over that table."""

from __future__ import annotations

from fake_server.models.account.account import Account, Page, Stats
from fake_server.models.account.world import World

__all__ = ["Account", "Page", "Stats", "World"]
