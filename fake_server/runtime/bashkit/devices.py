"""The endless devices in full, and a clear failure where bashkit would read them short.

bashkit's devices give at most 1 MiB (``/dev/zero``) or 8 KiB (``/dev/urandom``,
``/dev/random``) per read, with status 0. The fake's own ``cat``, ``head`` (and bashkit's
``dd``) stream them without end; ``open_stream`` is what ``cat`` and ``head`` read a file
operand through. What nothing of the fake can stream -- a redirect (``tr -dc a-z
</dev/urandom``, which bashkit reads itself) and another command reading a device operand
(``od /dev/urandom``, ``wc -c /dev/zero``) -- ``capped_read`` finds in the script before it
runs, so the process fails with status 1 and a message instead of running on a short read.
"""

from __future__ import annotations

import errno
import os
import posixpath
from typing import TYPE_CHECKING

import bashkit

from fake_server.runtime.bashkit import vfs

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Iterator

__all__ = [
    "CAPS",
    "DEVICES",
    "SIGPIPE_STATUS",
    "capped_read",
    "open_stream",
    "write_failure",
    "written",
]

_CHUNK = 64 * 1024


def _zeros() -> Iterator[bytes]:
    block = bytes(_CHUNK)
    while True:
        yield block


def _random() -> Iterator[bytes]:
    while True:
        yield os.urandom(_CHUNK)


#: Endless devices the fake streams itself.
DEVICES = {"/dev/zero": _zeros, "/dev/urandom": _random, "/dev/random": _random}
#: What bashkit gives of each per read.
CAPS = {"/dev/zero": "1 MiB", "/dev/urandom": "8 KiB", "/dev/random": "8 KiB"}
#: Commands reading their file operands that the fake leaves to bashkit. ``cat`` and ``head``
#: stream devices; ``ls``, ``stat``, ``test``, ``echo``… never read the operand's content.
_READERS = frozenset({
    "od", "base64", "base32", "basenc", "xxd", "hexdump", "tail", "tac", "wc", "md5sum",
    "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum", "b2sum", "cksum", "sum",
    "sort", "uniq", "cut", "grep", "egrep", "fgrep", "strings", "paste", "cmp", "diff", "comm",
    "join", "gzip", "zcat", "bzip2", "xz", "nl", "fold", "fmt", "rev", "expand", "unexpand",
    "awk", "gawk", "sed", "split", "shuf", "column", "iconv",
})  # fmt: skip
_SHELLS = frozenset({"bash", "sh"})
_MAX_DEPTH = 4


def open_stream(ctx: bashkit.CommandContext, name: str) -> AsyncIterator[bytes]:
    """The content of file operand ``name`` (``-`` is stdin) in chunks; a device never ends.

    Raises ``OSError`` (``ENOENT``, ``EISDIR``…) for what cannot be read.
    """
    if name in ("-", "/dev/stdin", "/dev/fd/0"):
        return _stdin(ctx)
    path = vfs.abspath(name, ctx.cwd)
    if path in DEVICES:
        return _endless(DEVICES[path]())
    if path == "/dev/null":
        return _once(b"")
    try:
        real = vfs.resolve(ctx.fs, path, missing="none")
        entry = vfs.lstat(ctx.fs, real)
        if entry is not None and entry.kind == "directory":
            raise IsADirectoryError(errno.EISDIR, "Is a directory")
        data = ctx.fs.read_file(real)
    except OSError:
        raise
    except (RuntimeError, ValueError) as exc:
        raise vfs.os_error(exc, path) from None
    return _once(data)


#: Status of a writer whose reader went away (128 + SIGPIPE).
SIGPIPE_STATUS = 141


def write_failure(exc: RuntimeError) -> str:
    """Why bashkit refused a write to a command's output (a full disk, a file too large)."""
    code = vfs.os_error(exc).errno or errno.EIO
    return os.strerror(code)


async def written(ctx: bashkit.CommandContext, prefix: str, output: Awaitable[int]) -> int:
    """``output``'s status, or how a GNU tool ends when its writes fail: 141 once the reader
    has gone, 1 and ``prefix: reason`` when bashkit refused a write (the disk or file is full)."""
    try:
        return await output
    except BrokenPipeError:
        return SIGPIPE_STATUS
    except RuntimeError as exc:
        await ctx.stderr.write(f"{prefix}: {write_failure(exc)}\n".encode())
        return 1


async def _stdin(ctx: bashkit.CommandContext) -> AsyncIterator[bytes]:
    while (chunk := await ctx.stdin.read_chunk()) is not None:
        if chunk:
            yield chunk


async def _endless(blocks: Iterator[bytes]) -> AsyncIterator[bytes]:
    for block in blocks:
        yield block


async def _once(data: bytes) -> AsyncIterator[bytes]:
    yield data


def capped_read(bash: bashkit.Bash, script: str, depth: int = 0) -> str | None:
    """bash's message when ``script`` reads a device where bashkit would cut it, else None.

    Looks into ``bash -c`` scripts; a path computed at run time (``$dev``) is not seen.
    """
    if depth > _MAX_DEPTH:
        return None
    try:
        analysis = bash.analyze(script)
    except bashkit.BashError:
        return None  # bashkit reports the syntax error itself
    for redirect in analysis.redirects:
        device = _device(redirect.path)
        if device is not None and not redirect.is_write:
            return (
                f"bash: {device}: a redirect reads at most {CAPS[device]} of it in the fake's "
                f"bashkit runtime; use cat {device} | ..., or the process runtime\n"
            )
    for command in analysis.commands:
        name = posixpath.basename(command.name or "")
        if name in _SHELLS and "-c" in command.args[:-1]:
            nested = command.args[command.args.index("-c") + 1]
            found = capped_read(bash, nested, depth + 1) if nested is not None else None
            if found is not None:
                return found
        if name not in _READERS:
            continue
        for arg in command.args:
            device = _device(arg)
            if device is not None:
                return (
                    f"{name}: {device}: the fake's bashkit runtime reads at most "
                    f"{CAPS[device]} of it here; use cat {device} | {name} ..., or the "
                    "process runtime\n"
                )
    return None


def _device(path: str | None) -> str | None:
    if path is None or not path.startswith("/"):
        return None
    normal = posixpath.normpath(path)
    return normal if normal in DEVICES else None
