"""Running a body in a fresh thread that exits afterwards.

Namespaces and the filesystem context are per thread: a thread that enters or makes one
must not be a thread the fake keeps. Mount and network namespaces both go through here.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["fresh_thread"]

_T = TypeVar("_T")


def fresh_thread(body: Callable[[], _T], *, name: str) -> _T:
    """``body()`` run in a new thread called ``name``, waited for; what it raised is raised in
    the caller's thread."""
    result: list[_T] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            result.append(body())
        except BaseException as exc:  # handed to the caller's thread
            failure.append(exc)

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return result[0]
