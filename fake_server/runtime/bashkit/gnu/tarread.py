"""GNU ``tar`` listing and extraction over the virtual filesystem.

Part of the ``tar`` that replaces bashkit's builtin, which restores symlinks as regular files.

Members with ``..`` are refused and a leading ``/`` is stripped, as GNU tar does; links are
restored as links and directory modes are applied last.
"""

from __future__ import annotations

import errno
import io
import posixpath
import tarfile
import time
from typing import TYPE_CHECKING

from fake_server.runtime.bashkit import vfs
from fake_server.runtime.bashkit.gnu.tararg import FAILED, FATAL, is_excluded

if TYPE_CHECKING:
    from fake_server.runtime.bashkit.gnu.tararg import TarRun

__all__ = ["read_archive"]


async def read_archive(run: TarRun) -> int:
    """``tar -t`` and ``tar -x``."""
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
            run.errors.append(FATAL)
            return 2
    try:
        archive = tarfile.open(fileobj=io.BytesIO(data), mode="r:*")  # noqa: SIM115 - in memory
        members = archive.getmembers()
    except (tarfile.TarError, EOFError, OSError, ValueError):
        run.errors.append("tar: This does not look like a tar archive\n" + FATAL)
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
            run.errors.append(FATAL)
            return 2
        _extract_all(run, archive, selected, root)
        if opts.verbose:
            await ctx.stdout.write("".join(n + "\n" for _, n in selected).encode())
    if run.errors:
        run.errors.append(FAILED)
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
    run: TarRun, archive: tarfile.TarFile, selected: list[tuple[tarfile.TarInfo, str]], root: str
) -> None:
    directory_modes: list[tuple[str, int]] = []
    dirs: dict[str, str] = {"": root}  # member directory -> its physical path, saves lookups
    for member, name in selected:
        parts = [p for p in name.split("/") if p and p != "."]
        if ".." in parts:
            run.errors.append(f"tar: {member.name}: Member name contains '..'\n")
            continue
        parts = parts[run.opts.strip :] if run.opts.strip else parts
        if run.opts.strip and not parts:
            continue
        try:
            _extract_one(run, archive, member, parts, dirs, directory_modes)
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
    run: TarRun,
    archive: tarfile.TarFile,
    member: tarfile.TarInfo,
    parts: list[str],
    dirs: dict[str, str],
    directory_modes: list[tuple[str, int]],
) -> None:
    fs = run.fs
    root = dirs[""]
    if not parts:  # "./": the destination itself
        if member.isdir():
            directory_modes.append((root, member.mode & 0o7777))
        return
    key, parent_key = "/".join(parts), "/".join(parts[:-1])
    parent = dirs.get(parent_key)
    if parent is None:
        parent = dirs[parent_key] = vfs.mkdirs(fs, posixpath.join(root, parent_key))
    if key in dirs:  # replaced below: forget it and everything cached under it
        for cached in [k for k in dirs if k == key or k.startswith(key + "/")]:
            del dirs[cached]
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
        dirs[key] = target
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
