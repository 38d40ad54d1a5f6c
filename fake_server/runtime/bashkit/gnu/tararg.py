"""GNU ``tar``: command-line parsing (the subset scripts use), exclusion, shared run state.

Part of the ``tar`` that replaces bashkit's builtin, which stores symlinks as regular files
and knows neither GNU's unanchored ``--exclude`` globs nor ``-h``.
"""

from __future__ import annotations

import errno
import posixpath
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import bashkit

__all__ = [
    "FAILED",
    "FATAL",
    "TRY",
    "TarOptions",
    "TarRun",
    "TarUsageError",
    "is_excluded",
    "parse_tar_args",
]

_ONE_OF = "You must specify {} the '-Acdtrux', '--delete' or '--test-label' options"
_MORE_THAN_ONE = (
    "You may not specify more than one '-Acdtrux', '--delete' or  '--test-label' option"
)
_ARG_LETTERS = frozenset("fCT")  # short options that take an argument
_FLAG_LETTERS = {
    "c": "create",
    "x": "extract",
    "t": "list",
    "v": "verbose",
    "h": "dereference",
    "z": "gzip",
    "p": None,  # preserve permissions: always on here
    "o": None,  # no-same-owner: ownership is never restored
    "m": None,  # touch: modification times are not tracked on extract
    "P": None,  # absolute names: member names are still confined
    "k": "keep",
}
_LONG_FLAGS = {
    "--create": "create",
    "--extract": "extract",
    "--get": "extract",
    "--list": "list",
    "--verbose": "verbose",
    "--dereference": "dereference",
    "--gzip": "gzip",
    "--gunzip": "gzip",
    "--ungzip": "gzip",
    "--keep-old-files": "keep",
}
_LONG_IGNORED = frozenset(
    {
        "--preserve-permissions",
        "--same-permissions",
        "--no-same-permissions",
        "--no-same-owner",
        "--same-owner",
        "--numeric-owner",
        "--overwrite",
        "--unlink-first",
        "--no-overwrite-dir",
        "--touch",
        "--wildcards",
        "--no-wildcards",
        "--anchored",
        "--no-anchored",
        "--wildcards-match-slash",
        "--recursion",
        "--absolute-names",
        "--totals",
        "--auto-compress",
        "--delay-directory-restore",
    }
)
_LONG_VALUED = frozenset(
    {
        "--file",
        "--directory",
        "--exclude",
        "--strip-components",
        "--owner",
        "--group",
        "--mode",
        "--mtime",
        "--sort",
        "--warning",
        "--format",
        "--blocking-factor",
        "--record-size",
        "--transform",
    }
)


class TarUsageError(Exception):
    """Bad command line; the message is GNU tar's first stderr line without the prefix."""


@dataclass
class TarOptions:
    mode: str = ""
    archive: str = "-"
    verbose: bool = False
    dereference: bool = False
    gzip: bool = False
    keep: bool = False
    strip: int = 0
    excludes: list[str] = field(default_factory=list)
    #: member operands with the ``-C`` directory in force when each was given
    operands: list[tuple[str, str]] = field(default_factory=list)
    directory: str = ""


def parse_tar_args(argv: list[str]) -> TarOptions:
    opts = TarOptions()
    args = list(argv)
    if args and args[0] and not args[0].startswith("-"):
        args[0] = "-" + args[0]  # old style: "tar cf x ." means "tar -c -f x ."
    queue = list(args)
    while queue:
        arg = queue.pop(0)
        if arg == "--":
            opts.operands.extend((opts.directory, a) for a in queue)
            break
        if arg.startswith("--"):
            _long(opts, arg, queue)
        elif arg.startswith("-") and arg != "-":
            _short(opts, arg[1:], queue)
        else:
            opts.operands.append((opts.directory, arg))
    if not opts.mode:
        raise TarUsageError(
            "You must specify one of the '-Acdtrux', '--delete' or '--test-label' options"
        )
    return opts


def _set_mode(opts: TarOptions, mode: str) -> None:
    if opts.mode and opts.mode != mode:
        raise TarUsageError(
            "You may not specify more than one '-Acdtrux', '--delete' or  '--test-label' option"
        )
    opts.mode = mode


def _apply(opts: TarOptions, flag: str) -> None:
    if flag in ("create", "extract", "list"):
        _set_mode(opts, flag)
    else:
        setattr(opts, flag, True)


def _value(opts: TarOptions, option: str, value: str) -> None:
    if option in ("f", "--file"):
        opts.archive = value
    elif option in ("C", "--directory"):
        # Each -C is a chdir, so a relative one is relative to the previous -C.
        opts.directory = posixpath.join(opts.directory, value) if opts.directory else value
    elif option == "--exclude":
        opts.excludes.append(value)
    elif option == "--strip-components":
        if not value.isdigit():
            raise TarUsageError(f"Invalid number of elements: '{value}'")
        opts.strip = int(value)
    elif option == "T":
        raise TarUsageError("option '-T' is not supported by this sandbox")


def _short(opts: TarOptions, letters: str, queue: list[str]) -> None:
    for index, letter in enumerate(letters):
        if letter in _ARG_LETTERS:
            rest = letters[index + 1 :]
            if rest:
                _value(opts, letter, rest)
            elif queue:
                _value(opts, letter, queue.pop(0))
            else:
                raise TarUsageError(f"option requires an argument -- '{letter}'")
            return
        if letter not in _FLAG_LETTERS:
            raise TarUsageError(f"invalid option -- '{letter}'")
        flag = _FLAG_LETTERS[letter]
        if flag is not None:
            _apply(opts, flag)


def _long(opts: TarOptions, arg: str, queue: list[str]) -> None:
    name, eq, value = arg.partition("=")
    if name in _LONG_FLAGS and not eq:
        _apply(opts, _LONG_FLAGS[name])
    elif name in _LONG_IGNORED and not eq:
        return
    elif name in _LONG_VALUED:
        if not eq:
            if not queue:
                raise TarUsageError(f"option '{name}' requires an argument")
            value = queue.pop(0)
        _value(opts, name, value)
    else:
        raise TarUsageError(f"unrecognized option '{arg}'")


TRY = "Try 'tar --help' or 'tar --usage' for more information.\n"
FATAL = "tar: Error is not recoverable: exiting now\n"
FAILED = "tar: Exiting with failure status due to previous errors\n"
REASONS = {
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
class TarRun:
    """One tar invocation: its context, options, the disk, and messages for stderr."""

    ctx: bashkit.CommandContext
    opts: TarOptions
    fs: bashkit.FileSystem
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    listing: list[str] = field(default_factory=list)

    def fail(self, name: str, what: str, exc: OSError | None = None, reason: str = "") -> None:
        why = reason or REASONS.get((exc.errno if exc else 0) or 0, "Input/output error")
        self.errors.append(f"tar: {name}: {what}: {why}\n")
