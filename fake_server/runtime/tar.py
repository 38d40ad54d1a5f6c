"""GNU ``tar`` over the virtual filesystem, built on Python's ``tarfile``.

bashkit's builtin stores symlinks as regular files; directory file sync needs them kept as
links, modes kept, ``--exclude`` with GNU's unanchored glob semantics and ``-h`` to follow links.
Archives are built and read in memory (``io.BytesIO``) and the VFS is accessed through ``vfs``.
"""

from __future__ import annotations

import errno
import gzip
import io
import posixpath
import tarfile
import time
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING

from fake_server.runtime import vfs
from fake_server.runtime.tararg import TarOptions, TarUsageError, parse_tar_args

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    import bashkit

__all__ = ["is_excluded", "tar_command"]

_TRY = "Try 'tar --help' or 'tar --usage' for more information.\n"
_FATAL = "tar: Error is not recoverable: exiting now\n"
_FAILED = "tar: Exiting with failure status due to previous errors\n"
_REASONS = {
    errno.ENOENT: "No such file or directory",
    errno.ENOTDIR: "Not a directory",
    errno.EISDIR: "Is a directory",
    errno.ELOOP: "Too many levels of symbolic links",
    errno.EEXIST: "File exists",
}


def is_excluded(name: str, patterns: list[str]) -> bool:
    """GNU ``--exclude``: an unanchored glob (``*`` crosses ``/``) on the member name."""
    if not patterns:
        return False
    clean = name.rstrip("/")
    while clean.startswith("./"):
        clean = clean[2:]
    parts = [p for p in clean.split("/") if p]
    candidates = {name.rstrip("/")} | {"/".join(parts[i:]) for i in range(len(parts))}
    candidates.discard("")
    for pattern in patterns:
        wanted = pattern.rstrip("/") or pattern
        if any(fnmatchcase(c, wanted) for c in candidates):
            return True
    return False


@dataclass
class _Run:
    ctx: bashkit.CommandContext
    opts: TarOptions
    fs: bashkit.FileSystem
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    listing: list[str] = field(default_factory=list)

    def fail(self, name: str, what: str, exc: OSError | None = None, reason: str = "") -> None:
        why = reason or _REASONS.get((exc.errno if exc else 0) or 0, "Input/output error")
        self.errors.append(f"tar: {name}: {what}: {why}\n")


def tar_command(fs: bashkit.FileSystem) -> Callable[[bashkit.CommandContext], Awaitable[int]]:
    """``tar -c|-x|-t [-f FILE] [-C DIR] [-h] [-z] [-v] [--exclude=PATTERN]... [FILE]...``.

    ``fs`` is the sandbox disk itself: the interpreter's ``ctx.fs`` follows symlinks in
    ``stat``, so it cannot tell a link from its target.
    """

    async def tar(ctx: bashkit.CommandContext) -> int:
        try:
            opts = parse_tar_args(list(ctx.argv))
        except TarUsageError as exc:
            await ctx.stderr.write(f"tar: {exc}\n{_TRY}".encode())
            return 2
        run = _Run(ctx, opts, fs)
        try:
            status = await (_create(run) if opts.mode == "create" else _read(run))
        except (OSError, RuntimeError, ValueError, RecursionError, tarfile.TarError):
            run.errors.append("tar: Unexpected error\n" + _FATAL)
            status = 2
        if run.warnings or run.errors:
            await ctx.stderr.write("".join(run.warnings + run.errors).encode())
        return status

    return tar


# -- create -----------------------------------------------------------------------------------


async def _create(run: _Run) -> int:
    opts, ctx = run.opts, run.ctx
    if not opts.operands:
        await ctx.stderr.write(
            b"tar: Cowardly refusing to create an empty archive\n" + _TRY.encode()
        )
        return 2
    to_stdout = opts.archive == "-"
    archive_real = None if to_stdout else _try_resolve(run, opts.archive)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as archive:
        stripped = False
        for directory, operand in opts.operands:
            name = operand
            if name.startswith("/"):
                if not stripped:
                    run.warnings.append("tar: Removing leading `/' from member names\n")
                    stripped = True
                name = name.lstrip("/") or "."
            base = vfs.abspath(directory, ctx.cwd) if directory else ctx.cwd
            source = vfs.abspath(operand, base)
            _add(run, archive, _member_name(name), source, archive_real, top=True)
    data = buffer.getvalue()
    if opts.gzip:
        data = gzip.compress(data, mtime=0)  # reproducible: no timestamp in the header
    if opts.verbose and run.listing:
        stream = ctx.stderr if to_stdout else ctx.stdout
        await stream.write("".join(run.listing).encode())
    if to_stdout:
        await ctx.stdout.write(data)
    else:
        try:
            target = vfs.resolve(run.fs, opts.archive, cwd=ctx.cwd, missing="last")
            entry = vfs.lstat(run.fs, target)
            if entry is not None and entry.kind == "directory":
                raise IsADirectoryError(errno.EISDIR, "")
            run.fs.write_file(target, data)
        except (OSError, RuntimeError) as exc:
            error = exc if isinstance(exc, OSError) else vfs.os_error(exc)
            run.fail(opts.archive, "Cannot open", error)
            run.errors.append(_FATAL)
            return 2
    if run.errors:
        run.errors.append(_FAILED)
        return 2
    return 0


def _member_name(name: str) -> str:
    parts = name.split("/")
    kept = [p for i, p in enumerate(parts) if p or i == 0]
    return "/".join(kept) or "."


def _try_resolve(run: _Run, path: str) -> str | None:
    try:
        return vfs.resolve(run.fs, path, cwd=run.ctx.cwd, missing="last")
    except OSError:
        return None


def _add(
    run: _Run,
    archive: tarfile.TarFile,
    name: str,
    source: str,
    archive_real: str | None,
    *,
    top: bool = False,
    ancestors: frozenset[str] = frozenset(),
) -> None:
    if not (top and name == ".") and is_excluded(name, run.opts.excludes):
        return
    try:
        follow = run.opts.dereference
        real = (
            vfs.resolve(run.fs, source, missing="none") if follow else vfs.physical(run.fs, source)
        )
        entry = vfs.lstat(run.fs, real)
        if entry is None:
            raise FileNotFoundError(errno.ENOENT, "")
    except OSError as exc:
        run.fail(name, "Cannot stat", exc)
        return
    if archive_real is not None and real == archive_real and entry.kind == "file":
        run.errors.append(f"tar: {name}: file is the archive; not dumped\n")
        return
    info = tarfile.TarInfo(name)
    info.mode = entry.mode
    info.mtime = int(entry.mtime)
    info.uid = info.gid = 1000
    info.uname = info.gname = "sandbox"
    payload: bytes | None = None
    if entry.kind == "directory":
        info.type = tarfile.DIRTYPE
    elif entry.kind == "symlink":
        info.type = tarfile.SYMTYPE
        info.linkname = str(run.fs.read_link(real))
    else:
        info.type = tarfile.REGTYPE
        try:
            payload = bytes(run.fs.read_file(real))
        except RuntimeError as exc:
            run.fail(name, "Cannot open", vfs.os_error(exc))
            return
        info.size = len(payload)
    if entry.kind == "directory" and real in ancestors:
        run.warnings.append(f"tar: {name}: File system loop detected\n")
        return
    archive.addfile(info, io.BytesIO(payload) if payload is not None else None)
    run.listing.append(name + ("/" if entry.kind == "directory" and name != "." else "") + "\n")
    if entry.kind != "directory":
        return
    try:
        children = sorted(str(item["name"]) for item in run.fs.read_dir(real))
    except RuntimeError as exc:
        run.fail(name, "Cannot open", vfs.os_error(exc))
        return
    prefix = "" if name in ("", "/") else name.rstrip("/") + "/"
    for child in children:
        inner = ancestors | {real}
        _add(
            run, archive, prefix + child, posixpath.join(real, child), archive_real, ancestors=inner
        )


# -- extract and list -------------------------------------------------------------------------


async def _read(run: _Run) -> int:
    opts, ctx = run.opts, run.ctx
    if opts.archive == "-":
        data = b"".join([bytes(chunk) async for chunk in ctx.stdin])
    else:
        try:
            real = vfs.resolve(run.fs, opts.archive, cwd=ctx.cwd, missing="none")
            data = bytes(run.fs.read_file(real))
        except (OSError, RuntimeError) as exc:
            error = exc if isinstance(exc, OSError) else vfs.os_error(exc)
            run.fail(opts.archive, "Cannot open", error)
            run.errors.append(_FATAL)
            return 2
    try:
        archive = tarfile.open(fileobj=io.BytesIO(data), mode="r:*")  # noqa: SIM115 - in memory
        members = archive.getmembers()
    except (tarfile.TarError, EOFError, OSError, ValueError):
        run.errors.append("tar: This does not look like a tar archive\n" + _FATAL)
        return 2
    wanted = [posixpath.normpath(op).lstrip("/") for _, op in opts.operands]
    found: set[str] = set()
    selected: list[tuple[tarfile.TarInfo, str]] = []
    warned = False
    for member in members:
        name = member.name
        if name.startswith("/"):
            if not warned and opts.mode == "extract":
                run.warnings.append("tar: Removing leading `/' from member names\n")
                warned = True
            name = name.lstrip("/")
        if is_excluded(name, opts.excludes):
            continue
        if wanted:
            clean = posixpath.normpath(name) if name else "."
            hit = next((w for w in wanted if clean == w or clean.startswith(w + "/")), None)
            if hit is None:
                continue
            found.add(hit)
        selected.append((member, name))
    for want in wanted:
        if want not in found:
            run.errors.append(f"tar: {want}: Not found in archive\n")
    if opts.mode == "list":
        lines = [_list_line(m, n, verbose=opts.verbose) for m, n in selected]
        await ctx.stdout.write("".join(lines).encode())
    else:
        destination = opts.directory or "."
        try:
            root = vfs.resolve(run.fs, destination, cwd=ctx.cwd, missing="none")
            if (entry := vfs.lstat(run.fs, root)) is None or entry.kind != "directory":
                raise NotADirectoryError(errno.ENOTDIR, "")
        except OSError as exc:
            run.fail(destination, "Cannot open", exc)
            run.errors.append(_FATAL)
            return 2
        _extract_all(run, archive, selected, root)
        if opts.verbose:
            await ctx.stdout.write("".join(n + "\n" for _, n in selected).encode())
    if run.errors:
        run.errors.append(_FAILED)
        return 2
    return 0


def _list_line(member: tarfile.TarInfo, name: str, *, verbose: bool) -> str:
    shown = name + ("/" if member.isdir() and not name.endswith("/") else "")
    if not verbose:
        return shown + "\n"
    kind = "d" if member.isdir() else "l" if member.issym() else "h" if member.islnk() else "-"
    perms = "".join(ch if member.mode & (1 << (8 - i)) else "-" for i, ch in enumerate("rwxrwxrwx"))
    stamp = time.strftime("%Y-%m-%d %H:%M", time.gmtime(member.mtime))
    owner = f"{member.uname or member.uid}/{member.gname or member.gid}"
    line = f"{kind}{perms} {owner} {member.size:>8} {stamp} {shown}"
    if member.issym():
        line += f" -> {member.linkname}"
    elif member.islnk():
        line += f" link to {member.linkname}"
    return line + "\n"


def _extract_all(
    run: _Run, archive: tarfile.TarFile, selected: list[tuple[tarfile.TarInfo, str]], root: str
) -> None:
    directory_modes: list[tuple[str, int]] = []
    for member, name in selected:
        parts = [p for p in name.split("/") if p and p != "."]
        if ".." in parts:
            run.errors.append(f"tar: {member.name}: Member name contains '..'\n")
            continue
        parts = parts[run.opts.strip :] if run.opts.strip else parts
        if run.opts.strip and not parts:
            continue
        try:
            _extract_one(run, archive, member, parts, root, directory_modes)
        except OSError as exc:
            run.fail(name, "Cannot open", exc)
        except RuntimeError as exc:
            run.fail(name, "Cannot open", vfs.os_error(exc))
    # Directory modes last and deepest first, so a read-only directory can still be filled.
    for path, mode in sorted(directory_modes, key=lambda item: -item[0].count("/")):
        try:
            run.fs.chmod(path, mode)
        except RuntimeError:
            continue


def _extract_one(
    run: _Run,
    archive: tarfile.TarFile,
    member: tarfile.TarInfo,
    parts: list[str],
    root: str,
    directory_modes: list[tuple[str, int]],
) -> None:
    fs = run.fs
    if not parts:  # "./": the destination itself
        if member.isdir():
            directory_modes.append((root, member.mode & 0o7777))
        return
    parent = vfs.mkdirs(fs, posixpath.join(root, *parts[:-1])) if len(parts) > 1 else root
    target = posixpath.join(parent, parts[-1])
    existing = vfs.lstat(fs, target)
    if member.isdir():
        if existing is not None and existing.kind == "directory":
            pass
        elif existing is not None and existing.kind == "symlink":
            resolved = vfs.resolve(fs, target, missing="all")
            found = vfs.lstat(fs, resolved)
            if found is None or found.kind != "directory":
                fs.remove(target)
                fs.mkdir(target)
            else:
                target = resolved
        else:
            if existing is not None:
                fs.remove(target)
            fs.mkdir(target)
        directory_modes.append((target, member.mode & 0o7777))
        return
    if existing is not None and run.opts.keep:
        run.errors.append(f"tar: {member.name}: Cannot open: File exists\n")
        return
    if existing is not None and existing.kind == "directory":
        raise IsADirectoryError(errno.EISDIR, "")
    if member.issym():
        if existing is not None:
            fs.remove(target)
        fs.symlink(member.linkname, target)
        return
    if member.islnk():
        link_parts = [p for p in member.linkname.split("/") if p and p != "."]
        link_parts = link_parts[run.opts.strip :] if run.opts.strip else link_parts
        source = vfs.resolve(fs, posixpath.join(root, *link_parts), missing="none")
        payload = bytes(fs.read_file(source))
        mode = vfs.lstat(fs, source)
        if existing is not None:
            fs.remove(target)
        fs.write_file(target, payload)
        fs.chmod(target, mode.mode if mode else 0o644)
        return
    if not member.isfile():
        run.errors.append(f"tar: {member.name}: Cannot mknod: Operation not permitted\n")
        return
    extracted = archive.extractfile(member)
    payload = extracted.read() if extracted is not None else b""
    if existing is not None:
        fs.remove(target)
    fs.write_file(target, payload)
    fs.chmod(target, member.mode & 0o7777)
