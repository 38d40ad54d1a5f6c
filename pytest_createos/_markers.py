"""The ``createos`` and ``createos_fault`` markers: validation and per-test settings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence

    import pytest

    from fake_server.faults import Fault
    from fake_server.models import TransitionPolicy
    from pytest_createos._options import CheckMode

__all__ = [
    "DEFAULT_SHAPE",
    "FIXTURES",
    "FIXTURE_NAMES",
    "MARKER_HELP",
    "MarkerSettings",
    "faults_for",
    "marker_errors",
    "own_markers",
    "settings_for",
    "unconfigured",
]

DEFAULT_SHAPE = "s-1vcpu-1gb"
#: The fixtures that bring up the fake, so the markers have something to configure.
FIXTURE_NAMES = (
    "createos_fake",
    "createos_env",
    "createos_provider",
    "createos_lease",
    "createos_leases",
    "createos_sdk",
    "createos_clock",
)
FIXTURES = frozenset(FIXTURE_NAMES)
_SETTINGS = (
    "seed",
    "transitions",
    "reuse_lease",
    "shape",
    "rate_limit",
    "leak_check",
    "runtime",
    "egress_hostnames",
    "credit",
)
_CHECK_MODES = ("fail", "warn", "off")
_RUNTIMES = ("bashkit", "process")

MARKER_HELP = {
    "createos": "createos(seed=int, transitions='immediate'|'realistic'|TransitionPolicy, "
    "reuse_lease=bool, shape=str, rate_limit=int|None, leak_check='fail'|'warn'|'off', "
    "runtime='bashkit'|'process', egress_hostnames='ignore'|'enforce', "
    "credit=float|None): "
    "per-test settings of the CreateOS fake",
    "createos_fault": "createos_fault(operation, action, **schedule): arm a fault on the "
    "CreateOS fake for this test (same arguments as fake_server.faults.Fault)",
    "createos_live": "createos_live: run this test against the real CreateOS API under "
    "--createos-live (against the fake otherwise)",
}


class MarkerError(ValueError):
    """A marker argument the plugin cannot use; reported as a usage error."""


@dataclass(frozen=True, slots=True)
class MarkerSettings:
    """What the ``createos`` marker chose for one test, over the run's defaults."""

    seed: int
    transitions: TransitionPolicy
    transitions_name: str
    reuse_lease: bool
    shape: str
    rate_limit: int | None
    #: This test's leak check; ``None`` follows ``--createos-leak-check``.
    leak_check: CheckMode | None = None
    runtime: str = "bashkit"
    #: ``enforce``: host-name egress rules are enforced (the strict mode); ``ignore``: not,
    #: as on the service.
    egress_hostnames: str = "ignore"
    #: The default account's credit; ``None`` is unlimited, 0 answers 402 to cost-incurring calls.
    credit: float | None = None


def _merged(item: pytest.Item) -> dict[str, Any]:
    """Marker keyword arguments, the closest marker (function over class over module) winning."""
    merged: dict[str, Any] = {}
    for marker in item.iter_markers("createos"):
        if marker.args:
            raise MarkerError("@pytest.mark.createos takes keyword arguments only")
        for key, value in marker.kwargs.items():
            merged.setdefault(key, value)
    return merged


def _policy(value: object) -> tuple[TransitionPolicy, str]:
    from fake_server.models import TransitionPolicy  # lazily: keeps pytest start-up light

    if isinstance(value, TransitionPolicy):
        return value, "custom"
    if value == "immediate":
        return TransitionPolicy.immediate(), "immediate"
    if value == "realistic":
        return TransitionPolicy.realistic(), "realistic"
    raise MarkerError(
        "createos(transitions=...) must be 'immediate', 'realistic' or a TransitionPolicy"
    )


def settings_for(item: pytest.Item, default_seed: int) -> MarkerSettings:
    """The settings for ``item``; raises ``MarkerError`` with a corrective message."""
    kwargs = _merged(item)
    unknown = sorted(set(kwargs) - set(_SETTINGS))
    if unknown:
        raise MarkerError(
            f"@pytest.mark.createos got unknown argument(s) {', '.join(unknown)}; "
            f"allowed: {', '.join(_SETTINGS)}"
        )
    seed = kwargs.get("seed", default_seed)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise MarkerError(f"createos(seed=...) must be an integer >= 0; got {seed!r}")
    policy, name = _policy(kwargs.get("transitions", "immediate"))
    reuse = kwargs.get("reuse_lease", False)
    if not isinstance(reuse, bool):
        raise MarkerError("createos(reuse_lease=...) must be True or False")
    shape = kwargs.get("shape", DEFAULT_SHAPE)
    if not isinstance(shape, str) or not shape.strip():
        raise MarkerError("createos(shape=...) must be a non-empty string")
    rate_limit = kwargs.get("rate_limit")
    if rate_limit is not None and (
        isinstance(rate_limit, bool) or not isinstance(rate_limit, int) or rate_limit < 1
    ):
        raise MarkerError("createos(rate_limit=...) must be None (off) or an integer >= 1")
    leak_check = kwargs.get("leak_check")
    if leak_check is not None and leak_check not in _CHECK_MODES:
        raise MarkerError("createos(leak_check=...) must be 'fail', 'warn' or 'off'")
    runtime = kwargs.get("runtime", "bashkit")
    if runtime not in _RUNTIMES:
        raise MarkerError("createos(runtime=...) must be 'bashkit' or 'process'")
    hostnames = kwargs.get("egress_hostnames", "ignore")
    if hostnames not in ("ignore", "enforce"):
        raise MarkerError("createos(egress_hostnames=...) must be 'ignore' or 'enforce'")
    from fake_server.models.account.credit import check_balance  # lazily, like _policy

    try:
        credit = check_balance(kwargs.get("credit"))
    except ValueError:
        raise MarkerError(
            "createos(credit=...) must be None (unlimited) or a number >= 0"
        ) from None
    return MarkerSettings(
        seed, policy, name, reuse, shape, rate_limit, leak_check, runtime, hostnames, credit
    )


def faults_for(item: pytest.Item) -> list[Fault]:
    """Fresh ``Fault`` objects for every ``createos_fault`` marker on ``item``, outermost first."""
    from fake_server.faults import Action, Fault

    faults: list[Fault] = []
    for marker in reversed(list(item.iter_markers("createos_fault"))):
        args = marker.args
        if len(args) >= 2 and isinstance(args[0], Action) and isinstance(args[1], str):
            raise MarkerError(
                "@pytest.mark.createos_fault: the arguments are swapped: the operation name "
                f"comes first, then the action: createos_fault({args[1]!r}, {args[0]!r})"
            )
        try:
            faults.append(Fault(*args, **marker.kwargs))
        except (TypeError, ValueError) as error:
            raise MarkerError(f"@pytest.mark.createos_fault: {error}") from None
    return faults


def own_markers(item: pytest.Item, names: Sequence[str]) -> bool:
    """Whether one of the ``names`` markers sits on the test itself (not its module or class)."""
    return any(m.name in names for m in getattr(item, "own_markers", ()))


def unconfigured(item: pytest.Item) -> bool:
    """A test that a module- or class-wide createos marker reaches but no createos fixture."""
    marked = [m for m in ("createos", "createos_fault") if item.get_closest_marker(m) is not None]
    return (
        bool(marked)
        and not FIXTURES.intersection(getattr(item, "fixturenames", ()))
        and not own_markers(item, marked)
    )


def marker_errors(item: pytest.Item, default_seed: int) -> list[str]:
    """Every marker problem of ``item``, for one usage error at collection time."""
    problems: list[str] = []
    marked = [m for m in ("createos", "createos_fault") if item.get_closest_marker(m) is not None]
    if not marked:
        return problems
    if not FIXTURES.intersection(getattr(item, "fixturenames", ())):
        if not own_markers(item, marked):
            return problems  # a module- or class-wide marker: ignored here, with a warning
        problems.append(
            f"{item.nodeid}: @pytest.mark.{marked[0]} configures the fake, but the test uses "
            "no createos fixture (" + ", ".join(FIXTURE_NAMES) + ")"
        )
    for check in (lambda: settings_for(item, default_seed), lambda: faults_for(item)):
        try:
            check()
        except MarkerError as error:
            problems.append(f"{item.nodeid}: {error}")
    return problems
