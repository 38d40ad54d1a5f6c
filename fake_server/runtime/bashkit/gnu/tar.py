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
from typing import TYPE_CHECKING

from fake_server.runtime.bashkit import vfs
from fake_server.runtime.bashkit.gnu.tararg import (
    FAILED,
    FATAL,
    TRY,
    TarRun,
    TarUsageError,
    is_excluded,
    parse_tar_args,
)
from fake_server.runtime.bashkit.gnu.tarread import read_archive

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    import bashkit

__all__ = ["tar_command"]


def tar_command(fs: bashkit.FileSystem) -> Callable[[bashkit.CommandContext], Awaitable[int]]:
    """``tar -c|-x|-t [-f FILE] [-C DIR] [-h] [-z] [-v] [--exclude=PATTERN]... [FILE]...``.

    ``fs`` is the sandbox disk itself: the interpreter's ``ctx.fs`` follows symlinks in
    ``stat``, so it cannot tell a link from its target.
    """

    async def tar(ctx: bashkit.CommandContext) -> int:
        try:
            opts = parse_tar_args(list(ctx.argv))
        except TarUsageError as exc:
            await ctx.stderr.write(f"tar: {exc}\n{TRY}".encode())
            return 2
        run = TarRun(ctx, opts, fs)
        try:
            status = await (_create(run) if opts.mode == "create" else read_archive(run))
        except Exception:  # a damaged archive or a bug must not take the fake down
            run.errors.append("tar: Unexpected error\n" + FATAL)
            status = 2
        if run.warnings or run.errors:
            await ctx.stderr.write("".join(run.warnings + run.errors).encode())
        return status

    return tar


# -- create -----------------------------------------------------------------------------------


async def _create(run: TarRun) -> int:
    opts, ctx = run.opts, run.ctx
    if not opts.operands:
        await ctx.stderr.write(
            b"tar: Cowardly refusing to create an empty archive\n" + TRY.encode()
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
            if not _is_directory(run, base):
                run.fail(directory, "Cannot open", FileNotFoundError(errno.ENOENT, ""))
                run.errors.append(FATAL)
                return 2
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
            run.errors.append(FATAL)
            return 2
    if run.errors:
        run.errors.append(FAILED)
        return 2
    return 0


def _is_directory(run: TarRun, path: str) -> bool:
    try:
        entry = vfs.lstat(run.fs, vfs.resolve(run.fs, path, missing="none"))
    except OSError:
        return False
    return entry is not None and entry.kind == "directory"


def _member_name(name: str) -> str:
    parts = name.split("/")
    kept = [p for i, p in enumerate(parts) if p or i == 0]
    return "/".join(kept) or "."


def _try_resolve(run: TarRun, path: str) -> str | None:
    try:
        return vfs.resolve(run.fs, path, cwd=run.ctx.cwd, missing="last")
    except OSError:
        return None


def _add(
    run: TarRun,
    archive: tarfile.TarFile,
    name: str,
    source: str,
    archive_real: str | None,
    *,
    top: bool = False,
    ancestors: frozenset[str] = frozenset(),
    known: vfs.Entry | None = None,
) -> None:
    """Archive ``source`` as ``name``, recursing into directories.

    ``known`` is the entry's metadata when ``source`` is already physical (a directory child),
    which saves resolving and stat-ing it again.
    """
    if not (top and name == ".") and is_excluded(name, run.opts.excludes):
        return
    follow = run.opts.dereference
    if known is not None and not (follow and known.kind == "symlink"):
        real, entry = source, known
    else:
        try:
            if follow:
                real = vfs.resolve(run.fs, source, missing="none")
            else:
                real = vfs.physical(run.fs, source)
            found = vfs.lstat(run.fs, real)
            if found is None:
                raise FileNotFoundError(errno.ENOENT, "")
            entry = found
        except OSError as exc:
            run.fail(name, "Cannot stat", exc)
            return
    if archive_real is not None and real == archive_real and entry.kind == "file":
        run.warnings.append(f"tar: {name}: file is the archive; not dumped\n")
        return
    if entry.kind == "directory" and real in ancestors:
        run.warnings.append(f"tar: {name}: File system loop detected\n")
        return
    info = tarfile.TarInfo(name)
    info.mode = entry.mode
    info.mtime = int(entry.mtime)
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    payload: bytes | None = None
    try:
        if entry.kind == "directory":
            info.type = tarfile.DIRTYPE
        elif entry.kind == "symlink":
            info.type = tarfile.SYMTYPE
            info.linkname = str(run.fs.read_link(real))
        else:
            info.type = tarfile.REGTYPE
            payload = bytes(run.fs.read_file(real))
            info.size = len(payload)
    except RuntimeError as exc:
        run.fail(name, "Cannot open", vfs.os_error(exc))
        return
    archive.addfile(info, io.BytesIO(payload) if payload is not None else None)
    run.listing.append(name + ("/" if entry.kind == "directory" and name != "." else "") + "\n")
    if entry.kind != "directory":
        return
    try:
        children = vfs.list_dir(run.fs, real)
    except OSError as exc:
        run.fail(name, "Cannot open", exc)
        return
    prefix = "" if name in ("", "/") else name.rstrip("/") + "/"
    inner = ancestors | {real}
    for child, meta in children:
        path = posixpath.join(real, child)
        _add(run, archive, prefix + child, path, archive_real, ancestors=inner, known=meta)
