"""Programs run as root of a user namespace of the caller's own: how an unprivileged fake
handles files its sandboxes' ids own.

An unprivileged fake's image sandboxes (``userroot``) write files owned by the caller (their
root) and by its subordinate ids (``_apt``, ``nobody``, users they add). The caller alone can
neither copy those with their owners (a fork) nor remove them (a destroy, a sweep after a
killed fake), nor give a tree built by ``mmdebstrap --mode=unshare`` to the sandboxes' root.
Root of a user namespace mapping those ids can: ``run_mapped`` makes one with a map
(``idmap.Extents``, through ``newuidmap``), runs the program in it with ``nsenter`` and
waits. It holds nothing after: the namespace goes with its last process.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fake_server.runtime.process.containment import idmap, programs

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["remove", "run_mapped"]


def run_mapped(ids: idmap.Extents, argv: Sequence[str], *, timeout: float = 600) -> None:
    """Run ``argv`` as root of a new user namespace with the map ``ids``; ``OSError`` naming
    the program and its last line of error when it fails (``timeout``: killed past it)."""
    with idmap.unmapped() as pid:
        idmap.map_user_namespace(pid, ids)
        keep = ["--preserve-credentials"] if ids.own else []  # setgroups is denied there
        enter = ["nsenter", f"--user=/proc/{pid}/ns/user", *keep, "--"]
        env = {"PATH": programs.PATH, "LC_ALL": "C.UTF-8"}
        programs.run([*enter, *argv], what=argv[0], timeout=timeout, env=env)


def remove(ids: idmap.Extents, path: str) -> None:
    """Remove ``path`` and everything below it, whichever of ``ids`` owns it."""
    run_mapped(ids, ["rm", "-rf", "--one-file-system", "--", path])
