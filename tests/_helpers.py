"""Helpers tests in several folders share (bounded waits, open descriptors, runtime
differences), imported as ``tests._helpers`` (never ``from conftest import``: that resolves to
whichever ``conftest`` module was collected first, so a run listing another folder's test file
first failed to collect)."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from fake_server import FakeCreateOS

__all__ = [
    "S3_DISK",
    "bashkit_differs",
    "followed_build_log",
    "open_fds",
    "running_below",
    "settled",
    "until",
]


#: A disk's create body (an S3 bucket nobody reaches: the fake keeps a directory for it).
S3_DISK = {
    "name": "data",
    "config": {"bucket": "b", "endpoint": "https://s3.example.test"},
    "credentials": {"access_key": "a", "secret_key": "s"},
}


async def until(check: Callable[[], Awaitable[bool]], bound: float = 20.0) -> None:
    """Wait (real time, bounded) until ``check()`` holds: a real program decides when."""
    loop = asyncio.get_running_loop()
    end = loop.time() + bound
    while not await check():
        if loop.time() > end:
            raise AssertionError("condition not reached within the bound")
        await asyncio.sleep(0.01)


def settled(predicate: Callable[[], bool], bound: float = 10.0) -> bool:
    """Whether ``predicate()`` holds within ``bound`` real seconds: a real process decides
    when it is reaped or has printed, so the test polls what it waits for (never a duration)."""
    end = time.monotonic() + bound
    while not predicate():
        if time.monotonic() > end:
            return False
        time.sleep(0.005)
    return True


def open_fds() -> int:
    """Descriptors this process holds now (Linux: ``/proc/self/fd``)."""
    return len(os.listdir("/proc/self/fd"))


def bashkit_differs(rt_fake: FakeCreateOS, request: pytest.FixtureRequest, reason: str) -> None:
    """Mark the test a strict xfail on the bashkit runtime: a documented runtime difference."""
    if rt_fake.runtime == "bashkit":
        request.applymarker(pytest.mark.xfail(strict=True, reason=f"difference: {reason}"))


def running_below(root: int, argv: bytes) -> list[int]:
    """Processes below ``root`` whose command line is ``argv`` (NUL-terminated arguments): a
    sandbox's program as the host sees it (a build step's ``sleep``)."""
    from fake_server.runtime.process.sandbox import tree

    found = []
    for level in tree.descendants(root):
        for pid in level:
            try:
                if Path(f"/proc/{pid}/cmdline").read_bytes() == argv:
                    found.append(pid)
            except OSError:
                continue
    return found


def followed_build_log(
    origin: str, api_key: str, template_id: str, *, timeout: float = 120, **options: Any
) -> list[dict[str, Any]]:
    """A template's build log followed to its final event (the build ended): every event, the
    final one last. ``timeout`` bounds the stream; ``options`` go to ``httpx.stream``."""
    with httpx.stream(
        "GET",
        f"{origin}/v1/templates/{template_id}/logs",
        params={"follow": "true"},
        headers={"X-Api-Key": api_key},
        timeout=timeout,
        **options,
    ) as reply:
        assert reply.status_code == 200
        return [json.loads(line) for line in reply.iter_lines() if line]
