"""The system calls a sandbox may not make: a seccomp filter like the container runtimes'.

Root in a sandbox is an unprivileged id on the host (``idmap``), and the filter narrows what
it can ask of the host's kernel further, as Docker's and podman's default profiles do for a
container without ``CAP_SYS_ADMIN``: no mounts (so nothing bwrap masked or bound can be
uncovered), no new namespaces (``unshare``, ``clone`` with a namespace flag; ``clone3`` answers
``ENOSYS`` so the C library falls back to ``clone``), no kernel keyrings, BPF, performance
counters, ``userfaultfd``, ``io_uring``, kernel modules, ``kexec``, reboot, swap, accounting,
clock setting, the kernel log or raw port I/O. Each answers ``EPERM`` (the process carries on,
as in a container) and everything else is allowed.

The program is compiled once with libseccomp (the ``pyseccomp`` binding; the library is on
every Debian and Ubuntu system, apt needs it) and handed to bwrap (``--seccomp FD``): the
sandbox's init gets it, and so does every exec and managed process, through a bwrap that
installs it before ``nsenter`` enters the sandbox (``setns`` stays allowed for that; a sandbox
process can enter only namespaces its own user namespace owns). Where the fake is not root
that bwrap would need a user namespace of its own, from which ``nsenter`` could not enter the
sandbox's: there the spawn installs the filter itself before it runs ``nsenter``
(``installer``), with ``no_new_privs`` as bwrap sets it.

Where the fake's user has no subordinate ids, the sandbox's root is the user's own id and the
only one mapped: ``chown`` to any other owner would fail (``EINVAL``), and dpkg gives every
file it unpacks its package's owners. There the filter makes the ``chown`` calls succeed
without changing anything (``ignore_chown``, what rootless podman's ``ignore_chown_errors``
does): every file stays root's. The build of that user's tree (``debian``) runs under the
``chown`` rules alone (``confine=False``), since mmdebstrap mounts and unshares.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import tempfile
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["CHOWN", "DENIED", "available", "installer", "program", "program_fd"]

#: System calls that answer EPERM inside a sandbox.
DENIED = (
    # mounts: what the sandbox sees of its file systems is the fake's to decide
    "mount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen", "fsmount",
    "fsconfig", "fspick", "mount_setattr",
    # new namespaces (a nested user namespace is where most kernel exploits start)
    "unshare",
    # the kernel's own facilities
    "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd",
    "io_uring_setup", "io_uring_enter", "io_uring_register", "kexec_load", "kexec_file_load",
    "init_module", "finit_module", "delete_module", "reboot", "swapon", "swapoff", "acct",
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "syslog", "iopl", "ioperm",
    "quotactl", "open_by_handle_at", "name_to_handle_at", "lookup_dcookie", "vhangup",
    "nfsservctl", "uselib", "ustat", "sysfs", "_sysctl", "get_kernel_syms", "create_module",
    "query_module",
)  # fmt: skip
#: ``clone`` flags that make namespaces (CLONE_NEWNS … CLONE_NEWNET, CLONE_NEWCGROUP).
_NAMESPACE_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000
_NAMESPACE_FLAGS |= 0x40000000
#: System calls that change a file's owner: answered with success, doing nothing, where the
#: sandbox's root is the only id (``ignore_chown``).
CHOWN = ("chown", "fchown", "lchown", "fchownat")


@functools.cache
def program(*, ignore_chown: bool = False, confine: bool = True) -> bytes | str:
    """The compiled filter (BPF), or why it cannot be made here: ``ignore_chown`` adds the
    ``CHOWN`` rules, ``confine=False`` leaves out everything else (the module's docstring)."""
    try:
        import pyseccomp as seccomp
    except (ImportError, OSError) as exc:  # the binding, or libseccomp itself, is missing
        return f"libseccomp cannot be loaded ({type(exc).__name__})"
    rules = seccomp.SyscallFilter(seccomp.ALLOW)
    if ignore_chown:
        for name in CHOWN:
            rules.add_rule(seccomp.ERRNO(0), name)  # errno 0: the call returns 0
    if confine:
        _confine(rules, seccomp)
    with tempfile.TemporaryFile() as handle:
        rules.export_bpf(handle)
        handle.seek(0)
        return handle.read()


def _confine(rules: Any, seccomp: Any) -> None:
    """Add the sandbox's ``DENIED`` calls and namespace-making ``clone`` flags."""
    deny = seccomp.ERRNO(errno.EPERM)
    for name in DENIED:
        try:
            rules.add_rule(deny, name)
        except (ValueError, RuntimeError, OSError):  # not a system call of this architecture
            continue
    for bit in range(32):
        flag = 1 << bit
        if _NAMESPACE_FLAGS & flag:
            rules.add_rule(deny, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    rules.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")


def available() -> str | None:
    """Why sandboxes cannot get the filter here, ``None`` when they can."""
    compiled = program()
    return compiled if isinstance(compiled, str) else None


def program_fd(*, ignore_chown: bool = False, confine: bool = True) -> int:
    """A descriptor bwrap reads the filter from (``--seccomp``); the caller closes it after
    the spawn. ``RuntimeError`` where the filter cannot be made (``available()``)."""
    compiled = program(ignore_chown=ignore_chown, confine=confine)
    if isinstance(compiled, str):
        raise RuntimeError(compiled)
    read, write = os.pipe()
    try:
        os.write(write, compiled)  # a few hundred bytes: well within a pipe's buffer
    finally:
        os.close(write)
    return read


#: prctl(2)'s options, and the BPF filter program (``struct sock_fprog``) it takes.
_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2


class _Program(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))


@functools.cache
def installer(*, ignore_chown: bool = False) -> Callable[[], None]:
    """What a child runs between fork and exec to install the filter in itself (a
    ``preexec_fn``): everything it needs is made once, in the fake. ``RuntimeError`` where
    the filter cannot be made (``available()``)."""
    compiled = program(ignore_chown=ignore_chown)
    if isinstance(compiled, str):
        raise RuntimeError(compiled)
    code = ctypes.create_string_buffer(compiled, len(compiled))
    fprog = _Program(len(compiled) // 8, ctypes.addressof(code))  # 8 bytes per instruction
    libc = ctypes.CDLL(None, use_errno=True)
    prctl = libc.prctl
    prctl.argtypes = (ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong)

    def install() -> None:
        keep = code  # the program's bytes live as long as this function
        if (
            prctl(_PR_SET_NO_NEW_PRIVS, 1, None, 0, 0) != 0
            or prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.addressof(fprog), 0, 0) != 0
        ):
            raise OSError(ctypes.get_errno(), "the seccomp filter cannot be installed")
        del keep

    return install
