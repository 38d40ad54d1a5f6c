"""The command lines a process-runtime sandbox's processes start with: bwrap's, which makes
the sandbox's init (``guest``), and ``nsenter``'s, which every later process enters it with.

Which user a process runs as (root of the image's user namespace, or ``sandbox`` on the
host-directory layout) and what of the host it sees are decided here, once for every caller.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fake_server.runtime.process.containment.confine import mask_argv

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path

    from fake_server.runtime.process.containment.confine import Handoff

__all__ = ["LAYOUT_MOUNT", "UID", "USER", "USER_HOME", "bwrap_argv", "enter_argv"]

#: The user processes run as on the host-directory layout: its uid, name, and ``$HOME`` (also
#: the default working directory). Where sandboxes boot the image they run as root, with
#: ``BASE_ENV``'s user and ``$HOME``.
UID, USER, USER_HOME = 1000, "sandbox", "/home/sandbox"
#: Where a layout sandbox's directory is bound in its own mount namespace, as root (its
#: init's bwrap, the id range's first id, may not pass the directories above it on the host).
LAYOUT_MOUNT = "/mnt"
#: Host files the sandbox sees read-only, when the host has them (libraries, certificates).
_HOST_ETC = ("alternatives", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "ssl",
             "ca-certificates", "localtime", "mime.types")  # fmt: skip


def bwrap_argv(
    bwrap: str,
    root: Path | str,
    cwd: str,
    env: Mapping[str, str],
    *,
    own_net: bool = False,
    image: bool = False,
    init: bool = False,
    handoff: Handoff | None = None,
) -> list[str]:
    """bwrap's options for a process of the sandbox whose root directory is ``root`` (its
    init, pid 1 of the namespace, with ``init``).

    With ``image`` the root is the sandbox's whole system (``rootfs``) and the process runs as
    root (uid 0 of its user namespace); without, the root is the host-directory layout, seen
    with the host's ``/usr`` read-only over it, and the process runs as ``sandbox``.
    Without ``own_net`` the process runs in its sandbox's network namespace (``netns``); with
    it, in one of its own (``--unshare-net``: loopback only, shared with nothing). With
    ``handoff`` bwrap waits for the fake to map the user namespace (``idmap.layout_map``)
    instead of mapping the caller's id itself, and installs the seccomp filter ``handoff``
    holds. ``/proc`` is masked as ``confine`` masks it."""
    uid = "0" if image else str(UID)
    mapped = (
        ["--userns-block-fd", str(handoff.block), "--info-fd", str(handoff.info)]
        if handoff is not None
        else []
    )
    if handoff is not None and handoff.filter >= 0:
        mapped += ["--seccomp", str(handoff.filter)]
    argv = [
        bwrap,
        "--unshare-user", *mapped, "--uid", uid, "--gid", uid,
        "--unshare-pid", "--unshare-ipc", "--unshare-uts",
        *(["--unshare-net"] if own_net else []),
        "--hostname", "sandbox",
        "--die-with-parent",
        "--bind", str(root), "/",
    ]  # fmt: skip
    if not image:
        argv += ["--ro-bind", "/usr", "/usr"]
        for name in _HOST_ETC:
            argv += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    argv += ["--proc", "/proc", *mask_argv(), "--dev", "/dev", "--clearenv"]
    for key, value in env.items():
        argv += ["--setenv", key, value]
    argv += ["--chdir", cwd, *(["--as-pid-1"] if init else []), "--"]
    return argv


def enter_argv(
    nsenter: str,
    init: int,
    cwd: str,
    *,
    uid: int = UID,
    own_id: bool = False,
    via: Sequence[str] = (),
) -> list[str]:
    """``nsenter``'s options that run a command in the namespaces of the sandbox's ``init``:
    as ``uid``, in ``cwd`` of its root; the environment is ``nsenter``'s own. ``own_id``: the
    namespace maps the caller's own id alone (``idmap.OwnId``), which is ``uid`` inside
    already, and denies ``setgroups``: the credentials stay as they are. ``via``: a first
    ``nsenter`` into the user and network namespaces the sandbox's are made in (``usernet``:
    from the host, the sandbox's user namespace, a grandchild, is entered through them)."""
    ids = ["--preserve-credentials"] if own_id else [f"--setuid={uid}", f"--setgid={uid}"]
    net = [] if via else ["--net"]
    return [
        *via, nsenter, f"--target={init}", "--user", "--mount", "--pid", "--ipc", "--uts", *net,
        "--root", f"--wdns={cwd}", *ids, "--",
    ]  # fmt: skip
