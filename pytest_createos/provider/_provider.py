"""``CreateosProvider``: the facade hosts call (docs/provider.md): leases, guards, tracking, probe.

All in-memory state hangs off the provider (one per worker process): the HTTP clients, the
pacer and, per lease scope (company, environment, API URL, key digest, lease id), the active
tracked calls and the *closing* and *unconfirmed cleanup* flags. Time (polling, pacing,
deadlines) runs on the injected clock; the provider knows nothing of a fake's clock.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, Literal

from pytest_createos.provider._client import CreateosClient, HttpPool
from pytest_createos.provider._clock import Clock, SystemClock
from pytest_createos.provider._config import (
    MARKER_PATH,
    WORKSPACE,
    CreateosConfig,
    lease_metadata,
    metadata_matches,
    parse_config,
    resolve_api_key,
    resumable_marker,
    scope_key,
    valid_timeout_ms,
)
from pytest_createos.provider._errors import CreateosApiError, CreateosCleanupError, CreateosError
from pytest_createos.provider._execute import execute_command
from pytest_createos.provider._pacing import Pacer
from pytest_createos.provider._scopes import ScopeRegistry
from pytest_createos.provider._signal import DeadlineSignal, deadline_signal
from pytest_createos.provider._sync import sync_files
from pytest_createos.provider._transitions import transition
from pytest_createos.provider._types import (
    ConfigValidation,
    Environment,
    ExecuteParams,
    ExecuteResult,
    Lease,
    LogSink,
    ProbeResult,
    RealizedWorkspace,
    SyncOperation,
    SyncResult,
)

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    import httpx

    from pytest_createos.provider._signal import AbortSignal

__all__ = ["CreateosProvider"]

_PROBE_TOKEN = "paperclip-createos-ready"


class CreateosProvider:
    """CreateOS lease provider; create one per worker and ``await shutdown()`` at the end.

    Args:
        clock: time source for pacing, polling and deadlines (default: real time). Pass the
            fake's ``VirtualClock`` so tests take no real time.
        pacer: request pacing (default: 300 ms between request starts per API URL);
            ``Pacer.disabled()`` turns it off.
        environ: where ``CREATEOS_API_KEY`` is looked up (default: ``os.environ``).
        transport: an ``httpx`` async transport for every request (default: real HTTP);
            httpx's own seam, e.g. ``httpx.MockTransport`` for a canned-response baseline.
    """

    def __init__(
        self,
        *,
        clock: Clock | None = None,
        pacer: Pacer | None = None,
        environ: Mapping[str, str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._clock: Clock = clock if clock is not None else SystemClock()
        self._pacer = pacer if pacer is not None else Pacer()
        self._environ = environ
        self._http = HttpPool(transport)
        self._scopes = ScopeRegistry(self._clock)

    # -- config and workspace -------------------------------------------------------------------

    def validate_config(self, config: Mapping[str, Any]) -> ConfigValidation:
        """Check a config without touching the network or the API key fallback."""
        try:
            parsed = parse_config(config)
        except CreateosError as error:
            return ConfigValidation(ok=False, errors=[str(error)])
        except Exception:
            return ConfigValidation(ok=False, errors=["Invalid CreateOS configuration."])
        return ConfigValidation(ok=True, normalized_config=parsed.to_json())

    async def realize_workspace(
        self, env: Environment, lease: Lease, workspace: Mapping[str, Any] | None = None
    ) -> RealizedWorkspace:
        """The sandbox working directory; host paths in ``workspace`` are ignored."""
        if not lease.provider_lease_id or self._owned(env, lease.metadata) is None:
            raise CreateosError("CreateOS workspace requires a lease from this environment.")
        return RealizedWorkspace(
            cwd=WORKSPACE, metadata={"provider": "createos", "remoteCwd": WORKSPACE}
        )

    # -- lease lifecycle ------------------------------------------------------------------------

    async def acquire_lease(
        self, env: Environment, *, run_id: str | None = None, requested_expires_at: object = None
    ) -> Lease:
        """Create a sandbox, wait for ``running``, prepare the workspace and mark the lease."""
        self._refuse_after_shutdown()
        if requested_expires_at:
            raise CreateosError(
                "CreateOS does not yet support leases with a guaranteed expiration deadline."
            )
        config = parse_config(env.config)
        client = self._client(config)
        with self._deadline(config) as signal:
            sandbox_id = await client.create_sandbox(
                shape=config.shape, rootfs=config.rootfs, region=config.region, signal=signal
            )
            try:
                marker = await self._prepare(client, sandbox_id, signal)
            except BaseException:
                try:
                    await client.delete_sandbox(sandbox_id)
                except Exception:
                    raise CreateosCleanupError(
                        "CreateOS setup failed and cleanup is unconfirmed "
                        f"for sandbox {sandbox_id}."
                    ) from None
                raise
        metadata = lease_metadata(
            config, company_id=env.company_id, environment_id=env.environment_id, marker=marker
        )
        return Lease(provider_lease_id=sandbox_id, metadata=metadata)

    async def resume_lease(
        self, env: Environment, provider_lease_id: str, lease_metadata: Mapping[str, Any] | None
    ) -> Lease:
        """Bring a stored lease back to ``running``, or report it expired (never deletes)."""
        self._refuse_after_shutdown()
        config = self._owned(env, lease_metadata)
        if config is None or lease_metadata is None:
            raise CreateosError("CreateOS lease does not belong to this environment.")
        client = self._client(config)
        scope = self._scopes.get(self._scope_key(env, config, provider_lease_id))
        if scope is not None and (scope.closing or scope.unconfirmed):
            raise CreateosError("CreateOS lease cleanup must finish before resume.")
        marker = resumable_marker(lease_metadata, config)
        if marker is None:
            return _expired()
        with self._deadline(config) as signal:
            try:
                sandbox = await client.get_sandbox(provider_lease_id, signal=signal)
                if sandbox["status"] in ("destroyed", "failed"):
                    return _expired()
                await transition(client, provider_lease_id, "running", signal)
                result = await client.exec(
                    provider_lease_id, "/bin/cat", [MARKER_PATH], signal=signal
                )
            except CreateosApiError as error:
                if error.status == 404:
                    return _expired()
                raise
        if not _is_zero(result.get("exit_code")) or result.get("stdout") != marker:
            return _expired()
        return Lease(
            provider_lease_id=provider_lease_id,
            metadata={**lease_metadata, "resumedLease": True},
        )

    async def release_lease(
        self,
        env: Environment,
        provider_lease_id: str | None,
        lease_metadata: Mapping[str, Any] | None,
    ) -> None:
        """Stop work on the lease, then pause it (``reuseLease``) or delete it."""
        await self._close(env, provider_lease_id, lease_metadata, destroy=False)

    async def destroy_lease(
        self,
        env: Environment,
        provider_lease_id: str | None,
        lease_metadata: Mapping[str, Any] | None,
    ) -> None:
        """Stop work on the lease and delete the sandbox; clears unconfirmed cleanup."""
        await self._close(env, provider_lease_id, lease_metadata, destroy=True)

    # -- tracked work ---------------------------------------------------------------------------

    async def execute(
        self,
        env: Environment,
        lease: Lease,
        command: str,
        args: Sequence[str] = (),
        *,
        cwd: str | None = None,
        env_vars: Mapping[str, Any] | None = None,
        stdin: str | None = None,
        timeout_ms: int | None = None,
        log: LogSink | None = None,
    ) -> ExecuteResult:
        """Run a command in the lease's sandbox as a managed process.

        See docs/provider-execution.md#running-a-command.
        """
        config, client, key, lease_id = self._open_scope(env, lease)
        timeout = config.timeout_ms if timeout_ms is None else timeout_ms
        if not valid_timeout_ms(timeout):
            raise CreateosError("Invalid CreateOS command timeout.")
        params = ExecuteParams(command=command, args=args, cwd=cwd, env=env_vars, stdin=stdin)
        return await self._scopes.track(
            key,
            timeout,
            lambda signal: execute_command(
                client,
                lease_id,
                params,
                signal,
                log,
                clock=self._clock,
                timeout_ms_cleanup=config.timeout_ms,
            ),
        )

    async def sync_in(
        self, env: Environment, lease: Lease, operations: Sequence[SyncOperation]
    ) -> SyncResult:
        """Copy host files into the sandbox workspace (docs/provider-execution.md#file-sync)."""
        return await self._sync(env, lease, operations, "in")

    async def sync_out(
        self, env: Environment, lease: Lease, operations: Sequence[SyncOperation]
    ) -> SyncResult:
        """Copy sandbox workspace files to the host (docs/provider-execution.md#file-sync)."""
        return await self._sync(env, lease, operations, "out")

    # -- probe and shutdown ---------------------------------------------------------------------

    async def probe(self, env: Environment) -> ProbeResult:
        """Create a throwaway sandbox, run ``echo`` in it, and always delete it.

        A failure to delete is raised (never hidden): the account may hold a leaked sandbox.
        """
        lease: Lease | None = None
        client: CreateosClient | None = None
        try:
            lease = await self.acquire_lease(env, run_id="probe")
            config = parse_config(env.config)
            client = self._client(config)
            assert lease.provider_lease_id is not None
            params = ExecuteParams(command="/bin/echo", args=(_PROBE_TOKEN,), cwd=WORKSPACE)
            with self._deadline(config) as signal:
                result = await execute_command(
                    client,
                    lease.provider_lease_id,
                    params,
                    signal,
                    None,
                    clock=self._clock,
                    timeout_ms_cleanup=config.timeout_ms,
                )
            ready = _PROBE_TOKEN in result.stdout
            if result.timed_out or not _is_zero(result.exit_code) or not ready:
                raise CreateosError("CreateOS command probe failed.")
            return ProbeResult(ok=True, summary=_PROBE_OK)
        except Exception as error:
            summary = str(error) if isinstance(error, CreateosError) else "CreateOS probe failed."
            return ProbeResult(ok=False, summary=summary or "CreateOS probe failed.")
        finally:
            if lease is not None and lease.provider_lease_id and client is not None:
                await client.delete_sandbox(lease.provider_lease_id)

    async def shutdown(self) -> None:
        """Refuse new commands, cancel and await active ones, and close HTTP connections.

        Sandboxes are neither paused nor deleted: the host owns durable leases.
        """
        await self._scopes.shutdown()
        await self._http.aclose()

    # -- internals ------------------------------------------------------------------------------

    def _refuse_after_shutdown(self) -> None:
        """After ``shutdown()`` nothing may start a sandbox nobody would stop."""
        if self._scopes.shutting_down:
            raise CreateosError(_SHUT_DOWN)

    def _owned(self, env: Environment, metadata: object) -> CreateosConfig | None:
        config = parse_config(env.config)
        matches = metadata_matches(
            metadata, config, company_id=env.company_id, environment_id=env.environment_id
        )
        return config if matches else None

    def _client(self, config: CreateosConfig) -> CreateosClient:
        return CreateosClient(
            http=self._http.get(config.api_url),
            api_url=config.api_url,
            api_key=resolve_api_key(config, self._environ),
            timeout_ms=config.timeout_ms,
            clock=self._clock,
            pacer=self._pacer,
        )

    def _scope_key(self, env: Environment, config: CreateosConfig, lease_id: str) -> str:
        return scope_key(
            config,
            resolve_api_key(config, self._environ),
            company_id=env.company_id,
            environment_id=env.environment_id,
            lease_id=lease_id,
        )

    def _deadline(self, config: CreateosConfig) -> DeadlineSignal:
        return deadline_signal(self._clock, config.timeout_ms / 1000)

    async def _prepare(self, client: CreateosClient, sandbox_id: str, signal: AbortSignal) -> str:
        """Steps after creation: running, workspace directory, lease marker."""
        await transition(client, sandbox_id, "running", signal)
        result = await client.exec(
            sandbox_id, "/bin/bash", ["-lc", f"mkdir -p -- '{WORKSPACE}'"], signal=signal
        )
        if not _is_zero(result.get("exit_code")):
            raise CreateosError(
                "CreateOS workspace preparation failed; the image must provide Bash."
            )
        marker = str(uuid.uuid4())
        await client.upload(sandbox_id, MARKER_PATH, marker.encode(), signal=signal)
        return marker

    async def _close(
        self,
        env: Environment,
        lease_id: str | None,
        metadata: Mapping[str, Any] | None,
        *,
        destroy: bool,
    ) -> None:
        if not lease_id:
            return
        config = self._owned(env, metadata)
        if config is None:
            raise CreateosError("CreateOS lease does not belong to this environment.")
        client = self._client(config)
        key = self._scope_key(env, config, lease_id)
        async with self._scopes.closing(key) as scope:
            if destroy or not config.reuse_lease:
                await client.delete_sandbox(lease_id)
                scope.unconfirmed = False
                return
            if scope.unconfirmed:
                raise CreateosError(
                    "CreateOS process cleanup is unconfirmed; destroy this lease before reusing it."
                )
            with self._deadline(config) as signal:
                try:
                    await transition(client, lease_id, "paused", signal)
                except CreateosApiError as error:
                    if error.status != 404:
                        raise

    def _open_scope(
        self, env: Environment, lease: Lease
    ) -> tuple[CreateosConfig, CreateosClient, str, str]:
        """Guards shared by execute and sync: ownership, then closing/cleanup state."""
        lease_id = lease.provider_lease_id
        config = self._owned(env, lease.metadata) if lease_id else None
        if config is None or not lease_id:
            raise CreateosError("CreateOS execution requires a lease from this environment.")
        client = self._client(config)
        key = self._scope_key(env, config, lease_id)
        self._scopes.check_open(key)
        return config, client, key, lease_id

    async def _sync(
        self,
        env: Environment,
        lease: Lease,
        operations: Sequence[SyncOperation],
        direction: Literal["in", "out"],
    ) -> SyncResult:
        config, client, key, lease_id = self._open_scope(env, lease)
        return await self._scopes.track(
            key,
            config.timeout_ms,
            lambda signal: sync_files(
                client,
                lease_id,
                operations,
                direction,
                signal,
                clock=self._clock,
                execute=execute_command,
            ),
        )


_PROBE_OK = "CreateOS sandbox creation and command execution succeeded."
_SHUT_DOWN = "CreateOS provider is shut down; create a new provider for new leases."


def _expired() -> Lease:
    """A fresh expired lease (hosts may mutate what they get back)."""
    return Lease(provider_lease_id=None, metadata={"expired": True})


def _is_zero(value: object) -> bool:
    """JavaScript ``value === 0``: a number equal to zero, never ``False``."""
    return isinstance(value, int | float) and not isinstance(value, bool) and value == 0
