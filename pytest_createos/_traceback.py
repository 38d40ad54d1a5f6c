"""A failing test's traceback without the frames that add nothing, through pytest's public API.

The provider's own errors (``CreateosError``: a documented outcome such as an HTTP 503) end
the traceback at the test's line that made the call: the frames inside the provider, the
bridge and the standard library between them say nothing about the test. The report is
built with ``ExceptionInfo.getrepr`` and a traceback filter, as pytest builds its own, so
``--tb``, ``-l``, ``-v`` and ``--fulltrace`` keep their meaning. Any other exception (a bug)
gets pytest's own report; the bridge's relay frames hide themselves there
(``__tracebackhide__`` in ``_bridge.py``), every provider frame stays.
"""

from __future__ import annotations

import inspect
import os
import pathlib
import sys
import sysconfig
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pytest
    from _pytest._code.code import Traceback  # the type getrepr's filter returns

__all__ = ["documented_outcome_repr", "fixture_outcome_repr"]

_PACKAGE = pathlib.Path(__file__).resolve().parent
_STDLIB = pathlib.Path(sysconfig.get_paths()["stdlib"]).resolve()
_SITE = {pathlib.Path(sysconfig.get_paths()[key]).resolve() for key in ("purelib", "platlib")}


def _internal(filename: str) -> bool:
    """A frame of the plugin, the provider, or the standard library between them."""
    path = pathlib.Path(filename)
    if path.is_relative_to(_PACKAGE):
        return True
    return path.is_relative_to(_STDLIB) and not any(path.is_relative_to(s) for s in _SITE)


def _documented(error: BaseException) -> bool:
    errors = sys.modules.get("pytest_createos.provider._errors")
    return errors is not None and isinstance(error, errors.CreateosError)


def _test_entry(traceback: Traceback, item: pytest.Item) -> int | None:
    """Where pytest starts its report: the test function's frame, else the first frame of its
    module (a fixture there); None when the failure never passed through either."""
    function = getattr(item, "function", None)
    code = getattr(inspect.unwrap(function), "__code__", None) if function else None
    for i, entry in enumerate(traceback):
        if code is not None and entry.frame.code.raw is code:
            return i
    return next((i for i, entry in enumerate(traceback) if entry.path == item.path), None)


def _trimmed(item: pytest.Item, excinfo: pytest.ExceptionInfo[BaseException]) -> Traceback | None:
    """From the test's frame to the last frame outside the plugin, provider and stdlib; None
    when that leaves out nothing."""
    traceback = excinfo.traceback
    start = _test_entry(traceback, item)
    if start is None:
        return None
    outside = [
        i for i in range(start, len(traceback)) if not _internal(str(traceback[i].frame.code.path))
    ]
    if not outside or outside[-1] == len(traceback) - 1:
        return None
    return traceback[start : outside[-1] + 1].filter(excinfo)


def _trimmable(item: pytest.Item, excinfo: pytest.ExceptionInfo[BaseException]) -> bool:
    """A provider error under a traceback style this module shortens."""
    config = item.config
    style = config.getoption("tbstyle", "auto")
    if style not in ("auto", "long", "short") or config.getoption("fulltrace", False):
        return False
    return _documented(excinfo.value)


def fixture_outcome_repr(
    item: pytest.Item, excinfo: pytest.ExceptionInfo[BaseException]
) -> Any | None:
    """The report of a plugin fixture (``createos_lease``) whose setup failed with a provider
    error: that fixture's line and the error with its notes (the fake's reason), not the
    eighty lines of pytest, pluggy, the bridge and the provider between them; None to keep
    pytest's own."""
    if not _trimmable(item, excinfo):
        return None
    traceback = excinfo.traceback
    plugin = _PACKAGE / "plugin.py"
    start = next(
        (i for i, e in enumerate(traceback) if pathlib.Path(str(e.frame.code.path)) == plugin),
        None,
    )
    if start is None:
        return None
    kept = traceback[start : start + 1]
    return excinfo.getrepr(style="short", tbfilter=lambda _excinfo: kept, chain=False)


def documented_outcome_repr(
    item: pytest.Item, excinfo: pytest.ExceptionInfo[BaseException]
) -> Any | None:
    """The report of a test that failed with a provider error, ending at the test's call;
    None to keep pytest's own (another exception, ``--fulltrace``, ``--tb=native|line|no``)."""
    config = item.config
    style = config.getoption("tbstyle", "auto")
    if not _trimmable(item, excinfo):
        return None
    kept = _trimmed(item, excinfo)
    if kept is None:
        return None
    if style == "auto" and len(kept) > 2:  # as pytest: the frames between, one line each
        middle = (entry.with_repr_style("short") for entry in kept[1:-1])
        kept = type(kept)([kept[0], *middle, kept[-1]])
    verbosity = config.get_verbosity()
    try:
        abspath = pathlib.Path(os.getcwd()) != config.invocation_params.dir
    except OSError:
        abspath = True
    return excinfo.getrepr(
        funcargs=True,
        abspath=abspath,
        showlocals=config.getoption("showlocals", False),
        style="short" if style == "short" else "long",
        tbfilter=lambda _excinfo: kept,
        truncate_locals=verbosity <= 1,
        truncate_args=verbosity <= 2,
    )
