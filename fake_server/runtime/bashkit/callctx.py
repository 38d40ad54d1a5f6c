"""Each bashkit callback in a context of its own (a workaround for bashkit 0.20.1).

bashkit captures one ``contextvars.Context`` per ``Bash.execute()`` and uses that one object
twice for every async callback (a custom command, an output sink): one of its worker threads
calls the callback inside ``ctx.run()`` to get the coroutine, then the event loop schedules
the coroutine through ``call_soon_threadsafe(..., context=ctx)``, whose handle enters ``ctx``
too. A context can be entered by one thread at a time, so when a worker thread is preempted
inside ``ctx.run()`` (a GIL switch in the callback's own Python code, likelier under CPU
load) while the loop runs the handle of another callback of the same execute, the handle
fails with "cannot enter context: ... is already entered", asyncio logs it, that callback's
coroutine never runs and the ``execute()`` never returns. A worker thread entering ``ctx``
while the loop is inside it fails that callback the same way.

bashkit calls every callback through one module-level helper, ``_call(ctx, fn, args)`` in
its ``_bashkit_callback`` module (made with the first ``Bash``). ``isolate()`` gives that
helper the body ``ctx.copy().run(fn, *args)``: the callback sees the same context variables,
in a copy only its own call enters, so no two threads ever enter one context. The loop's
handles still share ``ctx``, but they run on one thread, one after the other.
Reproduction: ``tests/fake_server/runtime/bashkit/test_bashkit_callctx.py`` (docs/contributing.md).
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["isolate", "isolated"]

#: The module bashkit 0.20 makes its callback helper in.
HELPER_MODULE = "_bashkit_callback"


def _call(ctx: Any, fn: Any, args: Any) -> Any:
    return ctx.copy().run(fn, *args)


_ISOLATED = _call.__code__


def _helper() -> Any:
    module = sys.modules.get(HELPER_MODULE)
    return getattr(module, "_call", None)


def isolate() -> bool:
    """Make bashkit's helper run each callback in a copy of its context (after a ``Bash``
    exists); whether it does now. A helper of another shape is left alone."""
    helper = _helper()
    if helper is None:
        return False
    code = helper.__code__
    if code is _ISOLATED:
        return True
    if code.co_varnames[: code.co_argcount] != ("ctx", "fn", "args") or code.co_names != ("run",):
        return False  # not bashkit 0.20's helper: ``isolated()`` says so to the tests
    helper.__code__ = _ISOLATED
    return True


def isolated() -> bool:
    """Whether bashkit's helper runs each callback in a context of its own."""
    helper = _helper()
    return helper is not None and helper.__code__ is _ISOLATED
