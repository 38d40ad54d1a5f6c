"""Command-line options, their ini twins, and the run-wide settings read from them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import pytest

__all__ = ["CHECK_MODES", "JOURNAL_MODES", "Options", "add_options", "read_options"]

CheckMode = Literal["fail", "warn", "off"]
CHECK_MODES: tuple[CheckMode, ...] = ("fail", "warn", "off")
JournalMode = Literal["short", "full", "off"]
JOURNAL_MODES: tuple[JournalMode, ...] = ("short", "full", "off")


@dataclass(frozen=True, slots=True)
class Options:
    """Run-wide settings: the default seed, the teardown checks and live mode."""

    seed: int = 0
    leak_check: CheckMode = "fail"
    unfired_faults: CheckMode = "fail"
    live: bool = False
    journal: JournalMode = "short"
    #: Live tests may skip when credentials are missing (otherwise that is a usage error).
    live_optional: bool = False
    #: After a failing test, keep the fake serving and show its dashboard until Enter.
    ui: bool = False


def add_options(parser: pytest.Parser) -> None:
    """Register every ``--createos-*`` option with its ini twin (the option wins)."""
    group = parser.getgroup("createos", "CreateOS fake and live API")
    group.addoption(
        "--createos-seed",
        dest="createos_seed",
        default=None,
        help="default seed of the fake for every test (ids, keys, probabilistic faults); "
        "ini: createos_seed; default 0",
    )
    group.addoption(
        "--createos-leak-check",
        dest="createos_leak_check",
        default=None,
        help="what a test that leaves sandboxes running or paused gets: fail|warn|off; "
        "ini: createos_leak_check; default fail",
    )
    group.addoption(
        "--createos-unfired-faults",
        dest="createos_unfired_faults",
        default=None,
        help="what a test whose armed faults never fired gets: fail|warn|off; "
        "ini: createos_unfired_faults; default fail",
    )
    group.addoption(
        "--createos-live",
        dest="createos_live",
        action="store_const",
        const="true",
        default=None,
        help="run tests marked createos_live against the real API (CREATEOS_API_URL, "
        "CREATEOS_API_KEY, CREATEOS_SHAPE); ini: createos_live; default off",
    )
    group.addoption(
        "--createos-journal",
        dest="createos_journal",
        default=None,
        help="a failing test's createos journal: short (one line per call, polls collapsed), "
        "full (every event, full ids, every traceback frame) or off; ini: createos_journal; "
        "default short",
    )
    group.addoption(
        "--createos-live-optional",
        dest="createos_live_optional",
        action="store_const",
        const="true",
        default=None,
        help="with --createos-live, skip live tests when CREATEOS_API_KEY is missing instead "
        "of stopping the run; ini: createos_live_optional; default off",
    )
    group.addoption(
        "--createos-ui",
        dest="createos_ui",
        action="store_const",
        const="true",
        default=None,
        help="after a failing test, keep the fake serving and print its web dashboard's "
        "address with the test's sandbox selected, until Enter is pressed (needs a terminal "
        "on stdin); ini: createos_ui; default off",
    )
    parser.addini("createos_seed", "default seed of the fake (int)", default="0")
    parser.addini("createos_leak_check", "fail|warn|off for leaked sandboxes", default="fail")
    parser.addini("createos_unfired_faults", "fail|warn|off for unfired faults", default="fail")
    parser.addini("createos_live", "run createos_live tests against the real API", default="0")
    parser.addini("createos_journal", "short|full|off: a failing test's journal", default="short")
    parser.addini(
        "createos_live_optional", "skip live tests when credentials are missing", default="0"
    )
    parser.addini("createos_ui", "show a failing test's fake in the dashboard", default="0")


def _value(config: pytest.Config, name: str) -> str:
    option = config.getoption(name)
    if option is not None:
        return str(option)
    return str(config.getini(name)).strip()


def _mode(config: pytest.Config, name: str) -> CheckMode:
    text = _value(config, name).lower()
    for mode in CHECK_MODES:
        if text == mode:
            return mode
    flag = "--" + name.replace("_", "-")
    raise pytest.UsageError(f"{flag} (ini {name}) must be one of fail, warn, off; got {text!r}")


def _seed(config: pytest.Config) -> int:
    text = _value(config, "createos_seed")
    try:
        seed = int(text)
    except ValueError:
        seed = -1
    if seed < 0:
        raise pytest.UsageError(
            f"--createos-seed (ini createos_seed) must be an integer >= 0; got {text!r}"
        )
    return seed


def _journal(config: pytest.Config) -> JournalMode:
    text = _value(config, "createos_journal").lower()
    for mode in JOURNAL_MODES:
        if text == mode:
            return mode
    raise pytest.UsageError(
        f"--createos-journal (ini createos_journal) must be one of short, full, off; got {text!r}"
    )


def _flag(config: pytest.Config, name: str) -> bool:
    text = _value(config, name).lower()
    truth: dict[str, bool] = {"1": True, "true": True, "yes": True, "on": True}
    truth.update({"0": False, "false": False, "no": False, "off": False, "": False})
    if text not in truth:
        raise pytest.UsageError(
            f"--{name.replace('_', '-')} (ini {name}) must be true or false; got {text!r}"
        )
    return truth[text]


def read_options(config: pytest.Config) -> Options:
    """Parse and validate the options once per run; bad values are a usage error."""
    return Options(
        seed=_seed(config),
        leak_check=_mode(config, "createos_leak_check"),
        unfired_faults=_mode(config, "createos_unfired_faults"),
        live=_flag(config, "createos_live"),
        journal=_journal(config),
        live_optional=_flag(config, "createos_live_optional"),
        ui=_flag(config, "createos_ui"),
    )
