"""Shell quoting and the wrapper script every managed-process command runs in.

The behaviour is described in docs/provider-execution.md#running-a-command.

The command, its arguments, the working directory and the environment are turned into *data*
for ``/bin/bash -lc`` before any request is made, so hostile values (``a'; touch /bad``,
``$(touch /bad)``) never become shell syntax and invalid input never reaches the API. The
environment is applied with ``exec env K='v' …`` inside the script because the API only accepts
``env`` keys that were declared when the sandbox was created.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ._errors import CreateosError

__all__ = [
    "ARGS_NOT_A_LIST",
    "COMMAND_REQUIRED",
    "INVALID_ENV",
    "NOT_A_STRING",
    "NUL_IN_VALUE",
    "build_wrapper_script",
    "quote",
]

COMMAND_REQUIRED = "A sandbox command is required."
INVALID_ENV = "Invalid sandbox environment variable."
NUL_IN_VALUE = "Sandbox command values cannot contain NUL."
# Not in the spec (JavaScript callers cannot pass non-strings past its types); ours.
NOT_A_STRING = "Sandbox command values must be strings."
# Ours too: ``execute(env, lease, "echo", "hello world")`` passes one string where a list of
# arguments goes (it would be split into characters); the message names the list.
ARGS_NOT_A_LIST = "Sandbox command args must be a list of strings, one per argument."

_ENV_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def quote(value: str) -> str:
    """Single-quote ``value`` for bash; an embedded ``'`` becomes ``'"'"'``.

    NUL cannot be represented in a bash word (it would silently truncate the value), so it is
    rejected instead.
    """
    if not isinstance(value, str):
        raise CreateosError(NOT_A_STRING)
    if "\x00" in value:
        raise CreateosError(NUL_IN_VALUE)
    return "'" + value.replace("'", "'\"'\"'") + "'"


def _env_assignment(key: object, value: object) -> str:
    if not isinstance(key, str) or _ENV_KEY.fullmatch(key) is None or not isinstance(value, str):
        raise CreateosError(INVALID_ENV)
    return f"{key}={quote(value)}"


def build_wrapper_script(
    command: str,
    args: Sequence[str] = (),
    *,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    stdin_path: str | None = None,
) -> str:
    """The script passed as ``/bin/bash -lc <script>``: ``cd`` (if any), then ``exec env``.

    ``exec`` replaces the shell, so the exit status and signal of the process are the command's
    own. The stdin file (if staged) is redirected by path; its contents never appear here.
    """
    if not isinstance(command, str) or command == "":
        raise CreateosError(COMMAND_REQUIRED)
    if isinstance(args, str | bytes) or not isinstance(args, Sequence):
        raise CreateosError(ARGS_NOT_A_LIST)
    if env is not None and not isinstance(env, Mapping):
        raise CreateosError(INVALID_ENV)
    lines: list[str] = []
    if cwd:
        lines.append(f"cd -- {quote(cwd)} || exit")
    assignments = " ".join(_env_assignment(k, v) for k, v in (env or {}).items())
    words = " ".join(quote(word) for word in (command, *args))
    line = f"exec env {assignments} {words}"
    if stdin_path is not None:
        line += f" < {quote(stdin_path)}"
    lines.append(line)
    return "\n".join(lines)
