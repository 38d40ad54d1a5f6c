"""bashkit 0.20.1 enters one ``contextvars.Context`` from a worker thread (calling a callback)
and from the event loop (scheduling another callback's coroutine) at once; the loser's
callback never runs and ``execute()`` never returns. ``callctx.isolate()`` gives every call
its own copy. The reproduction: two custom commands in one pipeline, the second one's call
(on bashkit's worker thread, inside ``ctx.run()``) waiting until the first one's coroutine
has started on the loop, which needs the loop to enter ``ctx`` meanwhile."""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import sys
import threading
import types
from typing import TYPE_CHECKING, Any

import bashkit
import pytest

from fake_server.runtime.bashkit import callctx
from fake_server.runtime.bashkit.primed import _CoroutineFunction

if TYPE_CHECKING:
    from collections.abc import Coroutine

#: Real seconds a blocked call or a hung execute() is given: reached only when the bug is back.
BOUND = 10.0

_LABEL: contextvars.ContextVar[str] = contextvars.ContextVar("label", default="none")


class _Overlap:
    """Commands whose calls overlap the loop's scheduling: the first call holds the loop
    (before bashkit schedules its coroutine there) until the second call has begun, and the
    second call (holding bashkit's context) waits until the first command's coroutine has
    started on the loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.lock = threading.Lock()
        self.calls = 0
        self.second_began = threading.Event()
        self.started = threading.Event()
        self.overlapped = False
        self.labels: list[str] = []

    async def body(self, ctx: bashkit.CommandContext) -> int:
        self.started.set()
        self.labels.append(_LABEL.get())
        async for chunk in ctx.stdin:
            await ctx.stdout.write(chunk)
        await ctx.stdout.write(b"x\n")
        return 0

    def call(self, ctx: bashkit.CommandContext) -> Coroutine[Any, Any, int]:
        with self.lock:
            self.calls += 1
            first = self.calls == 1
        if first:  # queued before bashkit's handle: the loop reaches it once the second began
            self.loop.call_soon_threadsafe(self.second_began.wait, BOUND)
        else:
            self.second_began.set()
            self.overlapped = not self.started.is_set()
            self.started.wait(BOUND)
        return self.body(ctx)


async def _run(bash: bashkit.Bash, script: str) -> tuple[str, list[str]]:
    errors: list[str] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _loop, context: errors.append(str(context["exception"])))
    try:
        result = await asyncio.wait_for(bash.execute(script), BOUND)
    finally:
        loop.set_exception_handler(None)
    return result.stdout, errors


def _coroutine_function(call: Any) -> Any:
    """``call`` as bashkit accepts an async command: its own code runs when bashkit calls it
    (on a worker thread, inside ``ctx.run()``), and it returns the coroutine."""
    mark = getattr(inspect, "markcoroutinefunction", None)  # Python 3.12+
    return mark(call) if mark is not None else _CoroutineFunction(call)


@pytest.mark.asyncio
async def test_two_callbacks_of_one_execute_never_share_an_entered_context() -> None:
    overlap = _Overlap(asyncio.get_running_loop())
    _LABEL.set("the caller's")
    bash = bashkit.Bash()
    for name in ("first", "second"):
        bash.add_command(name, _coroutine_function(overlap.call))
    assert callctx.isolate()
    out, errors = await _run(bash, "echo a | first | second")
    assert (out, errors) == ("a\nx\nx\n", [])
    assert overlap.overlapped  # the second call held the context while the first started
    assert overlap.labels == ["the caller's", "the caller's"]  # context variables still seen


def test_isolate_applies_once_and_leaves_another_helper_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bashkit.Bash()  # bashkit makes its helper module with the first interpreter
    assert callctx.isolate()
    assert callctx.isolate()  # idempotent
    assert callctx.isolated()

    def _call(ctx: Any, fn: Any, *args: Any) -> Any:  # another shape: left as it is
        return fn(*args)

    code = _call.__code__
    monkeypatch.setitem(sys.modules, callctx.HELPER_MODULE, types.SimpleNamespace(_call=_call))
    assert callctx.isolate() is False
    assert _call.__code__ is code
    assert not callctx.isolated()
    monkeypatch.delitem(sys.modules, callctx.HELPER_MODULE)
    assert callctx.isolate() is False
    assert not callctx.isolated()
