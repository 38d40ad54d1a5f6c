"""``FakeCreateOS``: the fake API server, in a background thread or in the caller's loop."""

from __future__ import annotations

import asyncio
import secrets
import threading
from typing import TYPE_CHECKING, Any, Self, TypeVar

from aiohttp import web

from fake_server.clock import DEFAULT_EPOCH, VirtualClock
from fake_server.dashboard import dashboard_url, install_dashboard
from fake_server.faults import Faults
from fake_server.http import AppState, create_app, create_preview_app
from fake_server.http.admission import ACCEPT_BATCH, Admission, deepen_backlog
from fake_server.http.connections import WatchedRunner
from fake_server.http.fault_middleware import applied_listener, journal_listener
from fake_server.http.h2front import H2Runner
from fake_server.http.ratelimit import RateLimiter
from fake_server.loopcall import call_on_loop
from fake_server.models import (
    Catalog,
    Context,
    IdGenerator,
    Journal,
    Sandbox,
    TransitionPolicy,
    World,
)
from fake_server.models.ids import check_seed
from fake_server.models.journal.calls import Calls
from fake_server.runtime.bashkit import CommandRegistry
from fake_server.runtime.bashkit.ports import PortRegistry
from fake_server.runtime.choice import Runtimes

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from aiohttp.typedefs import Middleware

    from fake_server.clock import Clock
    from fake_server.models.account import Account
    from fake_server.runtime.netoptions import NetworkOptions

__all__ = ["FakeCreateOS"]

_T = TypeVar("_T")


class FakeCreateOS:
    """A running fake of the CreateOS API.

    ``start()`` serves from a background thread with its own event loop (usable from sync and
    async code); ``async with FakeCreateOS() as fake:`` serves in the caller's loop.

    Args:
        seed: seeds ids, names, addresses and the default API key.
        clock: defaults to a fresh ``VirtualClock``.
        transitions: when async transitions complete (default ``TransitionPolicy.realistic()``).
        api_key: the default account's key (default: seeded ``cos_live_<32 hex>``).
        rate_limit: requests per minute per account; ``None`` turns it off. Settable later
            (also while serving); each change starts with fresh counts.
        control_key: the credential of the control API (``/_fake/...``, header
            ``X-Fake-Control-Key``); random per fake unless given. Account keys do not open it.
        journal_limit: keep only this many newest journal events (``None``: all of them).
        host, port: where to listen; port 0 picks a free port.
        preview_port: where preview URLs are served (on ``host``; 0 picks a free port): a port
            of their own, so nothing a sandbox serves shares the dashboard's origin
            (``preview_origin``; ``fake_server.http.handlers.preview``).
        runtime: what runs inside new sandboxes: ``"bashkit"`` (default; in-memory, on the
            fake's clock) or ``"process"`` (real programs under bubblewrap, on real time;
            ``RuntimeUnavailable`` where bubblewrap cannot run). Settable later.
        rootfs_runtime: a runtime per rootfs name, over ``runtime``.
        network: how sandboxes meet the network (``NetworkOptions``: private ranges, the
            resolver sandboxes' DNS is relayed to); the service's behaviour by default.
        egress_hostnames: ``"ignore"`` (default, as the service: host-name egress rules are
            stored and echoed, not enforced) or ``"enforce"`` (the strict mode). Settable.
        image_fallback: where the process runtime's ``devbox:1`` image cannot be built, run its
            sandboxes on the host-directory layout (user ``sandbox``, read-only ``/usr``)
            instead of raising ``RuntimeUnavailable`` with what to do.
    """

    __test__ = False

    def __init__(
        self,
        *,
        seed: int = 0,
        clock: Clock | None = None,
        transitions: TransitionPolicy | None = None,
        api_key: str | None = None,
        rate_limit: int | None = None,
        journal_limit: int | None = None,
        control_key: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        preview_port: int = 0,
        runtime: str = "bashkit",
        rootfs_runtime: Mapping[str, str] | None = None,
        network: NetworkOptions | None = None,
        egress_hostnames: str = "ignore",
        image_fallback: bool = False,
    ) -> None:
        self.seed = check_seed(seed)
        self.clock: Clock = clock if clock is not None else VirtualClock()
        self._limiter = RateLimiter(None, clock=self.clock)
        self.rate_limit = rate_limit
        self._initial_rate_limit = rate_limit
        self.host = host
        self.port = port
        self.preview_port = preview_port
        if control_key is not None and (not control_key or control_key != control_key.strip()):
            raise ValueError("control_key must be non-empty, without outer whitespace")
        #: The control API's credential, sent as ``X-Fake-Control-Key``.
        self.control_key = (
            control_key if control_key is not None else "cos_fake_" + secrets.token_hex(16)
        )
        self.commands = CommandRegistry()
        self.journal = Journal(journal_limit)
        self.errors: list[tuple[str, str]] = []
        #: Extra aiohttp middlewares, run after auth and before fault injection; read when
        #: serving starts.
        self.middlewares: list[Middleware] = []
        self._policy = transitions if transitions is not None else TransitionPolicy.realistic()
        self._ids = IdGenerator(seed, self.clock)
        self._fixed_key = api_key
        #: Servers a test puts into every bashkit sandbox: ``ports.register(8080, handler)``
        #: (``asyncio.start_server``'s callback); preview URLs and tunnels reach them.
        self.ports = PortRegistry(on_error=lambda trace: self.errors.append(("port", trace)))
        self.runtimes = Runtimes(
            self.commands,
            runtime,
            rootfs_runtime,
            network,
            image_fallback=image_fallback,
            ports=self.ports,
        )
        self.runtimes.hostnames.set(egress_hostnames)
        self._initial_runtime = runtime
        self._initial_hostnames = egress_hostnames
        self.world = World(
            Context(
                clock=self.clock,
                ids=self._ids,
                commands=self.commands,
                journal=self.journal,
                catalog=Catalog(),
                policy=self._policy,
                errors=self.errors,
                runtimes=self.runtimes,
            )
        )
        self.api_key = self._add_default_account()
        #: Fault injection rules and out-of-band changes (``fake_server.faults``).
        self.faults = Faults(seed=seed, clock=self.clock, world=self.world, loop=lambda: self._loop)
        self.faults.listeners.append(journal_listener(self.journal))
        self.faults.applied_listeners.append(applied_listener(self.journal, self.clock))
        self._runner: web.AppRunner | None = None
        self._preview_runner: web.AppRunner | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._closed = False
        self._closing: asyncio.Task[None] | None = None
        #: Called once serving stopped and processes died, before the runtimes close
        #: (``serve --state-dir`` saves the world there).
        self.closing_hooks: list[Callable[[], None]] = []

    @property
    def serving(self) -> bool:
        """Whether the fake answers at ``url``: started and not closed since."""
        return self._runner is not None

    @property
    def fixed_api_key(self) -> str | None:
        """The default account's key as given (``None``: seeded or random)."""
        return self._fixed_key

    def _add_default_account(self) -> str:
        key = self._fixed_key if self._fixed_key is not None else self._ids.api_key()
        self.world.add_account(key)
        return key

    # -- addresses ----------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The origin, e.g. ``http://127.0.0.1:41234``; the API lives under ``url + "/v1"``."""
        return f"http://{self.host}:{self.port}"

    @property
    def preview_origin(self) -> str:
        """Where preview URLs live, e.g. ``http://127.0.0.1:41235``: a sandbox's is
        ``{preview_origin}/_ingress/{id}/{port}/`` (its ``ingress_url_template``)."""
        return f"http://{self.host}:{self.preview_port}"

    @property
    def api_url(self) -> str:
        return self.url + "/v1"

    @property
    def dashboard_url(self) -> str:
        """The web dashboard (``/_fake/ui/``; log in with ``control_key``)."""
        return dashboard_url(self.url)

    @property
    def calls(self) -> Calls:
        """The requests so far, each with its reply: filter them, assert on them."""
        return Calls.from_events(self.journal.events, self.journal.origin)

    @property
    def transitions(self) -> TransitionPolicy:
        return self.world.ctx.policy

    @transitions.setter
    def transitions(self, policy: TransitionPolicy) -> None:
        self.world.ctx.policy = policy

    @property
    def rate_limit(self) -> int | None:
        """Requests per minute per caller, or ``None`` (off)."""
        return self._limiter.limit

    @rate_limit.setter
    def rate_limit(self, limit: int | None) -> None:
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int) or limit < 1
        ):
            raise ValueError("rate_limit must be None (off) or at least 1 request per minute")
        self._limiter.configure(limit)

    @property
    def runtime(self) -> str:
        """The runtime new sandboxes get (unless their rootfs has one); reset restores it."""
        return self.runtimes.default

    @runtime.setter
    def runtime(self, name: str) -> None:
        self.runtimes.default = name

    @property
    def egress_hostnames(self) -> str:
        """``ignore`` (the service: host-name egress rules are stored, not enforced) or
        ``enforce`` (the strict mode); applies to rules set from then on; reset restores it."""
        return self.runtimes.hostnames.name

    @egress_hostnames.setter
    def egress_hostnames(self, mode: str) -> None:
        self.runtimes.hostnames.set(mode)

    @property
    def catalog(self) -> Catalog:
        return self.world.ctx.catalog

    # -- serving in the caller's loop ---------------------------------------------------------

    async def __aenter__(self) -> Self:
        await self.start_async()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def start_async(
        self,
        *,
        outer_middlewares: Sequence[Middleware] = (),
        idle_timeout: float | None = None,
        shutdown_grace: float = 0.0,
    ) -> Self:
        """Serve in the running loop: the API (``url``) and preview URLs (``preview_origin``).

        ``outer_middlewares`` run before all others on both ports (``createos-fake serve``'s
        Host check and request log); ``idle_timeout`` closes a connection that has no
        complete request after that many real seconds, from its opening and between requests
        (aiohttp's keepalive timer; its default is an hour). ``shutdown_grace``: real seconds
        ``aclose()`` lets a request in flight finish its reply (its processes are killed
        first) before cutting it.
        """
        if self._runner is not None:
            raise RuntimeError("this fake is already serving")
        self._loop = asyncio.get_running_loop()
        state = AppState(
            world=self.world,
            errors=self.errors,
            faults=self.faults,
            limiter=self._limiter,
            control_key=self.control_key,
            reset=self.reset,
            origin=lambda: self.url,
            preview_origin=lambda: self.preview_origin,
            middlewares=tuple(self.middlewares),
            default_key=lambda: self.api_key,
        )
        app = create_app(state)
        install_dashboard(app)
        preview = create_preview_app(state)
        for index, middleware in enumerate(outer_middlewares):
            app.middlewares.insert(index, middleware)
            preview.middlewares.insert(index, middleware)
        timeouts: dict[str, Any] = {}
        if idle_timeout is not None:
            timeouts["keepalive_timeout"] = idle_timeout
        # The API's port speaks HTTP/1.1 and HTTP/2 (the TS SDK 0.8 opens h2c first); preview
        # URLs are relayed as HTTP/1.1, where Upgrades (WebSockets) live.
        admission = Admission()  # the API's and the previews' connections, bounded together
        runners = [
            runner_class(
                served,
                clock=self.clock,
                handler_kwargs={"access_log": None, **timeouts},
                admission=admission,
                handle_signals=False,
                handler_cancellation=True,
                shutdown_timeout=shutdown_grace,
            )
            for runner_class, served in ((H2Runner, app), (WatchedRunner, preview))
        ]
        try:
            # A hold taken on the serving loop gets that loop watched by the clock before the
            # first connection can arrive: a connection the kernel has queued but the loop has
            # not yet accepted is then seen (the loop is not parked), never jumped over.
            with self.clock.hold():
                for runner, port in zip(runners, (self.port, self.preview_port), strict=True):
                    await runner.setup()
                    site = web.TCPSite(runner, self.host, port, backlog=ACCEPT_BATCH)
                    await site.start()
                    deepen_backlog(site)
        except BaseException:
            for runner in runners:
                await runner.cleanup()
            raise
        self._runner, self._preview_runner = runners
        self.port = int(runners[0].addresses[0][1])
        self.preview_port = int(runners[1].addresses[0][1])
        self._closed = False
        for account in self.world.accounts.values():  # builds a restart interrupted go on
            account.resources.templates.resume_builds()
        return self

    async def aclose(self) -> None:
        """Stop serving and kill every process; idempotent.

        Processes die before the server stops, so a request waiting on one (an exec of
        ``sleep 40``) ends with a reply instead of holding the close.
        """
        runners = (self._runner, self._preview_runner)
        self._runner = self._preview_runner = None
        tasks = self._kill_processes()
        self.runtimes.kill_processes()
        for runner in runners:
            if runner is not None:
                await runner.cleanup()
        await self.ports.aclose()
        if tasks:
            # Cancelled interpreters stop at once; the bound only guards against a stuck one.
            await asyncio.wait(tasks, timeout=1.0)
        hooks, self.closing_hooks = self.closing_hooks, []
        for hook in hooks:
            hook()
        self.runtimes.close()
        # Pipes closed just now finish closing on the loop's next turns: give them those turns,
        # or a loop closed right after leaves them "closing" (an unclosed-transport warning).
        for _ in range(2):
            await asyncio.sleep(0)

    # -- serving from a thread ----------------------------------------------------------------

    def start(self) -> Self:
        """Serve from a background thread; returns once the port is bound."""
        if self._thread is not None or self._runner is not None:
            raise RuntimeError("this fake is already serving")
        ready = threading.Event()
        failure: list[BaseException] = []
        loop = asyncio.new_event_loop()

        def main() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self.start_async())
            except BaseException as exc:
                failure.append(exc)
                ready.set()
                loop.close()
                return
            ready.set()
            try:
                loop.run_forever()
            finally:
                loop.run_until_complete(self.aclose())
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.close()

        thread = threading.Thread(target=main, name="createos-fake-server", daemon=True)
        thread.start()
        ready.wait()
        if failure:
            thread.join()
            raise failure[0]
        self._thread = thread
        return self

    def close(self) -> None:
        """Stop serving (thread mode: stop the loop and join); idempotent."""
        if self._closed:
            return
        self._closed = True
        thread, self._thread = self._thread, None
        if thread is not None and self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            thread.join(timeout=10)
        elif self._runner is not None and self._loop is not None:
            # In-loop mode from sync code: schedule the shutdown; ``await aclose()`` is better.
            self._closing = self._loop.create_task(self.aclose())

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- accounts, inspection, reset ----------------------------------------------------------

    def add_account(self, api_key: str | None = None) -> str:
        """Another account; returns its key (seeded when not given)."""
        return self._call(lambda: self.world.add_account(api_key).api_key)

    def set_credit(self, balance: float | None, api_key: str | None = None) -> None:
        """Set an account's credit (the default account's unless ``api_key``): ``None`` is
        unlimited (the default), ``0`` makes every cost-incurring call answer 402."""
        self._call(lambda: self._account(api_key).credit.set(balance))

    def credit(self, api_key: str | None = None) -> float | None:
        """An account's credit balance; ``None`` is unlimited."""
        return self._call(lambda: self._account(api_key).credit.balance)

    def _account(self, api_key: str | None) -> Account:
        account = self.world.account_for_key(self.api_key if api_key is None else api_key)
        if account is None:
            raise KeyError("no account has this API key")
        return account

    def sandbox(self, sandbox_id: str) -> Sandbox:
        """The sandbox model (status settled), from any account; KeyError when unknown."""

        def find() -> Sandbox:
            sandbox = self.world.find_sandbox(sandbox_id)
            if sandbox is None:
                raise KeyError(sandbox_id)
            sandbox.settle()
            return sandbox

        return self._call(find)

    def sandboxes(self) -> list[Sandbox]:
        def every() -> list[Sandbox]:
            found = self.world.sandboxes()
            for sandbox in found:
                sandbox.settle()
            return found

        return self._call(every)

    def reset(self, *, seed: int | None = None) -> None:
        """Back to a fresh fake on the same port: only the default account, no sandboxes,
        no registered commands, empty journal and errors, ids reseeded (with ``seed`` when
        given), the initial transition policy and rate limit (fresh counts).

        Time restarts too, for what a test can compare: ``journal.origin`` becomes the reset
        instant (``journal.format()`` counts from it) and ids carry times from
        ``DEFAULT_EPOCH`` on, so the same seed and the same test code give the same ids and
        journal dump whatever ran before on this fake's clock.
        """
        if seed is not None:
            self.seed = check_seed(seed)

        def clear() -> None:
            self.world.clear()
            self.runtimes.clear_buckets()  # after the sandboxes that mounted them went
            self.commands.clear()  # one test's ``node`` must not answer in the next
            self.ports.clear()
            self.journal.clear()
            self.journal.rebase(self.clock.now())
            self.errors.clear()
            self._ids.reseed(self.seed)
            self._ids.rebase(DEFAULT_EPOCH)
            self.rate_limit = self._initial_rate_limit
            self.faults.clear()
            self.faults.reseed(self.seed)
            self.world.ctx.policy = self._policy
            self.runtimes.default = self._initial_runtime
            self.runtimes.hostnames.set(self._initial_hostnames)
            self.api_key = self._add_default_account()

        self._call(clear)

    def _kill_processes(self) -> list[asyncio.Task[None]]:
        tasks = []
        for account in self.world.accounts.values():  # builds first: their sandboxes go too
            tasks.extend(account.resources.templates.cancel_builds())
        for sandbox in self.world.sandboxes():
            sandbox.cancel_timer()
            for process in sandbox.processes.values():
                process.crash("SIGKILL")
                if process.task is not None and not process.task.done():
                    tasks.append(process.task)
        return tasks

    def _call(self, func: Callable[[], _T]) -> _T:
        """Run ``func`` on the server's loop (waiting for it) when called from elsewhere."""
        return call_on_loop(self._loop, func)
