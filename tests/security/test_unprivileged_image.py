"""devbox:1 as an unprivileged user runs ``serve``: the image, root inside, apt, no root.

A user with 65,536 subordinate ids, pasta and a tree built for those ids (``createos-fake
image`` as that user; here a copy of root's with the owners that build leaves,
``_usertree``) gets sandboxes that boot devbox:1 as they do as root: commands run as root
inside, which is the user on the host, on a copy-on-write root of their own (``userroot``)
where apt drops to ``_apt``, a subordinate id, and installs. Each test checks it from inside
and on the host: the map, the owners of what the sandbox writes, the file API, a fork, a
destroy that leaves nothing, and the start-up lines that say so.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from typing import TYPE_CHECKING

import pytest

from fake_server.runtime.process.containment import idmap
from fake_server.runtime.process.net.nft import nft_path
from fake_server.runtime.process.net.usernet import pasta_path
from fake_server.runtime.process.sandbox.machine import DISKS_NEED_ROOT_UNPRIVILEGED
from fake_server.runtime.process.storage.rootdir import TRASH
from tests._helpers import S3_DISK, settled
from tests.security._unprivileged import (
    IMAGE_LINE_END,
    Unprivileged,
    free_id,
    restarted,
    serve_as,
    subordinate_user,
)
from tests.security._usertree import tree_for

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = [
    pytest.mark.reliability,
    pytest.mark.skipif(os.geteuid() != 0, reason="running serve as another user needs root"),
    pytest.mark.skipif(
        shutil.which("newuidmap") is None or pasta_path() is None or nft_path() is None,
        reason="an unprivileged image needs uidmap, passt and nftables (apt-get install uidmap "
        "passt nftables)",
    ),
]

#: Subordinate ids the module's user gets (past every range the host hands out).
_SUB_START = 1_600_000_000


@pytest.fixture(name="imaged", scope="module")
def _imaged() -> Iterator[Unprivileged]:
    """``serve`` as a user with subordinate ids and a tree of its own."""
    uid = free_id(63_000)
    ids = idmap.Subordinate(uid, uid, _SUB_START, _SUB_START, idmap.SIZE)

    with subordinate_user(uid, uid, _SUB_START):
        yield from serve_as(uid, prepare=tree_for(ids))


def test_the_start_up_lines_say_the_image_boots_and_who_root_is(imaged: Unprivileged) -> None:
    assert imaged.line("containment: ") == (
        f"containment: root inside is your own id {imaged.uid} on the host, the sandbox's "
        f"other ids your subordinate ids {_SUB_START + 1}-{_SUB_START + idmap.SIZE - 1}; "
        "/proc masked, a seccomp filter; no disk size per sandbox (not root: no loop device)"
    )
    assert imaged.line("images: ").endswith(IMAGE_LINE_END)


def test_root_inside_is_the_caller_and_the_rest_subordinate_ids(imaged: Unprivileged) -> None:
    target = imaged.target
    sandbox = target.create()
    code, out = target.sh(
        sandbox, "id -u; cat /etc/debian_version; cat /proc/self/uid_map; stat -c %U /etc/passwd"
    )
    assert code == 0, out
    lines = out.splitlines()
    assert lines[0] == "0"
    assert lines[1].startswith("13.")
    # the ids of H (whose own map is the caller's and its subordinate ids'), one for one
    assert [line.split() for line in lines[2:4]] == [["0", "0", "1"], ["1", "1", "65535"]]
    assert lines[4] == "root"


def test_apt_installs_a_small_package_as_on_a_vm(imaged: Unprivileged) -> None:
    """apt drops to ``_apt`` (a subordinate id on the host) to download, then dpkg installs;
    the one test here that reaches past the machine (the Debian archive, through pasta)."""
    target = imaged.target
    sandbox = target.create()
    code, out = target.sh(
        sandbox,
        "export DEBIAN_FRONTEND=noninteractive; apt-get update -qq >/dev/null && "
        "apt-get install -y -qq --no-install-recommends hello >/dev/null 2>&1 && hello && "
        "stat -c '%U %u' /var/cache/apt/archives/partial",
        timeout=600,
    )
    assert (code, out) == (0, "Hello, world!\n_apt 42\n"), out
    upper = imaged.sandbox_dir(sandbox) / "upper"
    hello = upper / "usr/bin/hello"
    assert (hello.stat().st_uid, hello.stat().st_gid) == (imaged.uid, imaged.uid)
    partial = upper / "var/cache/apt/archives/partial"
    assert partial.stat().st_uid == _SUB_START + 42
    # _apt's own 0700 directory: the fake (root inside) may not read in it, and says so
    unreadable = target.api.get(
        f"/v1/sandboxes/{sandbox}/files", params={"path": "/var/cache/apt/archives/partial/x"}
    )
    assert unreadable.status_code == 400, unreadable.text
    assert unreadable.json()["data"] == {"path": "cannot be read"}


def test_the_file_api_and_a_fork_keep_files_and_owners(imaged: Unprivileged) -> None:
    target = imaged.target
    sandbox = target.create()
    put = target.api.put(
        f"/v1/sandboxes/{sandbox}/files", params={"path": "/root/up.txt"}, content=b"uploaded\n"
    )
    assert put.status_code in (200, 201, 204), put.text
    code, out = target.sh(
        sandbox, "cat /root/up.txt; useradd -m dev && su dev -c 'echo mine > ~/f' && echo ok"
    )
    assert (code, out) == (0, "uploaded\nok\n"), out
    got = target.api.get(f"/v1/sandboxes/{sandbox}/files", params={"path": "/root/up.txt"})
    assert got.content == b"uploaded\n"
    paused = target.api.post(f"/v1/sandboxes/{sandbox}/pause")
    assert paused.status_code in (200, 202), paused.text
    fork = target.api.post(f"/v1/sandboxes/{sandbox}/fork", json={})
    assert fork.status_code in (200, 201, 202), fork.text
    copy = fork.json()["data"]["id"]
    target.sandboxes.append(copy)
    code, out = target.sh(copy, "cat /root/up.txt; stat -c '%U %u' /home/dev/f; cat /home/dev/f")
    assert (code, out) == (0, "uploaded\ndev 1000\nmine\n"), out
    mine = imaged.sandbox_dir(sandbox) / "upper/home/dev/f"
    assert mine.stat().st_uid == _SUB_START + 1000


def test_a_disk_is_refused_naming_why(imaged: Unprivileged) -> None:
    target = imaged.target
    disk = target.api.post(
        "/v1/disks",
        json=S3_DISK,
    )
    assert disk.status_code in (200, 201), disk.text
    sandbox = target.create()
    mount = {"disk_id": disk.json()["data"]["id"], "mount_path": "/mnt/data"}
    attached = target.api.post(f"/v1/sandboxes/{sandbox}/disks", json=mount)
    refusal = {"code": "runtime_unsupported", "message": DISKS_NEED_ROOT_UNPRIVILEGED}
    assert (attached.status_code, attached.json()["data"]) == (409, refusal)
    code, out = target.sh(sandbox, "ls -A /mnt")
    assert (code, out) == (0, "")


def test_a_destroy_leaves_nothing_of_the_sandboxs_ids(imaged: Unprivileged) -> None:
    target = imaged.target
    sandbox = target.create()
    code, out = target.sh(sandbox, "useradd -m dev && su dev -c 'mkdir -m 700 ~/secret' && echo ok")
    assert (code, out) == (0, "ok\n"), out
    directory = imaged.sandbox_dir(sandbox)
    assert (directory / "upper/home/dev/secret").stat().st_uid == _SUB_START + 1000
    gone = target.api.delete(f"/v1/sandboxes/{sandbox}")
    assert gone.status_code in (200, 202, 204), gone.text
    assert not directory.exists()  # renamed at once, removed in the background
    assert settled(lambda: not list(directory.parent.glob(f"{TRASH}*")), bound=30)


def test_a_state_dir_restart_after_a_kill_keeps_a_sandboxs_files_and_owners(
    imaged: Unprivileged,
) -> None:
    """``serve --state-dir`` killed (SIGKILL) and started again: the sandbox comes back
    paused, resumes, and has its files, those of its other ids included."""
    before = "echo kept > /root/kept && useradd -m dev && su dev -c 'echo mine > ~/f'"
    after = "cat /root/kept /home/dev/f; stat -c %U /home/dev/f"
    assert restarted(imaged, before, after) == (0, "kept\nmine\ndev\n")


def test_a_killed_fakes_sandboxes_are_swept_by_the_next_whatever_ids_own_them(
    imaged: Unprivileged,
) -> None:
    """``serve`` killed (SIGKILL) with a sandbox holding a directory of one of its other ids:
    the next ``serve`` of the same user with the same ``$TMPDIR`` removes it all at its first
    sandbox (as root of a namespace with the sandbox's ids)."""
    temp = imaged.home / "tmp-sweep"
    temp.mkdir(mode=0o711)
    os.chown(temp, imaged.uid, imaged.uid)
    serve = contextlib.contextmanager(serve_as)
    with serve(imaged.uid, home=imaged.home, temp=temp) as first:
        sandbox = first.target.create()
        code, out = first.target.sh(sandbox, "useradd -m dev && su dev -c 'mkdir -m 700 ~/s'")
        assert code == 0, out
        left = first.sandbox_dir(sandbox)
        assert (left / "upper/home/dev/s").stat().st_uid == _SUB_START + 1000
    assert left.exists()  # killed: nothing removed it
    with serve(imaged.uid, home=imaged.home, temp=temp) as again:
        again.target.create()
        assert not left.exists()
        assert [p.name for p in (temp / "createos-fake-process").iterdir()] == [
            again.sandbox_dir(again.target.sandboxes[-1]).parent.name
        ]
