"""Netlink inside a network namespace: pyroute2 on a socket made in that namespace.

pyroute2's own ``netns=`` forks a helper process per socket; a socket opened by a short-lived
thread that entered the namespace (``netns.in_namespace``) stays bound to it, which costs a
thread start instead. pyroute2's synchronous ``IPRoute`` runs an event loop of its own, so
it runs only in such a thread, never in the fake's loop thread. pyroute2 is imported there
too, at the first use (about 40 ms: a fake whose sandboxes share no network never loads it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from fake_server.runtime.process.net.netns import in_namespace

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["configure", "set_sysctl"]

_T = TypeVar("_T")


def configure(fd: int | None, body: Callable[[Any], _T]) -> _T:
    """Run ``body(ipr)`` with an ``IPRoute`` bound to the namespace ``fd`` (``None``: the
    fake's own); netlink errors come out as ``OSError``."""

    def run() -> _T:
        from pyroute2 import IPRoute  # type: ignore[import-untyped]

        with IPRoute(groups=0) as ipr:
            return body(ipr)

    return in_namespace(fd, run)


def set_sysctl(fd: int | None, name: str, value: str) -> None:
    """Write ``/proc/sys/<name>`` as the namespace ``fd`` sees it (net sysctls are per
    namespace and follow the thread that opens them)."""

    def write() -> None:
        with open(f"/proc/sys/{name.replace('.', '/')}", "w") as file:
            file.write(value)

    in_namespace(fd, write)
