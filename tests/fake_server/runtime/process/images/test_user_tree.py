"""devbox:1 for an unprivileged user: the tree built for its ids, and when serve boots it.

The build itself (``mmdebstrap``, unshared with subordinate ids, else as root of a namespace
of the user's id alone) takes minutes and Debian's archive; here a builder script stands in,
and the re-own runs on a tree of a few entries as root.
``tests/security/test_unprivileged_image.py`` and ``test_unprivileged_alone.py`` boot such
trees as a user, and the latter runs the build of one id with no package.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

from fake_server.runtime.api import RuntimeUnavailable
from fake_server.runtime.process.containment import idmap
from fake_server.runtime.process.images import debian, system
from fake_server.runtime.process.net import netmode

if TYPE_CHECKING:
    from pathlib import Path

_IDS = idmap.Subordinate(5000, 5001, 200000, 300000, idmap.SIZE)
_ALONE = idmap.OwnId(5000, 5001, "uidmap is missing")
_BUILDER = '#!/bin/sh\nmkdir -p "$1/usr/bin" && touch "$1/usr/bin/python3"\n'


@pytest.mark.skipif(os.geteuid() != 0, reason="giving files to other ids needs root")
def test_the_reown_gives_the_trees_root_files_to_the_user_and_keeps_the_rest(
    tmp_path: Path,
) -> None:
    """Id 1 (the tree's root, where it runs) becomes 0 (the user); set-user-ID bits stay; a
    symbolic link is changed itself, never what it points to; a hard link's inode once."""
    top = tmp_path / "tree"
    (top / "bin").mkdir(parents=True)
    (top / "home/dev").mkdir(parents=True)
    (top / "bin/su").write_text("su")
    os.link(top / "bin/su", top / "bin/su2")
    (top / "home/dev/own").write_text("dev's")
    (top / "lib").symlink_to("home/dev", target_is_directory=True)
    for path in (top, top / "bin", top / "bin/su", top / "home", top / "lib"):
        os.lchown(path, 1, 1)
    for path in (top / "home/dev", top / "home/dev/own"):
        os.lchown(path, 1001, 1001)
    (top / "bin/su").chmod(0o4755)  # after its chown, which clears the bit
    subprocess.run([sys.executable, "-c", debian._REOWN, str(top)], check=True)

    def owner(path: Path) -> tuple[int, int]:
        found = os.lstat(path)
        return found.st_uid, found.st_gid

    assert {str(p.relative_to(top)): owner(p) for p in [top, *sorted(top.rglob("*"))]} == {
        ".": (0, 0), "bin": (0, 0), "bin/su": (0, 0), "bin/su2": (0, 0), "home": (0, 0),
        "home/dev": (1001, 1001), "home/dev/own": (1001, 1001), "lib": (0, 0),
    }  # fmt: skip
    assert stat.S_IMODE(os.stat(top / "bin/su").st_mode) == 0o4755


def _builder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> tuple[list[str], list[str]]:
    """A builder script for every build (its modes recorded), the re-own recorded rather
    than run."""
    script = tmp_path / "mmdebstrap"
    script.write_text(_BUILDER)
    script.chmod(0o755)
    modes: list[str] = []
    reowned: list[str] = []

    def builder(ids: idmap.Subordinate | idmap.OwnId | None, filter_fd: int) -> list[str]:
        modes.append("root" if ids is None else type(ids).__name__)
        assert (filter_fd >= 0) == isinstance(ids, idmap.OwnId)
        return [str(script)]

    monkeypatch.setattr(debian, "_builder", builder)
    monkeypatch.setattr(debian, "_reown", lambda top, ids: reowned.append(top.name))
    monkeypatch.setattr(debian, "mirror", lambda: "http://mirror.invalid/debian")
    return modes, reowned


def test_a_users_tree_is_built_unshared_reowned_and_marked_with_its_ids(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    modes, reowned = _builder(monkeypatch, tmp_path)
    cache = tmp_path / "cache"
    built = debian.build(cache, None, _IDS)
    assert built == debian.user_tree(cache) == cache / "devbox-debian13-trixie-user"
    assert modes == ["Subordinate"]
    assert len(reowned) == 1
    assert debian.built_for(cache, _IDS) == built
    assert debian.built_for(cache, _ALONE) is None
    assert debian.built(cache) is None  # root's tree is another
    other = idmap.Subordinate(5000, 5001, 400000, 300000, idmap.SIZE)
    assert debian.built_for(cache, other) is None  # made for other ids: not taken
    assert (built / ".createos-devbox").read_text() == (
        "trixie uid 5000 gid 5001 subuid 200000 subgid 300000\n"
    )
    assert debian.build(cache, None, _IDS) == built  # cached
    assert modes == ["Subordinate"]


def test_a_tree_of_the_users_id_alone_is_the_users_with_apt_as_root_in_a_private_cache(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    modes, reowned = _builder(monkeypatch, tmp_path)
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o755)
    built = debian.build(cache, None, _ALONE)
    assert built == debian.user_tree(cache)
    assert (modes, reowned) == (["OwnId"], [])
    assert (built / ".createos-devbox").read_text() == "trixie uid 5000 gid 5001 alone\n"
    assert debian.built_for(cache, _ALONE) == built
    assert debian.built_for(cache, _IDS) is None
    assert (built / "etc/apt/apt.conf.d/00createos-own-id").read_text() == (
        '// root is the only id here: apt cannot drop to _apt\nAPT::Sandbox::User "root";\n'
    )
    # its set-user-ID programs are the user's on the host: nobody else may reach them
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700


def test_mmdebstrap_builds_for_a_user_and_debootstrap_cannot(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    found = {"mmdebstrap": "/usr/bin/mmdebstrap", "debootstrap": "/usr/sbin/debootstrap"}
    monkeypatch.setattr(debian.shutil, "which", lambda name, path=None: found.get(name))
    monkeypatch.setattr(debian, "bwrap_path", lambda: "/opt/bwrap")
    command = debian._builder(_IDS, -1)
    assert command is not None
    assert command[:2] == ["/usr/bin/mmdebstrap", "--mode=unshare"]
    alone = debian._builder(_ALONE, 7)
    assert alone is not None
    split = alone.index("--")
    assert alone[:split] == [
        "/opt/bwrap", "--unshare-user", "--uid", "0", "--gid", "0", "--cap-add", "ALL",
        "--unshare-pid", "--die-with-parent", "--bind", "/", "/", "--dev", "/dev", "--proc",
        "/proc", "--seccomp", "7",
    ]  # fmt: skip
    assert alone[split + 1 : split + 3] == ["/usr/bin/mmdebstrap", "--mode=root"]
    assert '--aptopt=APT::Sandbox::User "root"' in alone
    assert alone[-4:] == command[-4:]  # the same packages and suite
    del found["mmdebstrap"]
    assert debian._builder(_IDS, -1) is None
    assert debian._builder(_ALONE, 7) is None
    assert debian._builder(None, -1) is not None  # debootstrap, as root


_ALONE_MAP = idmap.Extents(((0, 5000, 1),), ((0, 5001, 1),), own=True)


@pytest.mark.parametrize(
    ("ids", "user_net", "tree", "missing"),
    [
        (_ALONE, True, True, None),
        (idmap.Subordinate(5000, 5001, 200000, 300000, 65535), True, True, None),
        (_ALONE, True, False, "not root, and none is built for your ids (createos-fake image)"),
        (_IDS, False, True, "not root, and sandboxes have no route out (pasta)"),
        (_IDS, True, False, "not root, and none is built for your ids (createos-fake image)"),
        (_IDS, True, True, None),
    ],
)  # fmt: skip
def test_unprivileged_sandboxes_boot_the_users_tree_or_say_what_is_missing(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    ids: idmap.Subordinate | idmap.OwnId,
    user_net: bool,
    tree: bool,
    missing: str | None,
) -> None:
    monkeypatch.setattr(idmap, "unprivileged", lambda: ids)
    monkeypatch.setattr(
        netmode, "detect", lambda: netmode.NetworkMode("not root", user_net=user_net)
    )
    asked: list[idmap.Subordinate | idmap.OwnId] = []

    def built_for(cache: Path, ids: idmap.Subordinate | idmap.OwnId) -> Path | None:
        asked.append(ids)
        return tmp_path if tree else None

    monkeypatch.setattr(debian, "built_for", built_for)
    monkeypatch.setattr(system, "ensure_bun", lambda progress: tmp_path / "bun")
    monkeypatch.setattr(system, "cache_dir", lambda: tmp_path / "cache")
    chosen = system._unprivileged(None)
    if missing is not None:
        assert chosen == system.System(missing=missing)
        assert not chosen.image
        assert chosen.describe(["devbox:1"]) == (
            "images: rootfs devbox:1 boot the host's programs on a read-only /usr as user "
            f"sandbox (no devbox:1 image: {missing})"
        )
        return
    assert chosen.rootless
    assert chosen.ids is not None
    if isinstance(ids, idmap.Subordinate) and ids.count == idmap.SIZE:
        assert asked == [ids]
        assert chosen == system.System(
            bun=tmp_path / "bun", root=tmp_path, ids=idmap.Extents.root_as_caller(ids)
        )
        assert chosen.ids.uid == ((0, 5000, 1), (1, 200001, 65535))
        assert chosen.ids.gid == ((0, 5001, 1), (1, 300001, 65535))
    else:  # one subordinate id short of a sandbox's: the user's id alone
        assert [type(i) for i in asked] == [idmap.OwnId]
        assert chosen == system.System(bun=tmp_path / "bun", root=tmp_path, ids=_ALONE_MAP)
    assert chosen.describe(["devbox:1"]) == (
        "images: rootfs devbox:1 boot devbox:1: Debian 13 (trixie) on a copy-on-write root per "
        "sandbox (user root, you on the host; apt-get, pip, npm -g; bun)"
    )


def test_the_image_command_without_subordinate_ids_builds_the_users_id_alone(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 5000)
    why = "/etc/subuid gives dev no range of 65535 ids"
    monkeypatch.setattr(idmap, "unprivileged", lambda: idmap.OwnId(5000, 5001, why))
    monkeypatch.setattr(system, "ensure_bun", lambda progress: None)
    monkeypatch.setattr(system, "cache_dir", lambda: tmp_path)
    built: list[idmap.Subordinate | idmap.OwnId | None] = []

    def build(cache: Path, progress: object, ids: idmap.OwnId) -> Path:
        built.append(ids)
        return tmp_path / "tree"

    monkeypatch.setattr(debian, "build", build)
    assert system.build() == system.System(root=tmp_path / "tree", ids=_ALONE_MAP)
    assert built == [idmap.OwnId(5000, 5001, why)]


def test_the_image_command_alone_without_libseccomp_says_so(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(debian.shutil, "which", lambda name, path=None: f"/usr/bin/{name}")
    monkeypatch.setattr(debian.seccomp, "available", lambda: "libseccomp cannot be loaded (X)")
    with pytest.raises(RuntimeUnavailable) as info:
        debian.build(tmp_path, None, _ALONE)
    assert str(info.value) == (
        "the Debian 13 (trixie) image for devbox:1 cannot be built: libseccomp cannot be "
        "loaded (X). Sandboxes boot the host's own programs until it is (createos-fake image "
        f"builds it into {tmp_path})"
    )


def test_a_tree_made_for_other_ids_is_replaced_and_left_aside_when_it_cannot_be_removed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The user's ranges changed: the old tree's files belong to ids it no longer maps, so
    they cannot be removed; the build still puts the new tree in place and says where the
    old one is, never an ``OSError`` out of ``createos-fake image``."""
    modes, _reowned = _builder(monkeypatch, tmp_path)
    cache = tmp_path / "cache"
    other = idmap.Subordinate(5000, 5001, 400000, 300000, idmap.SIZE)
    debian.build(cache, None, other)

    def refused(ids: idmap.Extents, path: str) -> None:
        raise OSError("rm failed: rm: cannot remove 'x': Permission denied")

    monkeypatch.setattr(debian.subids, "remove", refused)
    said: list[str] = []
    built = debian.build(cache, said.append, _IDS)
    assert debian.built_for(cache, _IDS) == built
    assert modes == ["Subordinate", "Subordinate"]
    stale = [p for p in cache.iterdir() if p.name.startswith(".debian-stale-")]
    assert len(stale) == 1
    assert (stale[0] / ".createos-devbox").read_text() == debian.made_for(other)
    assert said[-1] == (
        f"createos-fake: the old tree, made for other ids, is left at {stale[0]} (remove it "
        "as root)"
    )


def test_a_tree_of_subordinate_ids_the_user_no_longer_has_is_left_aside_saying_where(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The user's subordinate ids are gone: the old tree's files belong to ids it cannot
    touch, so its id alone cannot remove them; the new tree still goes in place."""
    _builder(monkeypatch, tmp_path)
    cache = tmp_path / "cache"
    debian.build(cache, None, _IDS)

    def refused(path: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(debian.shutil, "rmtree", refused)
    said: list[str] = []
    built = debian.build(cache, said.append, _ALONE)
    assert debian.built_for(cache, _ALONE) == built
    [stale] = [p for p in cache.iterdir() if p.name.startswith(".debian-stale-")]
    assert (stale / ".createos-devbox").read_text() == debian.made_for(_IDS)
    assert said[-1] == (
        f"createos-fake: the old tree, made for other ids, is left at {stale} (remove it as root)"
    )
