"""Chaos harness: hundreds of lease lifecycles through the provider under seeded faults.

Each lifecycle (acquire, execute, sync in and out, release with pause, resume, destroy) runs
in its own account of one shared fake with random probabilistic faults on the operations the
provider uses, narrowed to that account. After each lifecycle the guarantees a host relies on
are checked:

* no sandbox is left running or paused without a lease the provider returned (or named in
  its cleanup error; a lost *create* reply is the documented unrecoverable case);
* a lease is resumed only when its marker matched;
* a transient fault never expired a lease, and resume and release-with-reuse never delete;
* an ambiguous process creation ended in ``CreateosCleanupError`` and blocked reuse until
  destroy;
* no error message contains the API key, a response body or a URL.

On failure the seed, the lifecycle and its journal are printed. ``CHAOS_SEED`` and
``CHAOS_LIFECYCLES`` override the defaults. A lifecycle's fault schedule depends only on the
seed and its index, so ``CHAOS_SEED=<seed> CHAOS_ONLY=<index>`` replays one failing lifecycle
on its own (with ``CHAOS_CONCURRENCY=1`` a whole run is reproducible request for request;
with several lifecycles in flight the interleaving, and so the count of firings of
every-call faults, may vary). ``tests/test_chaos.py`` (marked ``chaos``, a CI
step of its own) and ``benchmarks/bench_chaos.py`` both run ``run_chaos``.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from aiohttp import web

from fake_server import FakeCreateOS, TransitionPolicy, VirtualClock, clock_transport
from fake_server.faults import (
    Action,
    CrashProcess,
    CutStream,
    DetachDisk,
    DuplicateFrame,
    EmptyReply,
    EvictOutput,
    ExhaustCredit,
    ExitWithoutStatus,
    FailTemplateBuild,
    Fault,
    Forget,
    HttpError,
    Latency,
    LostReply,
    MalformedFrame,
    ResetAfterHeaders,
    ResetBeforeResponse,
    SetStatus,
    SkipFrame,
    StallStream,
    TamperFile,
    TruncatedDownload,
    VanishNetwork,
)
from fake_server.faults.catalog import ACTION_TYPES
from fake_server.http.keys import ACCOUNT_KEY, OPERATION_KEY
from pytest_createos.provider import (
    CreateosCleanupError,
    CreateosError,
    CreateosProvider,
    Environment,
    FileMapping,
    Lease,
    Pacer,
    SyncOperation,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence
    from pathlib import Path

    from aiohttp.typedefs import Middleware

    Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
    #: A lifecycle's faults from its random source, index and account id.
    Schedule = Callable[[random.Random, int, str], list[Fault]]

T = TypeVar("T")

SEED = int(os.environ.get("CHAOS_SEED", "20261202"))
LIFECYCLES = int(os.environ.get("CHAOS_LIFECYCLES", "500"))
CONCURRENCY = int(os.environ.get("CHAOS_CONCURRENCY", "8"))
ONLY = [int(i) for i in os.environ.get("CHAOS_ONLY", "").split(",") if i.strip()]
# Real seconds of quiet before the virtual clock jumps (the clock's own default).
CLOCK_THRESHOLD = float(os.environ.get("CHAOS_CLOCK_THRESHOLD", "0.002"))
WORKSPACE = "/paperclip-workspace"
TEST_FILE = "tests/test_chaos.py"
MARKER_PATH = f"{WORKSPACE}/.paperclip-runtime/.paperclip-createos-lease"
SECRET_BODY = "chaos-secret-response-body"
AMBIGUOUS = "CreateOS process creation could not be confirmed; destroy the lease before reusing it."
CLOSING = "CreateOS lease is closing or requires cleanup."
UNCONFIRMED = "CreateOS process cleanup is unconfirmed; destroy this lease before reusing it."
RESUME_BLOCKED = "CreateOS lease cleanup must finish before resume."

_GENERIC: list[Action] = [
    HttpError(500, message=SECRET_BODY),
    HttpError(502),
    HttpError(503, message=SECRET_BODY),
    HttpError(429, retry_after=1),
    ResetBeforeResponse(),
    EmptyReply(),
    ResetAfterHeaders(),
    LostReply(),
    Latency(0.7),
    Latency(4.0),
]
_SPECIAL: dict[str, list[Action]] = {
    "get_sandbox": [HttpError(404), SetStatus("failed"), SetStatus("error"), Forget()],
    "pause_sandbox": [HttpError(409)],
    # The account's credit runs out as it resumes: 402 now and on every later resume.
    "resume_sandbox": [HttpError(409), SetStatus("destroyed"), ExhaustCredit()],
    "exec": [TamperFile(MARKER_PATH, b"not-the-marker")],
    "connect_process": [
        CutStream(after_frames=1),
        CutStream(after_frames=0, mode="eof"),
        MalformedFrame(after_frames=0),
        SkipFrame(1),
        DuplicateFrame(1),
        ExitWithoutStatus(),
        StallStream(after_frames=0, seconds=2.0),
        EvictOutput(),
        HttpError(410),
    ],
    "download_file": [TruncatedDownload(3)],
}
# The catalog's actions the mix leaves out, and why; every other action is in it.
LEFT_OUT: dict[type[Action], str] = {
    CrashProcess: "a killed process is an ordinary command result for the provider, with no "
    "lease guarantee at stake (tests/fake_server/faults/test_faults_streams.py covers it)",
    VanishNetwork: "needs a network id in the path; no call of the provider names one",
    DetachDisk: "needs a disk id in the path; no call of the provider names one",
    FailTemplateBuild: "needs a template id in the path; no call of the provider names one",
}


def chaos_mix(operation: str) -> list[Action]:
    """What a fault on ``operation`` picks from: the tuned actions above, then every other
    action of the catalog (``fake_server/faults/catalog.py``) that applies, as built with its
    defaults; a new action with a required field gets a tuned entry or a ``LEFT_OUT`` reason."""
    tuned = _GENERIC + _SPECIAL.get(operation, [])
    covered = {type(a) for a in _GENERIC} | {type(a) for v in _SPECIAL.values() for a in v}
    rest = [cls() for cls in ACTION_TYPES.values() if cls not in covered and cls not in LEFT_OUT]
    return tuned + [action for action in rest if action.applies_to(operation)]


OPERATIONS = [
    "create_sandbox",
    "get_sandbox",
    "delete_sandbox",
    "pause_sandbox",
    "resume_sandbox",
    "exec",
    "upload_file",
    "download_file",
    "create_process",
    "close_process_stdin",
    "connect_process",
    "kill_process",
]
# Faults after which an expired resume is the correct answer.
_EXPIRING = (SetStatus, Forget, TamperFile)
_AMBIGUOUS_CREATE = (ResetBeforeResponse, EmptyReply, ResetAfterHeaders, LostReply)


def random_faults(rng: random.Random, index: int, account: str) -> list[Fault]:
    """A random schedule: some operations get one probabilistic fault each."""
    if rng.random() < 0.1:
        return []  # a clean baseline now and then
    faults = []
    for operation in OPERATIONS:
        if rng.random() < 0.45:
            action = rng.choice(chaos_mix(operation))
            faults.append(
                Fault(
                    operation,
                    action,
                    account=account,
                    probability=rng.choice((0.15, 0.3, 0.6)),
                    times=rng.choice((1, 1, 2, None)),
                    name=f"lifecycle-{index}-{operation}",
                )
            )
    return faults


@dataclass
class Lifecycle:
    """One lease lifecycle in its own account, with its own faults, and its checks."""

    index: int
    fake: FakeCreateOS
    provider: CreateosProvider
    host_dir: Path
    api_key: str = ""
    account: str = ""
    messages: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    counts: Counter[tuple[str | None, str]] = field(default_factory=Counter)
    returned: set[str] = field(default_factory=set)
    named: set[str] = field(default_factory=set)
    outcome: str = "not run"
    schedule: Schedule = random_faults

    def check(self, ok: bool, what: str) -> None:
        if not ok:
            self.violations.append(what)

    def firings(self, operation: str | None = None) -> list[Action]:
        return [
            f.fault.action
            for f in self.fake.faults.fired
            if f.account == self.account and operation in (None, f.operation)
        ]

    def requests(self, operation: str) -> int:
        """Requests this account sent for ``operation``, answered or faulted."""
        return self.counts[(self.account, operation)]

    async def attempt(self, step: Awaitable[T]) -> tuple[T | None, CreateosError | None]:
        try:
            return await step, None
        except CreateosError as error:
            self.messages.append(str(error))
            return None, error

    async def run(self, seed: int) -> None:
        self.api_key = self.fake.add_account()
        self.account = self.fake.world.accounts[self.api_key].id
        rng = random.Random(seed * 100_003 + self.index)
        for fault in self.schedule(rng, self.index, self.account):
            self.fake.faults.add(fault)
        env = Environment(
            company_id="company",
            environment_id=f"env-{self.index}",
            config={
                "apiUrl": self.fake.url,
                "apiKey": self.api_key,
                "shape": "s-1vcpu-1gb",
                "reuseLease": True,
                "timeoutMs": 60_000,
            },
        )
        try:
            await self.lifecycle(env)
        except Exception as error:  # anything but a CreateosError is a provider bug
            self.violations.append(f"unexpected {type(error).__name__}: {error}")
        self.check_leftovers()
        self.check_messages()
        await self.host_cleanup(env)

    async def lifecycle(self, env: Environment) -> None:
        lease, error = await self.attempt(self.provider.acquire_lease(env, run_id="chaos"))
        if isinstance(error, CreateosCleanupError):
            self.named.add(str(error).rsplit(" ", 1)[-1].rstrip("."))
        if not isinstance(lease, Lease) or lease.provider_lease_id is None:
            self.outcome = "acquire failed"
            return
        lease_id = lease.provider_lease_id
        self.returned.add(lease_id)
        deletes = self.requests("delete_sandbox")
        blocked = await self.work(env, lease)
        self.check(self.requests("delete_sandbox") == deletes, "execute or sync deleted")
        deletes = self.requests("delete_sandbox")
        pauses = self.requests("pause_sandbox")
        _, release_error = await self.attempt(
            self.provider.release_lease(env, lease_id, lease.metadata)
        )
        self.check(self.requests("delete_sandbox") == deletes, "release with reuse deleted")
        if blocked:
            self.check(
                str(release_error) == UNCONFIRMED, f"release after ambiguity: {release_error}"
            )
            self.check(self.requests("pause_sandbox") == pauses, "paused despite ambiguity")
            _, resume_error = await self.attempt(
                self.provider.resume_lease(env, lease_id, lease.metadata)
            )
            self.check(
                str(resume_error) == RESUME_BLOCKED, f"resume after ambiguity: {resume_error}"
            )
            self.outcome = "blocked until destroy"
        else:
            await self.resume(env, lease)
        await self.attempt(self.provider.destroy_lease(env, lease_id, lease.metadata))

    async def work(self, env: Environment, lease: Lease) -> bool:
        """Execute and sync; True when an ambiguous creation blocked the lease."""
        before = len(self.firings("create_process"))
        _, error = await self.attempt(self.provider.execute(env, lease, "/bin/echo", ["chaos"]))
        during = self.firings("create_process")[before:]
        if any(_ambiguous(action) for action in during):
            self.check(isinstance(error, CreateosCleanupError), f"ambiguous create gave {error!r}")
            self.check(str(error) == AMBIGUOUS, f"ambiguous create message: {error}")
        if isinstance(error, CreateosCleanupError):
            _, again = await self.attempt(self.provider.execute(env, lease, "/bin/true"))
            self.check(str(again) == CLOSING, f"execute after cleanup error: {again}")
            return True
        source = self.host_dir / f"in-{self.index}.txt"
        source.write_text(f"payload {self.index}\n")
        target = f"{WORKSPACE}/in.txt"
        inbound = SyncOperation("in", [FileMapping("file", str(source), target)])
        _, error = await self.attempt(self.provider.sync_in(env, lease, [inbound]))
        if self.index % 2:  # sync out on every other lifecycle keeps the run inside its budget
            return isinstance(error, CreateosCleanupError)
        back = self.host_dir / f"out-{self.index}.txt"
        outbound = SyncOperation("out", [FileMapping("file", target, str(back))])
        _, out_error = await self.attempt(self.provider.sync_out(env, lease, [outbound]))
        if error is None and out_error is None:
            self.check(back.read_bytes() == source.read_bytes(), "sync round trip changed data")
        return any(isinstance(e, CreateosCleanupError) for e in (error, out_error))

    async def resume(self, env: Environment, lease: Lease) -> None:
        assert lease.provider_lease_id is not None
        deletes = self.requests("delete_sandbox")
        resumed, _ = await self.attempt(
            self.provider.resume_lease(env, lease.provider_lease_id, lease.metadata)
        )
        self.check(self.requests("delete_sandbox") == deletes, "resume deleted the sandbox")
        if not isinstance(resumed, Lease):
            self.outcome = "resume failed"
            return
        if resumed.provider_lease_id is None:
            self.outcome = "expired"
            expiring = any(
                isinstance(a, _EXPIRING) or (isinstance(a, HttpError) and a.status == 404)
                for a in self.firings()
            )
            self.check(expiring, "a transient fault expired the lease")
            return
        self.returned.add(resumed.provider_lease_id)
        self.outcome = "resumed"
        disk = self.fake.sandbox(resumed.provider_lease_id).disk
        marker = disk.read_file(MARKER_PATH).decode("utf-8", "replace")
        self.check(marker == lease.metadata["marker"], "resumed with a marker that did not match")

    def check_leftovers(self) -> None:
        lost_creates = sum(
            1
            for f in self.fake.faults.fired
            if f.account == self.account
            and f.operation == "create_sandbox"
            and _commits(f.fault.action)
        )
        account = self.fake.world.accounts[self.api_key]
        live = []
        for sandbox in list(account.sandboxes.values()):
            sandbox.settle()
            if sandbox.status in ("running", "paused", "creating", "pausing", "resuming", "error"):
                live.append(sandbox.id)
        unknown = [sid for sid in live if sid not in self.returned | self.named]
        self.check(len(unknown) <= lost_creates, f"sandboxes left without a lease: {unknown}")

    def check_messages(self) -> None:
        for message in self.messages:
            for secret in (self.api_key, SECRET_BODY, self.fake.url, "http://", "127.0.0.1"):
                self.check(secret not in message, f"error message leaks {secret!r}: {message}")

    async def host_cleanup(self, env: Environment) -> None:
        """What an operator would do: disarm, then delete whatever this account still has."""
        for fault in list(self.fake.faults.faults):
            if fault.account == self.account:
                self.fake.faults.remove(fault)
        account = self.fake.world.accounts[self.api_key]
        for sandbox_id in list(account.sandboxes):
            account.forget_sandbox(sandbox_id)

    def report(self, seed: int) -> str:
        mine = {e for e in self.fake.journal.events if e.account_id == self.account}
        ids = {e.sandbox_id for e in mine if e.sandbox_id}
        events = [e for e in self.fake.journal.events if e in mine or e.sandbox_id in ids]
        faults = [f.format() for f in self.fake.faults.fired if f.account == self.account]
        return (
            f"chaos seed={seed} lifecycle={self.index}: {self.violations}\n"
            f"replay: CHAOS_SEED={seed} CHAOS_ONLY={self.index} pytest -m chaos {TEST_FILE}\n"
            f"errors: {self.messages}\nfaults fired:\n"
            + "\n".join(faults)
            + "\njournal:\n"
            + "\n".join(e.format() for e in events)
        )


def _commits(action: Action) -> bool:
    """The operation ran but the client never saw its reply (a create then leaks by design)."""
    return isinstance(action, LostReply) or (
        isinstance(action, ResetAfterHeaders) and action.status is None
    )


def _ambiguous(action: Action) -> bool:
    return isinstance(action, _AMBIGUOUS_CREATE) or (
        isinstance(action, HttpError) and action.status >= 500
    )


@dataclass
class ChaosResult:
    lifecycles: int
    seconds: float
    failures: list[str]
    fired: int
    jumps: int = 0
    requests: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)


def request_counter(counts: Counter[tuple[str | None, str]]) -> Middleware:
    """Counts every API request per (account, operation), before any fault can answer it."""

    @web.middleware
    async def count(request: web.Request, handler: Handler) -> web.StreamResponse:
        counts[(request.get(ACCOUNT_KEY), request[OPERATION_KEY])] += 1
        return await handler(request)

    return count


async def run_chaos(
    seed: int,
    lifecycles: int,
    host_dir: Path,
    only: Sequence[int] = (),
    *,
    schedule: Schedule | None = None,
) -> ChaosResult:
    """Run ``lifecycles`` lifecycles (or just the indices in ``only``), ``CONCURRENCY`` at a
    time, on one fake and one clock."""
    clock = VirtualClock(autojump_threshold=CLOCK_THRESHOLD)
    fake = FakeCreateOS(seed=seed, clock=clock, transitions=TransitionPolicy.immediate())
    counts: Counter[tuple[str | None, str]] = Counter()
    fake.middlewares.insert(0, request_counter(counts))
    slots = asyncio.Semaphore(CONCURRENCY)
    started = time.perf_counter()
    async with fake:
        provider = CreateosProvider(
            clock=clock, pacer=Pacer.disabled(), transport=clock_transport(clock)
        )

        async def one(index: int) -> Lifecycle:
            async with slots:
                lifecycle = Lifecycle(index, fake, provider, host_dir, counts=counts)
                if schedule is not None:
                    lifecycle.schedule = schedule
                await lifecycle.run(seed)
                return lifecycle

        try:
            indices = list(only) or list(range(lifecycles))
            done = await asyncio.gather(*(one(i) for i in indices))
        finally:
            await provider.shutdown()
        failures = [lc.report(seed) for lc in done if lc.violations]
        if fake.errors:
            failures.append(f"chaos seed={seed}: the fake recorded errors: {fake.errors}")
    clock.close()
    elapsed = time.perf_counter() - started
    fired, requests = len(fake.faults.fired), len(fake.journal.requests())
    outcomes = Counter(lc.outcome for lc in done)
    return ChaosResult(len(done), elapsed, failures, fired, clock.jumps, requests, outcomes)
