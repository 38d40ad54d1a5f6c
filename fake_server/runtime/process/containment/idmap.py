"""The host ids of a sandbox's users: 65,536 ids of a range of the fake's own, never the host's.

Run as root, the fake gives every sandbox a user namespace whose ids 0-65535 are host ids
``base``-``base``+65535 (``IdRange``): root in a sandbox is an unprivileged id on the host, so
``/proc/sys``, ``/proc/sysrq-trigger``, cgroup files and every root-owned host file stay out
of its reach, while ``apt`` (which drops to ``_apt``), ``useradd`` and ``chown`` work inside as
on a VM. The range starts at ``DEFAULT_BASE``, moved past any range ``/etc/subuid`` or
``/etc/subgid`` hands out and any id ``/etc/passwd`` names, so it is the same at every start
on one host (a state directory's files keep their owners).

The image's files (the host's, owned by host root) are shown through idmapped mounts
(``mountns.idmapped``) with this map, so they belong to root inside; files the fake itself
creates in a sandbox are given to ``base`` (``owner``).

On the host-directory layout as root (``--image-fallback``) the sandbox's ids are the same
range, user ``sandbox`` (``LAYOUT_ID``) its id ``base + 1000``, who owns the layout
(``give``). Run as another user, the fake cannot map ids it does not own: sandboxes are on
the host-directory layout (user ``sandbox``, ``LAYOUT_ID`` inside, is the caller), and
``unprivileged()`` decides the rest of the map once. Where the caller has subordinate ranges
of at least 65,535 ids in ``/etc/subuid`` and ``/etc/subgid`` and ``newuidmap``/``newgidmap``
(Debian's ``uidmap``) map them in a trial run, the sandbox's other ids, root included, are
those subordinate ids (``Subordinate``): nobody on the host. Elsewhere the fake maps the
caller's own id alone (``OwnId`` says why) and every other id inside is unmapped. Either way
the fake writes the map while the init's bwrap waits (``confine.map_when_ready``): bwrap
mapping one id itself would nest a second user namespace the sandbox's processes could not
be entered into.
"""

from __future__ import annotations

import contextlib
import functools
import os
import pwd
import shutil
import stat
import subprocess
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fake_server.runtime.process.containment import programs

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

__all__ = [
    "DEFAULT_BASE",
    "LAYOUT_ID",
    "SIZE",
    "Extents",
    "IdRange",
    "Nested",
    "OwnId",
    "Subordinate",
    "give",
    "host_range",
    "layout_map",
    "map_own_id",
    "map_user_namespace",
    "unmapped",
    "unprivileged",
    "userns",
]

#: Ids a sandbox has (0-65535, as on a VM: nobody is 65534).
SIZE = 65536
#: Where the range starts unless a host range is in the way (a multiple of ``SIZE``).
DEFAULT_BASE = 15_000 * SIZE
_FILES = ("/etc/subuid", "/etc/subgid")
#: The id the caller is inside a sandbox on the host-directory layout (user ``sandbox``).
LAYOUT_ID = 1000


@dataclass(frozen=True, slots=True)
class IdRange:
    """Host ids ``base`` to ``base + size - 1``: a sandbox's 0 to ``size - 1``."""

    base: int
    size: int = SIZE

    @property
    def owner(self) -> tuple[int, int]:
        """The host uid and gid of the sandbox's root."""
        return self.base, self.base

    @property
    def layout_owner(self) -> tuple[int, int]:
        """The host uid and gid of user ``sandbox`` (``LAYOUT_ID``) on the layout."""
        return self.base + LAYOUT_ID, self.base + LAYOUT_ID

    def describe_layout(self) -> str:
        last = self.base + self.size - 1
        return (
            f"user sandbox (uid {LAYOUT_ID}) is host id {self.base + LAYOUT_ID}, the sandbox's "
            f"ids (root included) host ids {self.base}-{last}"
        )

    def map_line(self) -> str:
        """A ``uid_map``/``gid_map`` line giving a namespace this range."""
        return f"0 {self.base} {self.size}\n"


@dataclass(frozen=True, slots=True)
class Subordinate:
    """An unprivileged caller's map: ``LAYOUT_ID`` inside is the caller's own uid and gid, the
    sandbox's other 65,535 ids are its subordinate ids from ``subuid`` and ``subgid`` on
    (written by ``newuidmap`` and ``newgidmap``)."""

    uid: int
    gid: int
    subuid: int
    subgid: int
    #: How many ids both subordinate ranges have (at least ``SIZE - 1``).
    count: int = SIZE - 1

    def extents(self) -> Extents:
        """The map as ``newuidmap``/``newgidmap`` take it."""
        inside, rest = LAYOUT_ID, SIZE - LAYOUT_ID - 1

        def triples(own: int, start: int) -> tuple[tuple[int, int, int], ...]:
            return ((0, start, inside), (inside, own, 1), (inside + 1, start + inside, rest))

        return Extents(triples(self.uid, self.subuid), triples(self.gid, self.subgid))

    def describe(self) -> str:
        last = self.subuid + SIZE - 2
        return (
            f"user sandbox (uid {LAYOUT_ID}) is your own id {self.uid} on the host, the "
            f"sandbox's other ids (root included) your subordinate ids {self.subuid}-{last} "
            "(/etc/subuid and /etc/subgid through newuidmap)"
        )


@dataclass(frozen=True, slots=True)
class Extents:
    """A map written by ``newuidmap``/``newgidmap``: (first id inside, first id outside,
    count) triples for uids and for gids (``userroot``: root inside is the caller). ``own``:
    the caller's own ids alone (``own_id``), which the caller writes itself."""

    uid: tuple[tuple[int, int, int], ...]
    gid: tuple[tuple[int, int, int], ...]
    own: bool = False

    @staticmethod
    def own_id(ids: OwnId) -> Extents:
        """Root inside is the caller, and no other id is mapped (``setgroups`` denied)."""
        return Extents(((0, ids.uid, 1),), ((0, ids.gid, 1),), own=True)

    @staticmethod
    def root_as_caller(ids: Subordinate, *, offset: int = 1, count: int = SIZE - 1) -> Extents:
        """Root inside is the caller; ``count`` ids from 1 inside are the subordinate ids
        from ``subuid + offset`` (``subgid + offset``) on. The defaults: id ``n`` inside is
        ``subuid + n``, as ``mmdebstrap --mode=unshare`` leaves a tree's owners."""
        return Extents(
            ((0, ids.uid, 1), (1, ids.subuid + offset, count)),
            ((0, ids.gid, 1), (1, ids.subgid + offset, count)),
        )

    def args(self, kind: str) -> list[str]:
        """``newuidmap``'s (``kind`` ``uid``) or ``newgidmap``'s triples after the pid."""
        return [str(n) for triple in (self.uid if kind == "uid" else self.gid) for n in triple]


@dataclass(frozen=True, slots=True)
class OwnId:
    """An unprivileged caller's map without subordinate ids: its own uid and gid are
    ``LAYOUT_ID`` inside and nothing else is mapped (``why`` says why no subordinate ids);
    ``setgroups`` is denied, as the kernel requires for such a map."""

    uid: int
    gid: int
    why: str

    def describe(self) -> str:
        return (
            f"user sandbox (uid {LAYOUT_ID}) is your own id {self.uid} on the host and the "
            f"only id mapped (no subordinate ids: {self.why})"
        )


@dataclass(frozen=True, slots=True)
class Nested:
    """The map of a sandbox's user namespace made inside one of the fake's (``usernet``: H,
    held by process ``holder``): ``lines`` map the sandbox's ids onto H's, written from
    inside H by its root (the host cannot write a grandchild's map)."""

    holder: int
    #: One line per extent of H's map (a line of a child's map must fall in one of them).
    lines: tuple[str, ...]
    #: H denies ``setgroups`` (the own-id map): ``nsenter`` keeps the caller's credentials.
    keep: bool


def _lines(name: str) -> list[list[str]]:
    """The colon-separated fields of each line of ``name`` (none when it cannot be read)."""
    try:
        with open(name, encoding="utf-8", errors="replace") as handle:
            return [line.rstrip("\n").split(":") for line in handle]
    except OSError:
        return []


def _taken() -> list[tuple[int, int]]:
    """Host id ranges in use: subordinate ranges and the ids of ``/etc/passwd``/``group``."""
    taken = []
    for name in _FILES:
        for fields in _lines(name):
            if len(fields) == 3 and fields[1].isdigit() and fields[2].isdigit():
                taken.append((int(fields[1]), int(fields[1]) + int(fields[2])))
    for name in ("/etc/passwd", "/etc/group"):
        for fields in _lines(name):
            if len(fields) > 2 and fields[2].isdigit():
                taken.append((int(fields[2]), int(fields[2]) + 1))
    return taken


@functools.cache
def host_range() -> IdRange:
    """The range this host's fakes give their sandboxes (see the module's docstring)."""
    taken = _taken()
    base = DEFAULT_BASE
    while any(start < base + SIZE and base < end for start, end in taken):
        base += SIZE
    return IdRange(base)


def map_user_namespace(pid: int, ids: IdRange | Subordinate | OwnId | Nested | Extents) -> None:
    """Give the user namespace of ``pid`` (made, not yet mapped) the map ``ids``; ``OSError``
    with the helper's last line when ``newuidmap`` or ``newgidmap`` refuses."""
    if isinstance(ids, Nested):
        quoted = " ".join(f"'{line}'" for line in ids.lines)
        script = (
            f"printf '%s\\n' {quoted} >/proc/{pid}/uid_map && "
            f"printf '%s\\n' {quoted} >/proc/{pid}/gid_map"
        )
        keep = ["--preserve-credentials"] if ids.keep else []
        enter = ["nsenter", f"--user=/proc/{ids.holder}/ns/user", *keep, "--"]
        programs.run([*enter, "sh", "-c", script], what="the sandbox's map")
        return
    if isinstance(ids, OwnId):
        map_own_id(pid, ids.uid, ids.gid)
        return
    if isinstance(ids, Extents) and ids.own:
        map_own_id(pid, ids.uid[0][1], ids.gid[0][1], inside=0)
        return
    if isinstance(ids, Subordinate):
        ids = ids.extents()
    if isinstance(ids, Extents):
        for program, kind in (("newuidmap", "uid"), ("newgidmap", "gid")):
            done = subprocess.run(
                [program, str(pid), *ids.args(kind)],
                capture_output=True,
                check=False,
                env={"PATH": programs.PATH},
            )
            if done.returncode != 0:
                lines = done.stderr.decode(errors="replace").strip().splitlines()
                detail = lines[-1][:200] if lines else f"exit status {done.returncode}"
                raise OSError(f"{program} failed: {detail}")
        return
    for name in ("uid_map", "gid_map"):
        with open(f"/proc/{pid}/{name}", "w", encoding="ascii") as handle:
            handle.write(ids.map_line())


def map_own_id(pid: int, uid: int, gid: int, inside: int = LAYOUT_ID) -> None:
    """Map the caller's own ``uid`` and ``gid`` to ``inside`` in ``pid``'s user namespace and
    nothing else (``setgroups`` denied, as the kernel requires for such a map)."""
    for name, text in (
        ("uid_map", f"{inside} {uid} 1\n"),
        ("setgroups", "deny"),
        ("gid_map", f"{inside} {gid} 1\n"),
    ):
        with open(f"/proc/{pid}/{name}", "w", encoding="ascii") as handle:
            handle.write(text)


@contextlib.contextmanager
def unmapped() -> Iterator[int]:
    """The pid of a process in a new user namespace not mapped yet (it waits, then goes)."""
    child = subprocess.Popen(
        ["unshare", "--user", "--", "sh", "-c", "echo; read -r _"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={"PATH": "/usr/bin:/bin"},
    )
    stdin, stdout = child.stdin, child.stdout
    assert stdin is not None
    assert stdout is not None
    try:
        if stdout.readline() != b"\n":
            raise OSError("unshare --user did not start")
        yield child.pid
    finally:
        with contextlib.suppress(OSError):
            stdin.close()
        stdout.close()
        child.wait()


def userns(ids: IdRange) -> int:
    """A descriptor of a new user namespace with the range ``ids`` (nothing runs in it): the
    map idmapped mounts take. Root only."""
    with unmapped() as pid:
        map_user_namespace(pid, ids)
        return os.open(f"/proc/{pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)


def _subordinate(name: str, keys: tuple[str, ...]) -> tuple[int, int] | None:
    """The first id and the size of the first range of at least ``SIZE - 1`` ids ``name``
    gives ``keys`` (a user's name or uid, as ``newuidmap`` matches them)."""
    for fields in _lines(name):
        usable = len(fields) == 3 and fields[1].isdigit() and fields[2].isdigit()
        if usable and fields[0] in keys and int(fields[2]) >= SIZE - 1:
            return int(fields[1]), int(fields[2])
    return None


def _helper_missing() -> str | None:
    """Why ``newuidmap``/``newgidmap`` cannot map another id here, ``None`` when they can."""
    for program in ("newuidmap", "newgidmap"):
        path = shutil.which(program, path=programs.PATH)
        if path is None:
            return f"{program} is missing (Debian's uidmap package)"
        if not os.stat(path).st_mode & stat.S_ISUID and not _capabilities(path):
            return f"{program} is neither setuid nor given capabilities"
    return None


def _capabilities(path: str) -> bool:
    """Whether ``path`` has file capabilities (how some systems ship ``newuidmap``)."""
    try:
        return bool(os.getxattr(path, "security.capability"))
    except OSError:
        return False


def layout_map(*, image: bool) -> IdRange | Subordinate | OwnId | None:
    """The map of sandboxes on the layout (``None`` where they boot the image): as root
    ``host_range()`` (user ``sandbox`` is its id ``LAYOUT_ID``), else ``unprivileged()``."""
    if image:
        return None
    return host_range() if os.geteuid() == 0 else unprivileged()


def give(top: Path, owner: tuple[int, int]) -> None:
    """Give ``top`` and everything below it to ``owner`` (a layout the fake made as root)."""
    os.lchown(top, *owner)
    for path, dirs, files in os.walk(top):
        for name in (*dirs, *files):
            os.lchown(os.path.join(path, name), *owner)


@functools.cache
def unprivileged() -> Subordinate | OwnId:
    """How an unprivileged fake maps its sandboxes' ids (the module's docstring), decided once
    with a trial run of ``newuidmap``/``newgidmap``."""
    uid, gid = os.getuid(), os.getgid()
    try:
        name = pwd.getpwuid(uid).pw_name
    except KeyError:
        return OwnId(uid, gid, f"uid {uid} has no /etc/passwd entry, which newuidmap needs")
    keys = (name, str(uid))
    subuid, subgid = _subordinate(_FILES[0], keys), _subordinate(_FILES[1], keys)
    if subuid is None or subgid is None:
        lacking = _FILES[0] if subuid is None else _FILES[1]
        return OwnId(uid, gid, f"{lacking} gives {name} no range of {SIZE - 1} ids")
    missing = _helper_missing()
    if missing is not None:
        return OwnId(uid, gid, missing)
    found = Subordinate(uid, gid, subuid[0], subgid[0], min(subuid[1], subgid[1]))
    try:
        with unmapped() as pid:
            map_user_namespace(pid, found)
    except OSError as exc:
        return OwnId(uid, gid, str(exc))
    return found
