"""``curl`` and ``wget`` in a bashkit sandbox: every connection fails as the service's would.

A bashkit sandbox has no network. bashkit's own ``curl``/``wget`` answer "network access not
configured" whatever the sandbox's egress rules say; these replace them with what curl 8 and
GNU wget print for the connection the service would make (``runtime.egress.verdict``): a
host outside the egress rules is reset after connecting (curl 35 on HTTPS, 56 on HTTP; wget
4), an allowed name does not resolve (curl 6, wget 4: the fake has no outside network) and
loopback or an allowed address refuses (curl 7, wget 4: nothing listens). wget makes one
attempt (GNU wget retries a reset up to 20 times).
"""

from __future__ import annotations

import time
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from fake_server.runtime import egress

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    import bashkit

    from fake_server.clock import Clock
    from fake_server.runtime.bashkit.adapters import CommandCallback

__all__ = ["curl_command", "wget_command"]

_DEFAULT_PORTS = {"http": 80, "https": 443}
_CURL_VALUE_SHORT = frozenset("oXHdueAmwTFbcxKrEYyzCt")
_CURL_VALUE_LONG = frozenset(
    [
        "output",
        "request",
        "header",
        "data",
        "data-raw",
        "data-binary",
        "data-urlencode",
        "user",
        "user-agent",
        "referer",
        "max-time",
        "connect-timeout",
        "write-out",
        "upload-file",
        "form",
        "cookie",
        "cookie-jar",
        "proxy",
        "retry",
        "retry-delay",
        "retry-max-time",
        "config",
        "range",
        "cert",
        "key",
        "cacert",
        "resolve",
        "interface",
        "limit-rate",
        "json",
        "output-dir",
        "url",
        "continue-at",
    ]
)
_WGET_VALUE_SHORT = frozenset("OoaPUtTewQiD")
_WGET_VALUE_LONG = frozenset(
    [
        "output-document",
        "output-file",
        "append-output",
        "directory-prefix",
        "user-agent",
        "header",
        "tries",
        "timeout",
        "post-data",
        "post-file",
        "execute",
        "method",
        "body-data",
        "user",
        "password",
        "quota",
        "wait",
        "limit-rate",
        "input-file",
        "domains",
    ]
)


class _Target:
    """One URL argument: scheme, host and port, or why curl rejects it."""

    def __init__(self, url: str) -> None:
        self.url = url if "://" in url else "http://" + url
        parts = urlsplit(self.url)
        self.scheme = parts.scheme.lower()
        self.host = (parts.hostname or "").lower()
        self.port = parts.port or _DEFAULT_PORTS.get(self.scheme, 0)  # ValueError: bad port
        if parts.path == "" and not parts.query:
            self.url += "/"


def _split(
    argv: Sequence[str], short: frozenset[str], long: frozenset[str]
) -> tuple[set[str], list[str]]:
    """Flags given (``s``, ``silent``…) and the URLs: every argument that is not an option's."""
    flags: set[str] = set()
    urls: list[str] = []
    args = iter(argv)
    for arg in args:
        if arg.startswith("--") and len(arg) > 2:
            name, eq, value = arg[2:].partition("=")
            flags.add(name)
            if name == "url":
                urls.append(value if eq else next(args, ""))
            elif name in long and not eq:
                next(args, None)
        elif arg.startswith("-") and len(arg) > 1:
            for index, char in enumerate(arg[1:]):
                flags.add(char)
                if char in short:
                    if index == len(arg) - 2:
                        next(args, None)
                    break
        else:
            urls.append(arg)
    return flags, urls


@dataclass(frozen=True, slots=True)
class _Client:
    """What a curl or wget call prints before it looks at a URL, and how it reads options."""

    value_short: frozenset[str]  # options that take a value, short and long
    value_long: frozenset[str]
    version: bytes  # on stdout, for -V
    usage: bytes  # on stderr, when no URL is given
    usage_status: int


_CURL = _Client(
    _CURL_VALUE_SHORT,
    _CURL_VALUE_LONG,
    b"curl 8.7.1 (x86_64-pc-linux-gnu)\nProtocols: http https\n",
    b"curl: no URL specified\ncurl: try 'curl --help' or 'curl --manual' for more information\n",
    2,
)
_WGET = _Client(
    _WGET_VALUE_SHORT,
    _WGET_VALUE_LONG,
    b"GNU Wget 1.21.3 built on linux-gnu.\n",
    b"wget: missing URL\nUsage: wget [OPTION]... [URL]...\n\nTry `wget --help' for more options.\n",
    1,
)


async def _start(ctx: bashkit.CommandContext, client: _Client) -> tuple[set[str], list[str]] | int:
    """A curl or wget call's flags and URLs, or its exit status once it printed its version
    (``-V``) or its usage (no URL): both clients start alike."""
    flags, urls = _split(list(ctx.argv), client.value_short, client.value_long)
    if flags & {"V", "version"}:
        await ctx.stdout.write(client.version)
        return 0
    if not urls:
        await ctx.stderr.write(client.usage)
        return client.usage_status
    return flags, urls


def curl_command(rules: Callable[[], Sequence[str]]) -> CommandCallback:
    """curl 8: the connection's failure, its message unless ``-s`` (``-S`` shows it again)."""

    async def curl(ctx: bashkit.CommandContext) -> int:
        started = await _start(ctx, _CURL)
        if isinstance(started, int):
            return started
        flags, urls = started
        quiet = bool(flags & {"s", "silent"}) and not flags & {"S", "show-error"}
        status = 0
        for url in urls:
            status, message = _curl_failure(rules(), url)
            if not quiet:
                await ctx.stderr.write(f"curl: ({status}) {message}\n".encode())
        return status

    return curl


def _curl_failure(rules: Sequence[str], url: str) -> tuple[int, str]:
    try:
        target = _Target(url)
    except ValueError:
        return 3, "URL rejected: Port number was not a decimal number between 0 and 65535"
    if target.scheme not in _DEFAULT_PORTS:
        return 1, f'Protocol "{target.scheme}" not supported'
    if not target.host:
        return 3, "URL rejected: No host part in the URL"
    outcome = egress.verdict(rules, target.host, target.port)
    if outcome == "refused":
        return 7, (
            f"Failed to connect to {target.host} port {target.port} after 0 ms: "
            "Couldn't connect to server"
        )
    if outcome == "unresolved":
        return 6, f"Could not resolve host: {target.host}"
    return (35 if target.scheme == "https" else 56), "Recv failure: Connection reset by peer"


def wget_command(rules: Callable[[], Sequence[str]], clock: Clock) -> CommandCallback:
    """GNU wget: its progress lines on stderr unless ``-q`` (``-nv`` keeps only errors); 4."""

    async def wget(ctx: bashkit.CommandContext) -> int:
        started = await _start(ctx, _WGET)
        if isinstance(started, int):
            return started
        flags, urls = started
        quiet = bool(flags & {"q", "quiet"})
        terse = quiet or bool(flags & {"n", "no-verbose", "nv"})
        status = 0
        for url in urls:
            status, lines, error = _wget_failure(rules(), url, clock)
            text = (lines if not terse else "") + (error if not quiet else "")
            await ctx.stderr.write(text.encode())
        return status

    return wget


def _wget_failure(rules: Sequence[str], url: str, clock: Clock) -> tuple[int, str, str]:
    """The exit status, the progress lines and the error line(s) wget prints at ``-nv``."""
    try:
        target = _Target(url)
    except ValueError:
        return 1, "", f"{url}: Bad port number.\n"
    if target.scheme not in _DEFAULT_PORTS or not target.host:
        return 1, "", f"{url}: Unsupported scheme.\n"
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(clock.time()))
    head = f"--{stamp}--  {target.url}\n"
    host, port = target.host, target.port
    outcome = egress.verdict(rules, host, port)
    if outcome == "unresolved":
        return (
            4,
            head + f"Resolving {host} ({host})... failed: Name or service not known.\n",
            f"wget: unable to resolve host address ‘{host}’\n",
        )
    if outcome == "refused":
        address = "127.0.0.1" if host == "localhost" else host
        where = f"{address}:{port}" if address == host else f"{host} ({host})|{address}|:{port}"
        resolving = "" if address == host else f"Resolving {host} ({host})... {address}\n"
        return 4, head + resolving + f"Connecting to {where}... failed: Connection refused.\n", ""
    address = _resolved(host)
    connected = (
        head
        + f"Resolving {host} ({host})... {address}\n"
        + f"Connecting to {host} ({host})|{address}|:{port}... connected.\n"
    )
    if target.scheme == "https":
        return 4, connected, "Unable to establish SSL connection.\n"
    return (
        4,
        connected
        + "HTTP request sent, awaiting response... "
        + "Read error (Connection reset by peer) in headers.\nGiving up.\n\n",
        "",
    )


def _resolved(host: str) -> str:
    """The address a name outside the rules resolves to (stable, in 198.18.0.0/15)."""
    if egress.is_ip(host):
        return host
    value = zlib.crc32(host.encode())
    return f"198.{18 + (value >> 16) % 2}.{(value >> 8) % 256}.{value % 254 + 1}"
