"""Suite-wide guard: no sandbox process of this test process may outlive the run (checked by
the serial run CI makes; an xdist worker's own exit status does not reach the controller).

Sandboxes' DNS stays on the machine: process-runtime fakes of the suite relay no query to the
host's resolver (each is answered REFUSED at once) unless a test names a resolver of its own
(``NetworkOptions(dns_upstream=…)``)."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import settings

from fake_server.runtime.process.storage.rootdir import BASE_NAME, processes_naming
from tests._fakes import make_fake
from tests._needs import act

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["make_fake"]  # the fake factory fixture, for every test under tests/

_STRAYS = pytest.StashKey[list[int]]()
_EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

#: Property tests of the main suite try a few examples each (hypothesis's default is 100),
#: which keeps the suite within its time budget; each has a twin marked ``reliability`` that
#: sets its own, larger ``max_examples``.
settings.register_profile("main", max_examples=20, deadline=None)
settings.load_profile("main")


@pytest.fixture(autouse=True, scope="session")
def _no_host_resolver() -> Iterator[None]:
    from fake_server.runtime.process.net import network

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(network, "host_resolver", lambda: None)
        yield


@pytest.fixture(name="cpu_burners", scope="module")
def _cpu_burners() -> Iterator[None]:
    """Two busy processes for a whole module, as on a loaded machine (``pytestmark =
    pytest.mark.usefixtures("cpu_burners")``)."""
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    yield
    for burner in burners:
        burner.kill()
        burner.wait()


#: Examples slow by nature (a ``createos-fake serve`` subprocess, about 1.5 s of CPU): run in the
#: reliability step with the other subprocess tests, keeping the main suite within its budget.
_SLOW_EXAMPLES = ("cli_example.py",)


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.parent == _EXAMPLES and item.path.name in _SLOW_EXAMPLES:
            item.add_marker(pytest.mark.reliability)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test needing what is not installed: skipped with the install line, failed under
    ``CI=true`` (``tests/_needs.py``)."""
    act(item)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Objects alive after collection (modules, test items) live to the end of the run: frozen,
    Python's full garbage collections (about thirty in a run) no longer walk them."""
    gc.collect()
    gc.freeze()


def pytest_sessionfinish(session: pytest.Session) -> None:
    # Processes still running from a process-runtime directory this process created.
    strays = processes_naming(f"/{BASE_NAME}/{os.getpid()}-".encode())
    session.config.stash[_STRAYS] = strays
    if strays:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    strays = config.stash.get(_STRAYS, [])
    if strays:
        terminalreporter.write_line(f"sandbox processes left running after the tests: {strays}")
