"""A shell that reads its commands from a live stdin pipe (``bash`` with no ``-c``, a PTY shell).

bashkit hands stdin to a builtin only once the pipe is closed, so ``bash`` fed from an open
pipe would never start. Instead one interpreter stays alive and runs each complete command as
its line arrives, like a real shell reading from a pipe or terminal; ``exit``, ``exec`` and
``set -e`` end it. Shell state (variables, functions, ``cd``) carries from line to line.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from typing import TYPE_CHECKING

import bashkit

from fake_server.runtime.bashkit import braces, devices
from fake_server.runtime.bashkit.outputcut import cut_notice, cut_status
from fake_server.runtime.bashkit.primed import add_commands

if TYPE_CHECKING:
    from fake_server.runtime.bashkit.runstate import RunState, Sink
    from fake_server.runtime.pipes import StdinSource

__all__ = [
    "ALIVE_COMMAND",
    "argv_may_read_stdin",
    "command_string",
    "may_read_stdin",
    "reads_commands_from_stdin",
    "run_interactive",
]

#: Internal command appended after each chunk: reaching it proves the shell did not exit.
ALIVE_COMMAND = "__createos_alive__"

_INCOMPLETE = ("unexpected end of file", "unexpected eof", "unterminated")
_HEREDOC = re.compile(r"<<(?P<dash>-?)\s*(?P<q>['\"]?)(?P<word>[A-Za-z_][A-Za-z0-9_]*)(?P=q)")
_SHELLS = frozenset({"bash", "sh"})
# Options that keep bash reading commands from stdin.
_STDIN_OPTIONS = frozenset({"-i", "-l", "-s", "--login", "--norc", "--noprofile", "-"})


Resolve = Callable[[str], str]

# Wrappers looked through and how deep (``bash -c "bash -c '…'"``).
_MAX_DEPTH = 8
_EXEC_OPTIONS = frozenset({"-c", "-l", "-cl", "-lc"})
_ENV_OPTIONS = frozenset({"-i", "-", "--ignore-environment"})


def _same(name: str) -> str:
    return name


# Commands that never read standard input, whatever their arguments.
_NO_STDIN = frozenset(
    {
        ":", "[", "basename", "break", "cd", "chmod", "continue", "cp", "date", "declare",
        "dirname", "echo", "exit", "export", "false", "hostname", "id", "kill", "ln", "local",
        "ls", "mkdir", "mktemp", "mv", "printf", "pwd", "readlink", "readonly", "realpath",
        "return", "rm", "rmdir", "seq", "set", "shift", "sleep", "stat", "test", "touch", "trap",
        "true", "typeset", "umask", "uname", "unset", "wait", "whoami",
    }
)  # fmt: skip


def command_string(options: list[str]) -> str | None:
    """The script of ``bash [options] -c SCRIPT [name [args]]``, or ``None`` without ``-c``."""
    for index, option in enumerate(options):
        if not option.startswith("-") or option in ("-", "--"):
            return None
        if "c" in option[1:] and not option.startswith("--"):
            return options[index + 1] if index + 1 < len(options) else None
    return None


def may_read_stdin(bash: bashkit.Bash, script: str, program: Resolve = _same) -> bool:
    """False only when every command ``script`` can run provably ignores stdin.

    bashkit hands stdin to ``bash -c`` only once the pipe is closed; a script that never
    reads it (``sleep 300 & wait``) can start at once instead of waiting for a close that may
    never come. Wrappers are looked through: ``exec``, ``env`` (assignments and options) and
    a nested ``bash -c``/``sh -c`` script, so ``exec env A=1 '/bin/bash' '-c' 'echo hi'`` (the
    TypeScript provider's wrapper) starts at once too. ``program`` maps a command path such as
    ``/bin/bash`` to the command it runs (the disk decides), or returns it unchanged.
    """
    return _script_may_read(bash, script, program, 0)


def argv_may_read_stdin(bash: bashkit.Bash, argv: list[str], program: Resolve = _same) -> bool:
    """``may_read_stdin`` for a process started as ``argv`` (``env A=1 echo hi``…)."""
    words: list[str | None] = list(argv)
    return _command_may_read(bash, words, program, frozenset(), 0)


def _script_may_read(bash: bashkit.Bash, script: str, program: Resolve, depth: int) -> bool:
    if depth > _MAX_DEPTH:
        return True
    try:
        analysis = bash.analyze(script)
    except bashkit.BashError:
        return True
    # A nested ``bash -c`` makes bashkit call a script opaque; its script is analysed below.
    # ``eval``/``source`` are commands not known to ignore stdin, so they count anyway.
    reentry_only = analysis.has_interpreter_reentry and not analysis.truncated
    if (analysis.is_opaque and not reentry_only) or analysis.has_dynamic_commands:
        return True
    functions = frozenset(analysis.functions)
    for command in analysis.commands:
        if command.is_assignment_only:
            continue
        words = [command.name, *command.args]
        if _command_may_read(bash, words, program, functions, depth):
            return True
    return False


def _command_may_read(
    bash: bashkit.Bash,
    words: list[str | None],
    program: Resolve,
    functions: frozenset[str],
    depth: int,
) -> bool:
    """Whether the simple command ``words`` may read stdin, looking through wrappers.

    ``None`` is a computed word: unknown where it matters (a command name, an option, the
    script of ``bash -c``), harmless as an operand of a command that ignores stdin.
    """
    while words:
        if words[0] is None:
            return True
        name, args = program(words[0]), words[1:]
        if name == "exec":
            rest = _after_options(args, _EXEC_OPTIONS, with_value=("-a",))
        elif name == "env":
            rest = _after_options(args, _ENV_OPTIONS, with_value=("-u",))
            while rest and rest[0] is not None and "=" in rest[0] and rest[0][0] != "=":
                rest = rest[1:]
        elif name in _SHELLS:
            script = _shell_script(args)
            return script is None or _script_may_read(bash, script, program, depth + 1)
        else:
            return name not in _NO_STDIN and name not in functions
        if rest is None:
            return True
        words = rest
    return False  # ``exec`` alone (redirections only) or ``env`` printing the environment


def _shell_script(args: list[str | None]) -> str | None:
    """The script of ``bash … -c SCRIPT``, if it and the options before it are literal."""
    literal: list[str] = []
    for arg in args:
        if arg is None:
            break
        literal.append(arg)
    return command_string(literal)


def _after_options(
    args: list[str | None], flags: frozenset[str], *, with_value: tuple[str, ...]
) -> list[str | None] | None:
    """``args`` after the leading options of ``exec``/``env``; ``None`` when one is unknown."""
    index = 0
    while index < len(args):
        arg = args[index]
        if arg is None:
            return None
        if arg == "--":
            return args[index + 1 :]
        if arg in with_value:
            index += 2
        elif arg in flags or arg.startswith("--unset="):
            index += 1
        elif arg.startswith("-") and arg != "-":
            return None
        else:
            break
    return args[index:]


def reads_commands_from_stdin(name: str, options: list[str]) -> bool:
    """True for ``bash``/``sh`` without ``-c`` and without a script file operand."""
    return name in _SHELLS and all(option in _STDIN_OPTIONS for option in options)


async def run_interactive(
    bash: bashkit.Bash,
    state: RunState,
    source: StdinSource,
    out: Sink,
    err: Sink,
    notices: Sink | None = None,
) -> int:
    """Run commands from ``source`` line by line until ``exit`` or end of input; ``notices``
    (the plain stderr sink, ``err`` being bashkit's) says where bashkit cut a line's output."""
    alive: list[int] = []

    async def mark_alive(ctx: bashkit.CommandContext) -> int:
        alive.append(1)
        last = ctx.argv[0] if ctx.argv else "0"
        return int(last) if last.isdigit() else 0  # keeps the chunk's exit status

    add_commands(bash, {ALIVE_COMMAND: mark_alive})
    status = 0
    pending = ""  # complete lines not yet forming a complete command
    partial = ""  # text after the last newline
    eof = False
    while not eof:
        with state.waiting(), state.clock.idle():
            chunk = await source.read_chunk()
        if chunk:
            text = chunk.decode("utf-8", "replace")
            # A terminal's Enter is "\r"; a PTY's line discipline (icrnl) makes it "\n".
            partial += text.replace("\r", "\n") if state.terminal is not None else text
            *lines, partial = partial.split("\n")
        else:
            eof = True
            lines, partial = ([partial] if partial else []), ""
        for line in lines:
            pending += line + "\n"
            if not eof and _incomplete(bash, pending):
                continue
            script, pending = pending, ""
            cut = braces.overflow(script) or devices.capped_read(bash, script)
            if cut is not None:  # bashkit would run it on the wrong words: say so, as $? 1
                script = f"printf '%s' {shlex.quote(cut)} >&2; (exit 1)"
            alive.clear()
            # $? of the previous line carries over, as in a shell reading line by line.
            chunk_script = f"(exit {status})\n{script}\n{ALIVE_COMMAND} $?"
            result = await bash.execute(chunk_script, stdout=out, stderr=err)
            status = await _said(result, notices)
            if not alive:
                return status
    if pending:
        result = await bash.execute(pending, stdout=out, stderr=err)
        status = await _said(result, notices)
    return status


async def _said(result: bashkit.ExecResult, notices: Sink | None) -> int:
    """The line's status, after saying where bashkit cut its output (``outputcut``)."""
    notice = cut_notice(result)
    if notice is not None and notices is not None:
        await notices(notice)
    return cut_status(int(result.exit_code) & 0xFF, result)


def _incomplete(bash: bashkit.Bash, script: str) -> bool:
    """Whether ``script`` stops in the middle of a command (an open ``if``, quote, heredoc…)."""
    tail = script.rstrip("\n")
    if tail.endswith(("&&", "||", "|", "\\")) or _open_heredoc(script):
        return True
    try:
        bash.analyze(script)
    except bashkit.BashError as exc:
        text = str(exc).lower()
        return any(hint in text for hint in _INCOMPLETE)
    return False


def _open_heredoc(script: str) -> bool:
    lines = script.split("\n")
    for index, line in enumerate(lines):
        for match in _HEREDOC.finditer(line):
            if "((" in line[: match.start()]:  # a shift inside $(( )) or (( ))
                continue
            strip_tabs, word = match["dash"] == "-", match["word"]
            rest = lines[index + 1 :]
            if not any((r.lstrip("\t") if strip_tabs else r) == word for r in rest):
                return True
    return False
