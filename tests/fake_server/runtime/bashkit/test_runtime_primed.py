"""Custom commands reach bashkit as started coroutines, so a dropped one never warns.

bashkit drops the coroutine of a custom command unawaited when a run is cancelled (or its loop
stops) between calling the command and scheduling it; a fresh coroutine then warns "was never
awaited" at garbage collection, in an unrelated test and as an error under ``-W error``.
"""

from __future__ import annotations

import asyncio
import gc
import inspect
import warnings
from typing import Any

import pytest

from fake_server.runtime.bashkit.primed import primed


def _command(log: list[str]) -> Any:
    async def command(ctx: Any) -> int:
        log.append(f"ran {ctx}")
        return 7

    return command


def _warnings_when_dropped(make: Any) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        coroutine = make("ctx")
        del coroutine
        gc.collect()
    return [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]


def test_a_primed_command_is_a_coroutine_function_for_bashkit() -> None:
    assert inspect.iscoroutinefunction(primed(_command([])))


def test_a_dropped_call_does_not_warn_and_never_runs_the_command() -> None:
    log: list[str] = []
    assert _warnings_when_dropped(primed(_command(log))) == []
    assert log == []


def test_the_unprimed_command_would_warn() -> None:
    # The condition the wrapper exists for; if Python stops warning, the wrapper can go.
    assert any("never awaited" in w for w in _warnings_when_dropped(_command([])))


@pytest.mark.asyncio
async def test_a_task_driving_a_call_runs_the_command_on_the_loop() -> None:
    log: list[str] = []
    coroutine = primed(_command(log))("ctx")
    assert log == []
    assert await asyncio.ensure_future(coroutine) == 7
    assert log == ["ran ctx"]


@pytest.mark.asyncio
async def test_bashkit_runs_primed_commands(box: Any) -> None:
    box.commands.register("seven", lambda io: 7)
    result = await box.sh("seven; echo status=$?; realpath -m /a/../b")
    assert (result.code, result.stdout) == (0, "status=7\n/b\n")
