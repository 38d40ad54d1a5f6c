"""A provider call whose coroutine never ran fails its test, naming the call and the fix.

``createos_provider.execute(env, lease, "echo", ["hi"])`` in a sync test builds a coroutine
and drops it: nothing runs, the test passes green, and Python's only trace is a
``RuntimeWarning`` ("coroutine ... was never awaited") in the warnings summary. While a test
that uses the plugin runs, that warning, for the provider's and the lease factory's
coroutines only, is turned into an error: Python hands an error raised while it drops a
coroutine to ``sys.unraisablehook``, where this module collects it, and the test fails at its
end with one line per call. Other unraisable errors go on to the hook installed before.
"""

from __future__ import annotations

import contextlib
import re
import sys
import warnings
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["NEVER_RUN", "never_run"]

#: The warning Python gives for a coroutine of ours dropped unstarted.
_PATTERN = r"coroutine '(CreateosProvider|LeaseFactory)\.(\w+)' was never awaited"

NEVER_RUN = (
    "createos: {call}(...) was called but never ran: it returns a coroutine, which did "
    "nothing. {fix}"
)
_FIXES = {
    "CreateosProvider": (
        "createos_provider",
        "In a sync test run it with createos_run(createos_provider.{name}(...)); in an async "
        "test await it.",
    ),
    "LeaseFactory": (
        "createos_leases",
        "In a sync test call createos_leases.{name}_sync(...); in an async test await it.",
    ),
}


def _failure(owner: str, name: str) -> str:
    fixture, fix = _FIXES[owner]
    return NEVER_RUN.format(call=f"{fixture}.{name}", fix=fix.format(name=name))


@contextlib.contextmanager
def never_run() -> Iterator[list[str]]:
    """Collect, while the block runs, one failure line per provider coroutine never run."""
    found: list[str] = []
    previous = sys.unraisablehook

    def hook(unraisable: sys.UnraisableHookArgs) -> None:
        value = unraisable.exc_value
        match = re.fullmatch(_PATTERN, str(value)) if isinstance(value, RuntimeWarning) else None
        if match is None:
            previous(unraisable)
            return
        failure = _failure(*match.groups())
        if failure not in found:
            found.append(failure)

    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=_PATTERN, category=RuntimeWarning)
        sys.unraisablehook = hook
        try:
            yield found
        finally:
            sys.unraisablehook = previous
