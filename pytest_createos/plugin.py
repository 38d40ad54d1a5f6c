"""The pytest plugin: options (with ini twins), markers, fixtures, report header and journal.

Thin on purpose: the fake lives in ``fake_server``, the provider in ``pytest_createos.provider``;
private modules here hold options, markers, the background loop, per-test state and reports.
"""

from __future__ import annotations

import contextlib
import inspect
import warnings
from typing import TYPE_CHECKING, Any

import pytest

from pytest_createos._asyncio_ini import (
    declare_loop_scope_default,
    missing_asyncio,
    register_asyncio_marker,
)
from pytest_createos._explain import CLOSED, add_notes, body_problems
from pytest_createos._markers import (
    FIXTURES,
    MARKER_HELP,
    MarkerError,
    faults_for,
    marker_errors,
)
from pytest_createos._markers import settings_for as _settings_for
from pytest_createos._options import add_options, read_options
from pytest_createos._report import (
    LEAKING,
    SCOPE_HINT,
    CreateosWarning,
    header_line,
    ignored_first,
    ignored_warning,
    journal_text,
    problems,
    scope_mismatch,
)
from pytest_createos._traceback import documented_outcome_repr, fixture_outcome_repr

if TYPE_CHECKING:
    from collections.abc import Callable, Generator, Iterator

    from fake_server import FakeCreateOS, VirtualClock
    from pytest_createos._bridge import BridgedProvider, RunSync
    from pytest_createos._leases import LeaseFactory
    from pytest_createos._markers import MarkerSettings
    from pytest_createos._options import Options
    from pytest_createos._session import Run, Session
    from pytest_createos._shared import SharedCreateOS
    from pytest_createos.provider import Environment, Lease

# The fake, the provider and httpx load on the first createos fixture, not at pytest start-up.

__all__ = ["CreateosWarning"]

COMPANY_ID = "pytest-createos"
ENVIRONMENT_ID = "pytest-createos-env"

_OPTIONS_KEY: pytest.StashKey[Options] = pytest.StashKey()
_RUN_KEY: pytest.StashKey[Run] = pytest.StashKey()
#: Journal length when the test body started: a body that made no call gets no journal.
_BODY_START_KEY: pytest.StashKey[int] = pytest.StashKey()
#: Sandboxes a lease fixture destroys at teardown (and reports itself if it cannot).
_OWNED_KEY: pytest.StashKey[set[str]] = pytest.StashKey()
#: The test body failed and its report already named the leaks and unfired faults.
_FOLDED_KEY: pytest.StashKey[bool] = pytest.StashKey()
#: The shared fake while it runs, so each test's end can note the sandboxes made during it.
_SHARED_KEY: pytest.StashKey[SharedCreateOS] = pytest.StashKey()
#: Run-wide notices for the terminal summary.
_NOTES_KEY: pytest.StashKey[list[str]] = pytest.StashKey()


#: What a test asking for ``createos_sdk`` says where the official SDK is not installed.
SDK_MISSING = (
    "createos_sdk needs the official CreateOS Python SDK (the createos-sandbox package): "
    "pip install 'pytest-createos[sdk]'"
)


# -- hooks ------------------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


@pytest.hookimpl(wrapper=True)
def pytest_load_initial_conftests(
    early_config: pytest.Config, parser: pytest.Parser
) -> Generator[None]:
    """After the initial conftests, every plugin (those they name too) declared its settings."""
    try:
        return (yield)
    finally:
        declare_loop_scope_default(early_config.pluginmanager, parser)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    register_asyncio_marker(config)
    for name, text in MARKER_HELP.items():
        config.addinivalue_line("markers", f"{name}: {text}")
    options = config.stash[_OPTIONS_KEY] = read_options(config)
    if options.ui:
        from pytest_createos._ui import check_ui

        check_ui(config)
    if options.live and not options.live_optional:
        from pytest_createos._live import live_target

        missing = live_target()
        if isinstance(missing, str):
            raise pytest.UsageError(
                f"--createos-live: {missing}; pass --createos-live-optional (ini "
                "createos_live_optional = true) to skip the live tests instead"
            )


def pytest_report_header(config: pytest.Config) -> str:
    return header_line(config.stash[_OPTIONS_KEY])


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Marker mistakes stop the run before any test, all of them listed at once."""
    seed = config.stash[_OPTIONS_KEY].seed
    found = [p for item in items for p in marker_errors(item, seed)]
    if found:
        raise pytest.UsageError("pytest-createos marker errors:\n" + "\n".join(found))
    warning = ignored_warning(items)
    if warning is not None:
        try:
            ignored_first(items).warn(warning)
        except CreateosWarning:  # filterwarnings = error: still no reason to stop the run
            config.stash[_NOTES_KEY] = [*config.stash.get(_NOTES_KEY, []), str(warning)]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Notices that a ``filterwarnings = error`` setting kept from being warnings."""
    for note in terminalreporter.config.stash.get(_NOTES_KEY, []):
        terminalreporter.write_line(note, yellow=True)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """An async test of ours without pytest-asyncio: one line naming the extra."""
    missing = missing_asyncio(item, bool(FIXTURES.intersection(getattr(item, "fixturenames", ()))))
    if missing is not None:
        pytest.fail(missing, pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None]:
    """The shared fake's leak warning names the test during which a sandbox appeared (noted
    before teardown too: the last test's teardown ends the session's fixtures)."""
    _note_shared(item)
    try:
        return (yield)
    finally:
        _note_shared(item)


def _note_shared(item: pytest.Item) -> None:
    shared = item.config.stash.get(_SHARED_KEY, None)
    if shared is not None:
        shared.test_ended(item.nodeid)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None]:
    """Marker faults are armed as the test body starts, so fixtures (a lease) are unaffected;
    a provider coroutine the body made and never ran fails the test (``_unawaited``)."""
    run = item.stash.get(_RUN_KEY, None)
    if run is not None:
        item.stash[_BODY_START_KEY] = len(run.fake.journal)
        run.arm()
    if not FIXTURES.intersection(getattr(item, "fixturenames", ())):
        return (yield)
    from pytest_createos._unawaited import never_run

    with never_run() as found:
        result = yield
    if found:
        pytest.fail("\n".join(found), pytrace=False)
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A failing phase of a test that used the fake gets the fake's journal as a section.

    Only when the failing phase made calls (a test body that never ran, such as an async test
    without its marker, gets none); a failing body also names its leaks and unfired faults
    here, so teardown does not report the same test a second time.
    """
    options = item.config.stash[_OPTIONS_KEY]
    run = item.stash.get(_RUN_KEY, None)
    if run is not None and call.excinfo is not None:
        add_notes(call.excinfo.value, run)
    report = yield
    if report.failed and call.excinfo is not None and options.journal != "full":
        trim = fixture_outcome_repr if call.when == "setup" else documented_outcome_repr
        shorter = trim(item, call.excinfo)
        if shorter is not None:
            report.longrepr = shorter
    if report.failed and call.when == "setup" and scope_mismatch(report):
        report.sections.append(("createos", SCOPE_HINT))
    if run is None or not report.failed:
        return report
    lines: list[str] = []
    owned: set[str] = item.stash.get(_OWNED_KEY, set())
    if call.when == "call":
        item.stash[_FOLDED_KEY] = True
        failures, warned = body_problems(run, options, owned)
        noted = getattr(call.excinfo.value, "__notes__", ()) if call.excinfo else ()
        lines = [f"also: {text}" for text in failures + warned if text not in noted]
    body_start = item.stash.get(_BODY_START_KEY, None) if call.when == "call" else None
    made_calls = len(run.fake.journal) > (body_start or 0)
    if options.journal != "off" and (made_calls or call.when != "call"):
        lines.insert(0, journal_text(run, options.journal, body_start))
    if lines:
        report.sections.append(("createos journal", "\n".join(lines)))
    if options.ui and call.when == "call":
        from pytest_createos._ui import pause_on_failure

        pause_on_failure(item, run)
    return report


# -- helpers ----------------------------------------------------------------------------------


def _options(request: pytest.FixtureRequest) -> Options:
    return request.config.stash[_OPTIONS_KEY]


def _is_live(request: pytest.FixtureRequest) -> bool:
    return _options(request).live and request.node.get_closest_marker("createos_live") is not None


def _is_sync(request: pytest.FixtureRequest) -> bool:
    """The test function is plain ``def``: it runs on the main thread with no loop to watch."""
    function = getattr(request.node, "obj", None)
    return callable(function) and not inspect.iscoroutinefunction(function)


def _settings(request: pytest.FixtureRequest) -> MarkerSettings:
    try:
        return _settings_for(request.node, _options(request).seed)
    except MarkerError as error:  # pragma: no cover -- collection already refused it
        raise pytest.UsageError(str(error)) from None


# -- fixtures ---------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def _createos_session(pytestconfig: pytest.Config) -> Iterator[Session]:
    """Session scope: the worker's fake and background loop, started on first use."""
    from pytest_createos._session import Session

    session = Session(pytestconfig.stash[_OPTIONS_KEY])
    yield session
    session.close()


@pytest.fixture
def createos_fake(
    request: pytest.FixtureRequest, _createos_session: Session
) -> Iterator[FakeCreateOS]:
    """A running ``FakeCreateOS``, reset for this test.

    Scope: function (one session-scoped server per worker underneath; a test costs a reset).
    Type: ``fake_server.FakeCreateOS`` (``url``, ``api_key``, ``journal``, ``faults``,
    ``clock``, ``sandbox(id)``, ``sandboxes()``, ``add_account()``, ``commands``).
    Default: seed 0 (``--createos-seed``), ``TransitionPolicy.immediate()``, no rate limit; the
    ``createos`` marker changes these and ``createos_fault`` markers arm faults when the test
    body starts (fixture setup, such as ``createos_lease``, runs without them).
    At teardown the test fails when the fake raised internally, when sandboxes were left
    running or paused (``--createos-leak-check``, or ``createos(leak_check=...)``; lease
    fixtures' sandboxes excepted) or armed faults never fired (``--createos-unfired-faults``);
    a test whose body failed gets those two as lines of its journal instead. ``calls`` lists
    the requests for assertions. Skipped for ``createos_live`` tests under --createos-live.
    """
    if _is_live(request):
        pytest.skip("createos: this test needs the fake and is skipped under --createos-live")
    from fake_server.runtime.api import RuntimeUnavailable

    settings = _settings(request)
    try:
        run = _createos_session.begin(settings, faults_for(request.node))
    except RuntimeUnavailable as exc:
        unavailable = f"@pytest.mark.createos(runtime={settings.runtime!r}): {exc}"
    else:
        unavailable = ""
    if unavailable:
        # Where bubblewrap cannot run: the reason and what to do, not the plugin's frames.
        pytest.fail(unavailable, pytrace=False)
    request.node.stash[_RUN_KEY] = run
    request.node.stash[_OWNED_KEY] = set()
    # A sync test's own code between two calls is invisible to the clock's loop watch: its
    # thread attends, so time moves only while it waits on the fake (docs/time.md, rule 5).
    with _createos_session.clock.attend() if _is_sync(request) else contextlib.nullcontext():
        yield run.fake
    options = _createos_session.options
    folded = request.node.stash.get(_FOLDED_KEY, False)
    if not run.fake.serving:
        # The test closed the fake: nothing to check, and the next test gets a new one.
        if not folded:
            pytest.fail(CLOSED, pytrace=False)
        return
    failures, notes = problems(
        run,
        leak_check="off" if folded else run.settings.leak_check or options.leak_check,
        unfired_faults="off" if folded else options.unfired_faults,
        owned=request.node.stash.get(_OWNED_KEY, set()),
    )
    for note in notes:
        warnings.warn(CreateosWarning(note), stacklevel=1)
    if failures:
        pytest.fail("\n\n".join(failures), pytrace=False)


@pytest.fixture
def createos_clock(createos_fake: FakeCreateOS, _createos_session: Session) -> VirtualClock:
    """The fake's ``VirtualClock``, shared with ``createos_provider``.

    Scope: function (the same clock object for the whole run; it never goes back, so measure
    durations as differences of ``now()``). Type: ``fake_server.VirtualClock``.
    Default: autojump on, so waits on it take no real time; ``advance(seconds)`` moves it.
    """
    return _createos_session.clock


@pytest.fixture
def createos_env(request: pytest.FixtureRequest, _createos_session: Session) -> Environment:
    """An ``Environment`` whose config points at the fake (or the live API).

    Scope: function. Type: ``pytest_createos.provider.Environment``.
    Default: company ``pytest-createos``, environment ``pytest-createos-env``, config
    ``{"apiUrl": fake.url, "apiKey": fake.api_key, "shape": "s-1vcpu-1gb",
    "reuseLease": False}``; the ``createos`` marker sets ``shape`` and ``reuse_lease``.
    """
    from pytest_createos._live import RedactedConfig
    from pytest_createos.provider import Environment

    settings = _settings(request)
    if _is_live(request):
        from pytest_createos._live import live_target

        if request.node.get_closest_marker("createos_fault") is not None:
            pytest.skip("createos: fault tests run only on the fake, not under --createos-live")
        target = live_target()
        if isinstance(target, str):
            pytest.skip(target)
        return target.environment(reuse_lease=settings.reuse_lease)
    fake: FakeCreateOS = request.getfixturevalue("createos_fake")
    config = RedactedConfig(
        apiUrl=fake.url,
        apiKey=fake.api_key,
        shape=settings.shape,
        reuseLease=settings.reuse_lease,
    )
    return Environment(company_id=COMPANY_ID, environment_id=ENVIRONMENT_ID, config=config)


@pytest.fixture
def createos_provider(
    request: pytest.FixtureRequest, createos_env: Environment, _createos_session: Session
) -> Iterator[BridgedProvider]:
    """A ``CreateosProvider`` on the fake's clock, shut down at teardown.

    Scope: function. Type: ``pytest_createos.provider.CreateosProvider`` (a subclass whose
    coroutines run on the plugin's background loop, so it works from any test loop).
    Default: the fake's ``VirtualClock``, pacing off, no ``CREATEOS_API_KEY`` fallback. Await
    its methods in async tests; in sync tests wrap them: ``createos_run(provider.x(...))``.
    Under --createos-live: real clock, 300 ms pacing, ``os.environ``.
    """
    from fake_server import clock_transport
    from pytest_createos._bridge import BridgedProvider
    from pytest_createos.provider import Pacer

    session = _createos_session
    if _is_live(request):
        provider = BridgedProvider(session.bridge)
    else:
        provider = BridgedProvider(
            session.bridge,
            clock=session.clock,
            pacer=Pacer.disabled(),
            environ={},
            transport=clock_transport(session.clock),
        )
    yield provider
    provider.shutdown_blocking()


def _claim(request: pytest.FixtureRequest) -> Callable[[str], None]:
    """Mark a sandbox as a lease fixture's: the fake's leak check leaves it to that fixture."""
    owned = request.node.stash.get(_OWNED_KEY, None)
    return (lambda _id: None) if owned is None else owned.add


def _alive(request: pytest.FixtureRequest) -> Callable[[str], bool]:
    """Whether a sandbox still needs destroying (on the fake, by its status; live: always)."""
    run = request.node.stash.get(_RUN_KEY, None)
    if run is None:
        return lambda _id: True
    fake = run.fake

    def alive(sandbox_id: str) -> bool:
        # A closed fake killed everything, and nothing would answer a destroy.
        return fake.serving and any(
            s.id == sandbox_id and s.status in LEAKING for s in fake.sandboxes()
        )

    return alive


@pytest.fixture
def createos_lease(createos_leases: LeaseFactory) -> Lease:
    """A lease acquired for ``createos_env`` before the test, destroyed at teardown.

    Scope: function. Type: ``pytest_createos.provider.Lease`` (``provider_lease_id`` is the
    sandbox id, ``metadata`` what ``resume_lease`` needs). Default: a running sandbox of
    shape ``s-1vcpu-1gb`` with ``/paperclip-workspace`` prepared. It was acquired by an
    internal provider: use it with ``createos_provider`` like any stored lease. A test that
    destroys it itself is fine: teardown destroys only what still exists.
    """
    return createos_leases.acquire_sync()


@pytest.fixture
def createos_leases(
    request: pytest.FixtureRequest, createos_env: Environment, _createos_session: Session
) -> Iterator[LeaseFactory]:
    """A lease factory: ``await createos_leases.acquire()`` (or ``acquire_sync()``) any number.

    Scope: function. Type: ``pytest_createos.LeaseFactory``; ``acquire(env=None)`` returns a
    ``Lease`` for ``createos_env`` (or the ``Environment`` given), ``acquired`` lists them.
    Default: none acquired. At teardown every lease still alive is destroyed; one the test
    destroyed itself is left alone. The leak check does not count them.
    """
    from pytest_createos._leases import LeaseFactory

    session = _createos_session
    provider = session.lease_provider(live=_is_live(request))
    factory = LeaseFactory(provider, createos_env, session.bridge, _claim(request))
    yield factory
    failed = factory.close(_alive(request))
    if failed:
        pytest.fail("createos_leases: " + "; ".join(failed), pytrace=False)


@pytest.fixture(scope="session")
def createos_shared(
    request: pytest.FixtureRequest, _createos_session: Session
) -> Iterator[SharedCreateOS]:
    """A fake and provider shared by every test that asks, for module- or session-wide state.

    Scope: session (use it from fixtures of any scope). Type:
    ``pytest_createos.SharedCreateOS`` (``fake``, ``clock``, ``env``, ``provider``, ``run``,
    ``leases()``). Default: a second fake of its own, never reset by the plugin, so the
    per-test reset, markers and checks do not apply to it; sandboxes still alive at the end of
    the session are reported as a ``CreateosWarning``. Starts on first use.
    """
    from pytest_createos._shared import SharedCreateOS

    shared = SharedCreateOS(_createos_session.bridge, seed=_createos_session.options.seed)
    request.config.stash[_SHARED_KEY] = shared
    yield shared
    del request.config.stash[_SHARED_KEY]
    leaked = shared.leaked()
    shared.close()
    if leaked:
        warnings.warn(
            CreateosWarning(
                f"createos_shared: {len(leaked)} sandbox(es) left running or paused at the "
                f"end of the session: {', '.join(leaked)}"
            ),
            stacklevel=1,
        )


@pytest.fixture
def createos_sdk(request: pytest.FixtureRequest) -> Iterator[Any]:
    """The official SDK client (``createos.Client``) pointed at the fake (or the live API).

    Scope: function. Type: ``createos.Client``; closed at teardown. Default: the fake's URL and
    key and, on the fake, no SDK retries (its back-off sleeps in real time). Without the
    ``createos-sandbox`` package the test fails with the line that installs it.
    """
    import importlib

    createos: Any = None
    with contextlib.suppress(ImportError):
        createos = importlib.import_module("createos")
    if createos is None:
        pytest.fail(SDK_MISSING, pytrace=False)  # before the fake starts: no journal to show
    createos_env: Environment = request.getfixturevalue("createos_env")
    config = createos_env.config
    retry = None if _is_live(request) else createos.RetryOptions(max_retries=0)
    import httpx

    from fake_server import sync_clock_transport, tls_context

    # The SDK builds an httpx client (and loads the CA bundle, ~25 ms) per Client unless given one.
    # On the fake, its transport tells the clock when the test's thread waits on a request.
    transport = None
    if not _is_live(request):
        request.getfixturevalue("createos_fake")
        session: Session = request.getfixturevalue("_createos_session")
        transport = sync_clock_transport(session.clock)
    with httpx.Client(verify=tls_context(), transport=transport) as http:
        client = createos.Client(
            api_key=config["apiKey"], base_url=config["apiUrl"], retry=retry, http_client=http
        )
        yield client
        client.close()


@pytest.fixture
def createos_run(_createos_session: Session) -> RunSync:
    """Run a coroutine to completion from a sync test: ``createos_run(provider.x(...))``.

    Scope: function. Type: ``pytest_createos.RunSync``, a callable
    ``(awaitable, *, timeout=None) -> result``. Default: no timeout (``timeout`` is in real
    seconds). The coroutine runs on the plugin's background loop, where ``createos_provider``
    runs too; in async tests ``await`` instead.
    """
    return _createos_session.bridge.run
