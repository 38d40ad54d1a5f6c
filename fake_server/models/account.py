"""The account backend (one per API key) and the world that holds every account."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fake_server.models.base import AccountBase
from fake_server.models.errors import BadRequest
from fake_server.models.exec_ops import ExecOps
from fake_server.models.process_ops import ProcessOps
from fake_server.models.sandbox import STATUSES, Sandbox, SandboxSpec

if TYPE_CHECKING:
    from fake_server.models.context import Context

__all__ = ["Account", "Page", "Stats", "World"]

ENV_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
MAX_ENVS = 64
MAX_ENV_VALUE = 4 * 1024
MAX_ENV_TOTAL = 64 * 1024
MAX_NAME = 63
MAX_LIMIT = 500


@dataclass(frozen=True, slots=True)
class Page:
    items: list[Sandbox]
    total: int
    limit: int
    offset: int


@dataclass(frozen=True, slots=True)
class Stats:
    running: int
    paused: int
    other: int
    total: int


class Account(ExecOps, ProcessOps, AccountBase):
    """Every API operation of one account, as one method each."""

    def create_sandbox(self, spec: SandboxSpec) -> Sandbox:
        catalog = self.ctx.catalog
        spec = dataclasses.replace(
            spec,
            rootfs=spec.rootfs or catalog.default_rootfs,
            region=spec.region or catalog.default_region,
        )
        shape = catalog.shapes.get(spec.shape)
        if shape is None:
            raise BadRequest("unknown shape", field="shape")
        if spec.rootfs not in catalog.rootfs:
            raise BadRequest("unknown rootfs", field="rootfs")
        if spec.region not in catalog.regions:
            raise BadRequest("unknown region", field="region")
        if spec.name is not None and not 1 <= len(spec.name) <= MAX_NAME:
            raise BadRequest(f"must be 1 to {MAX_NAME} characters", field="name")
        _check_envs(spec.envs)
        ids = self.ctx.ids
        sandbox_id = ids.sandbox_id()
        sandbox = Sandbox(
            sandbox_id=sandbox_id,
            account_id=self.id,
            spec=spec,
            shape=shape,
            name=spec.name or ids.name(),
            ip=ids.private_ip(),
            spawn_ms=ids.spawn_ms(),
            machine=self.ctx.runtime_choice().new_sandbox(sandbox_id, spec.rootfs),
            ctx=self.ctx,
        )
        self.sandboxes[sandbox.id] = sandbox
        return sandbox

    def get_sandbox(self, sandbox_id: str) -> Sandbox:
        return self._sandbox(sandbox_id, read=True)

    def list_sandboxes(self, *, status: str | None, limit: int, offset: int) -> Page:
        if status is not None and status not in STATUSES:
            raise BadRequest("unknown status", field="status")
        if not 1 <= limit <= MAX_LIMIT:
            raise BadRequest(f"must be between 1 and {MAX_LIMIT}", field="limit")
        if offset < 0:
            raise BadRequest("must be >= 0", field="offset")
        live = self._settled()
        matching = [s for s in live if status is None or s.status == status]
        return Page(matching[offset : offset + limit], len(matching), limit, offset)

    def delete_sandbox(self, sandbox_id: str) -> Sandbox:
        sandbox = self._sandbox(sandbox_id)
        sandbox.destroy()
        return sandbox

    def pause_sandbox(self, sandbox_id: str) -> tuple[Sandbox, bool]:
        """The sandbox and whether a pause was started (False: already paused)."""
        sandbox = self._sandbox(sandbox_id)
        return sandbox, sandbox.pause()

    def resume_sandbox(self, sandbox_id: str) -> tuple[Sandbox, bool]:
        sandbox = self._sandbox(sandbox_id)
        return sandbox, sandbox.resume()

    def whoami(self) -> Stats:
        live = self._settled()
        running = sum(s.status == "running" for s in live)
        paused = sum(s.status == "paused" for s in live)
        return Stats(running, paused, len(live) - running - paused, len(live))

    def _settled(self) -> list[Sandbox]:
        live = []
        for sandbox in list(self.sandboxes.values()):
            sandbox.settle()
            if sandbox.gone():
                del self.sandboxes[sandbox.id]
            else:
                live.append(sandbox)
        return live


def _check_envs(envs: tuple[tuple[str, str], ...]) -> None:
    if len(envs) > MAX_ENVS:
        raise BadRequest(f"at most {MAX_ENVS} entries", field="envs")
    total = 0
    for key, value in envs:
        if not ENV_KEY.match(key):
            raise BadRequest("keys must match ^[A-Za-z_][A-Za-z0-9_]*$", field="envs")
        if "\x00" in value:
            raise BadRequest("values must not contain NUL", field="envs")
        size = len(value.encode(errors="surrogatepass"))
        if size > MAX_ENV_VALUE:
            raise BadRequest(f"values must be at most {MAX_ENV_VALUE} bytes", field="envs")
        total += size + len(key)
    if total > MAX_ENV_TOTAL:
        raise BadRequest(f"must be at most {MAX_ENV_TOTAL} bytes in total", field="envs")


class World:
    """All accounts of one fake, by API key."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.accounts: dict[str, Account] = {}

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
        self.accounts.clear()
