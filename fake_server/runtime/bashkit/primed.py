"""Callbacks handed to bashkit as coroutines that have already started.

bashkit calls a custom command or an output sink on one of its worker threads and schedules
the coroutine it gets back on the caller's loop. When the run is cancelled, or the loop stops,
in between, bashkit drops that coroutine unawaited, and Python warns "coroutine ... was never
awaited" whenever the garbage collector gets to it: in whatever test happens to run then, and
as an error under ``-W error``. A coroutine that has started is closed silently instead. So
every call returns a coroutine advanced to a first, empty suspension; the callback's own code
runs only once bashkit's task resumes it, on the loop, exactly as before.

Only a task can drive a primed call (``send()``), as bashkit does; awaiting one inside another
coroutine raises "coroutine is being awaited already". Code of the fake calls the plain callback.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Awaitable, Callable, Coroutine, Generator
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import bashkit

__all__ = ["add_commands", "primed"]

Command = Callable[["bashkit.CommandContext"], Awaitable[int]]
_A = TypeVar("_A")
_R = TypeVar("_R")


def add_commands(bash: bashkit.Bash, commands: dict[str, Command]) -> None:
    """Register every command on ``bash`` through ``primed``."""
    for name, command in commands.items():
        bash.add_command(name, primed(command))


def primed(func: Callable[[_A], Awaitable[_R]]) -> Callable[[_A], Awaitable[_R]]:
    """``func`` as bashkit accepts it (a coroutine function) returning started coroutines."""

    def call(arg: _A) -> Coroutine[Any, Any, _R]:
        coroutine = _deferred(func, arg)
        coroutine.send(None)  # runs up to the empty suspension, nothing of ``func``
        return coroutine

    mark = getattr(inspect, "markcoroutinefunction", None)  # Python 3.12+
    if mark is not None:
        marked: Callable[[_A], Awaitable[_R]] = mark(call)
        return marked
    return _CoroutineFunction(call)


async def _deferred(func: Callable[[_A], Awaitable[_R]], arg: _A) -> _R:
    await _suspend_once()
    return await func(arg)


@types.coroutine
def _suspend_once() -> Generator[None, None, None]:
    yield  # consumed by the priming send(); a task resuming the coroutine continues past it


class _CoroutineFunction:
    """A plain callable that Python 3.11's ``inspect.iscoroutinefunction`` accepts.

    bashkit refuses anything else. ``inspect.markcoroutinefunction`` is the official way but only
    exists from Python 3.12; 3.11's ``inspect`` accepts a callable that carries a coroutine
    function's attributes.
    """

    def __init__(self, call: Callable[[Any], Coroutine[Any, Any, Any]]) -> None:
        self._call = call
        self.__name__: str = "command"
        self.__code__: types.CodeType = _ASYNC_CODE
        self.__defaults__: tuple[Any, ...] | None = None
        self.__kwdefaults__: dict[str, Any] | None = None
        self.__annotations__: dict[str, Any] = {}

    def __call__(self, arg: Any) -> Coroutine[Any, Any, Any]:
        return self._call(arg)


async def _async_template(arg: Any) -> Any:  # pragma: no cover - never run
    return arg


_ASYNC_CODE = _async_template.__code__
