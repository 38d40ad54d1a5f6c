"""An unprivileged user's devbox:1 tree, made as root from root's own for the suite.

``createos-fake image`` run as a user with subordinate ids builds the tree with
``mmdebstrap --mode=unshare`` (minutes, from Debian's archive); the suite, which reaches no
registry, gives the user a copy of the tree CI built as root instead, with the owners that
build leaves: root's files the user's, id ``n``'s subordinate id ``subuid + n``, set-user-ID
bits kept. For a user without subordinate ids (``idmap.OwnId``) every file is the user's, as
that user's build leaves them, with apt's configuration to download as root
(``debian.OWN_APT``). bun is copied too (the fake installs it from npm otherwise).
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from typing import TYPE_CHECKING

import pytest

from fake_server.runtime.process.containment import idmap
from fake_server.runtime.process.images import debian
from fake_server.runtime.process.images.image import cache_dir

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

__all__ = ["give_tree", "tree_for"]


def _shift(top: Path, ids: idmap.Subordinate | idmap.OwnId) -> None:
    """Owners as the user's build leaves them (as root)."""
    subordinate = isinstance(ids, idmap.Subordinate)
    subuid, subgid = (ids.subuid, ids.subgid) if isinstance(ids, idmap.Subordinate) else (0, 0)

    def owner(number: int, own: int, sub: int) -> int:
        return sub + number if number and subordinate else own

    seen: set[tuple[int, int]] = set()

    def fix(path: str) -> None:
        found = os.lstat(path)
        if found.st_nlink > 1 and not stat.S_ISDIR(found.st_mode):
            if (found.st_dev, found.st_ino) in seen:
                return
            seen.add((found.st_dev, found.st_ino))
        uid = owner(found.st_uid, ids.uid, subuid)
        gid = owner(found.st_gid, ids.gid, subgid)
        os.lchown(path, uid, gid)
        if not stat.S_ISLNK(found.st_mode) and found.st_mode & 0o6000:
            os.chmod(path, stat.S_IMODE(found.st_mode))

    fix(str(top))
    for where, dirs, files in os.walk(top):
        for name in dirs + files:
            fix(os.path.join(where, name))


def give_tree(home: Path, ids: idmap.Subordinate | idmap.OwnId) -> Path | None:
    """Put a devbox:1 tree for ``ids`` (and bun) in the image cache of ``home``; ``None``
    when root has none to copy (``createos-fake image`` not run here)."""
    source = debian.built(cache_dir())
    bun = cache_dir() / "bun"
    if source is None or not bun.is_dir():
        return None
    cache = home / ".cache/createos-fake/images"
    cache.mkdir(parents=True)
    target = debian.user_tree(cache)
    subprocess.run(["cp", "-a", "--", str(source), str(target)], check=True)
    _shift(target, ids)
    if isinstance(ids, idmap.OwnId):
        (target / debian.OWN_APT[0]).write_text(debian.OWN_APT[1])
        os.chown(target / debian.OWN_APT[0], ids.uid, ids.gid)
    (target / ".createos-devbox").write_text(debian.made_for(ids))
    shutil.copytree(bun, cache / "bun", symlinks=True)
    for path in (home / ".cache", home / ".cache/createos-fake", cache):
        os.chown(path, ids.uid, ids.gid)
    subprocess.run(["chown", "-R", f"{ids.uid}:{ids.gid}", str(cache / "bun")], check=True)
    return target


def tree_for(ids: idmap.Subordinate | idmap.OwnId) -> Callable[[Path], None]:
    """A ``serve_as`` ``prepare`` giving the user's home a tree for ``ids`` (``give_tree``);
    it skips the test where root has none to copy."""

    def prepare(home: Path) -> None:
        if give_tree(home, ids) is None:
            pytest.skip("no devbox:1 image built here to copy (createos-fake image)")

    return prepare
