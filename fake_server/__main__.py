"""``createos-fake serve``: the fake on a real clock, for manual and out-of-process use."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import json
import os
import secrets
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from fake_server.clock import RealClock
from fake_server.console import Console
from fake_server.dashboard import dashboard_request
from fake_server.hostfiles import write_whole
from fake_server.http.routes import CONTROL_KEY_HEADER
from fake_server.http.serve_guards import allowed_hosts, host_guard, request_log
from fake_server.models import TransitionPolicy
from fake_server.runtime.api import RuntimeUnavailable
from fake_server.runtime.netoptions import NetworkOptions
from fake_server.server import FakeCreateOS
from fake_server.stopping import StopSignals

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

__all__ = [
    "ENV_API_KEY",
    "ENV_CONTROL_KEY",
    "EPHEMERAL_LINE",
    "IDLE_TIMEOUT",
    "JOURNAL_LIMIT",
    "connection_help",
    "env_lines",
    "keys_from_environment",
    "main",
    "serve_fake",
    "serve_key",
]

#: Journal events ``serve`` keeps by default: two per request, so the last 50,000 requests.
JOURNAL_LIMIT = 100_000
#: Real seconds a connection may stay open without a complete request (aiohttp: one hour).
#: Above the idle expiry of common client pools (httpx 5 s, Node's fetch 4 s), so a client
#: never reuses a connection the server is closing.
IDLE_TIMEOUT = 15.0
#: Real seconds a request in flight at stop gets to finish its reply (its sandbox's processes
#: are already killed), so clients see a complete reply and a closed connection.
STOP_GRACE = 1.0
EPHEMERAL_LINE = "state: in memory only, lost at stop (--state-dir DIR keeps it)"
#: Where ``--api-key`` and ``--control-key`` come from when the flag is not given (a CI job
#: chooses its keys without putting them on a command line).
ENV_API_KEY = "CREATEOS_FAKE_API_KEY"
ENV_CONTROL_KEY = "CREATEOS_FAKE_CONTROL_KEY"


def _positive_or_off(text: str) -> int | None:
    """``--rate-limit`` and ``--journal-limit``: a count, or ``off`` (``None``: no limit)."""
    if text == "off":
        return None
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("must be a positive integer or 'off'") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be a positive integer or 'off'")
    return value


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("must be an integer 0-65535") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError("must be an integer 0-65535")
    return value


def _api_key(text: str) -> str:
    if not text or not text.isprintable() or len(text) > 512 or text != text.strip():
        raise argparse.ArgumentTypeError("must be 1-512 printable characters, no outer spaces")
    return text


def _timeout(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("must be a number of seconds > 0") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError("must be a number of seconds > 0")
    return value


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("must be an integer >= 0") from None
    if value < 0:
        raise argparse.ArgumentTypeError("must be an integer >= 0")
    return value


def _listen_host(text: str) -> str:
    """An empty host would make aiohttp listen on every interface (and print ``http://:PORT``);
    all interfaces are spelled ``0.0.0.0`` or ``::``."""
    if not text.strip() or not text.isprintable() or any(c in text for c in " /@?#"):
        raise argparse.ArgumentTypeError(
            "must be a host name or an address (0.0.0.0 or :: for every interface)"
        )
    return text


def _host_name(text: str) -> str:
    if not text or not text.isprintable() or any(c in text for c in " /@?#"):
        raise argparse.ArgumentTypeError("must be a host name, an address or '*'")
    return text


def _version() -> str:
    """The installed pytest-createos version (the fake ships in that distribution)."""
    from importlib import metadata

    try:
        return metadata.version("pytest-createos")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="createos-fake", description="A fake of the CreateOS sandbox API."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve the fake API until Ctrl-C or SIGTERM")
    serve.add_argument("--host", type=_listen_host, default="127.0.0.1")
    serve.add_argument("--port", type=_port, default=8080, help="0 picks a free port")
    serve.add_argument(
        "--preview-port",
        type=_port,
        default=0,
        help="where preview URLs are served, apart from the API and the dashboard (default 0: "
        "a free port)",
    )
    serve.add_argument(
        "--api-key",
        type=_api_key,
        default=None,
        help=f"the account's key (default: ${ENV_API_KEY}, else random per start)",
    )
    serve.add_argument(
        "--control-key",
        type=_api_key,
        default=None,
        help=f"the control API's key (default: ${ENV_CONTROL_KEY}, else random per start)",
    )
    serve.add_argument(
        "--print-env",
        type=Path,
        default=None,
        metavar="FILE",
        help="once serving, write the export lines (base URL, both SDKs' key variables, the "
        "control key) to FILE, readable by its owner only",
    )
    serve.add_argument(
        "--seed", type=_seed, default=None, help="seeds ids and, without --api-key, the key"
    )
    serve.add_argument(
        "--rate-limit", type=_positive_or_off, default=300, help="requests/minute per key, or 'off'"
    )
    serve.add_argument("--transitions", choices=("realistic", "immediate"), default="realistic")
    serve.add_argument(
        "--journal-limit",
        type=_positive_or_off,
        default=JOURNAL_LIMIT,
        help="keep the newest N journal events (a server may run for days), or 'off'",
    )
    serve.add_argument(
        "--journal-messages",
        choices=("on", "off"),
        default="on",
        help="keep each request's and reply's headers and body (up to 4096 characters each) "
        "in the journal, or 'off': method, path, status and ids only",
    )
    serve.add_argument(
        "--runtime",
        choices=("auto", "process", "bashkit"),
        default="auto",
        help="what runs in sandboxes: real programs under bubblewrap (process), the in-memory "
        "bashkit shell, or auto: process where bubblewrap runs here, else bashkit (without "
        "root, process-runtime sandboxes have no shared network: no preview URLs, egress or "
        "account networks)",
    )
    serve.add_argument(
        "--egress-hostnames",
        choices=("ignore", "enforce"),
        default="ignore",
        help="host-name egress rules (pypi.org, *.pypi.org:443): stored and echoed but not "
        "enforced, as on the service (ignore), or enforced too (enforce: the strict mode)",
    )
    serve.add_argument(
        "--egress-private",
        choices=("block", "allow"),
        default="block",
        help="whether process-runtime sandboxes may reach private ranges (10/8, 172.16/12, "
        "192.168/16, 100.64/10: the host's LAN); the host's own addresses stay out of reach",
    )
    serve.add_argument(
        "--image-fallback",
        action="store_true",
        help="where the process runtime's devbox:1 image cannot be built (bun from the npm "
        "registry), run sandboxes on the host's programs as user sandbox on a read-only /usr "
        "instead of refusing to start",
    )
    serve.add_argument(
        "--allow-host",
        type=_host_name,
        action="append",
        default=[],
        metavar="NAME",
        help="also accept this Host name (repeatable; '*' accepts any)",
    )
    serve.add_argument(
        "--idle-timeout",
        type=_timeout,
        default=IDLE_TIMEOUT,
        metavar="SECONDS",
        help="close a connection without a complete request after this long",
    )
    serve.add_argument(
        "--state-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="keep accounts, keys, sandboxes and their files, networks, disks, templates, "
        "access tokens and the journal in DIR (SQLite and sandbox directories): a restart, "
        "even after a crash, brings them back, running sandboxes as paused (default: "
        "everything is lost at stop)",
    )
    serve.add_argument("--quiet", action="store_true", help="do not log requests")
    serve.add_argument(
        "--open",
        action="store_true",
        help="open the web dashboard (/_fake/ui/) in a browser once serving",
    )
    commands.add_parser(
        "image",
        help="build the process runtime's devbox:1 image now (once per machine; serve builds "
        "it too when missing) and say what each rootfs name boots",
    )
    return parser


def _runtime(
    choice: str, image_fallback: bool = False, say: Callable[[str], None] = print
) -> tuple[str, str]:
    """The runtime to serve with and the lines that say so (with the process runtime's
    network mode, reduced where sandboxes cannot share a network namespace, and the image
    each rootfs name boots, built first if need be with a progress line, given to ``say``)."""
    from fake_server.models.catalog import Catalog
    from fake_server.runtime.process.containment import cgroups, confine, idmap, procview
    from fake_server.runtime.process.containment.bwrap import require_bwrap
    from fake_server.runtime.process.images import system
    from fake_server.runtime.process.net import netmode

    if choice == "bashkit":
        return choice, "runtime: bashkit"
    if choice == "auto":
        try:
            require_bwrap()
        except RuntimeUnavailable as exc:
            return "bashkit", f"runtime: bashkit ({str(exc).split('. ')[0]})"
    chosen = system.choose(fallback=image_fallback, progress=say)
    images = chosen.describe(Catalog().rootfs)
    ids = idmap.host_range() if chosen.image and not chosen.rootless else None
    contained = confine.describe(ids, idmap.layout_map(image=chosen.image), chosen.ids)
    lines = [f"runtime: {netmode.detect().describe()}", cgroups.describe(), contained]
    if chosen.image and not chosen.rootless:  # lxcfs serves root's image sandboxes (``procview``)
        lines.append(procview.describe())
    lines.append(images)
    return "process", "\n".join(lines)


def serve_key(api_key: str | None, seed: int | None) -> str | None:
    """The key to serve with; ``None`` lets the fake derive it from the seed.

    A key shared by every install would let anything that finds the port use it, so it is
    random unless asked for (``--api-key``) or made reproducible with the rest (``--seed``).
    """
    if api_key is None and seed is None:
        return "cos_live_" + secrets.token_hex(16)
    return api_key


def connection_help(
    fake: FakeCreateOS, runtime_line: str | None = None, state_lines: Sequence[str] = ()
) -> str:
    """What to paste to point a client at ``fake``: SDK variables, provider config, header.

    ``runtime_line`` says what runs in sandboxes (default: the fake's runtime);
    ``state_lines`` where the state is kept (default: nowhere).
    """
    origin, key = fake.url, fake.api_key
    config = {"apiUrl": origin, "apiKey": key, "shape": "s-1vcpu-1gb"}
    lines = [
        f"createos-fake serving {origin} (API under {origin}/v1); Ctrl-C stops it",
        runtime_line or f"runtime: {fake.runtime}",
        *(state_lines or [EPHEMERAL_LINE]),
        "",
        "# the official SDKs (they add /v1 themselves; Python reads CREATEOS_API_KEY,"
        " TypeScript CREATEOS_SANDBOX_API_KEY):",
        f"export CREATEOS_SANDBOX_BASE_URL={origin}",
        f"export CREATEOS_API_KEY={shlex.quote(key)}",
        f"export CREATEOS_SANDBOX_API_KEY={shlex.quote(key)}",
        "# the pytest-createos provider's environment config:",
        json.dumps(config),
        "# curl and other HTTP clients send the key in the X-Api-Key header:",
        f"curl -H {shlex.quote('X-Api-Key: ' + key)} {origin}/v1/sandboxes",
        "# preview URLs (a sandbox's ingress_url_template) have a port of their own; a browser"
        " is sent on to a host per sandbox and port, http://<id after sb->-<port>.localhost:"
        f"{fake.preview_port}/",
        f"preview URLs: {fake.preview_origin}/_ingress/<sandbox id>/<port>/",
    ]
    lines += [
        f"# the fake's control API (/_fake/...) takes its own key in {CONTROL_KEY_HEADER},",
        f"# and so does the web dashboard's login: {fake.dashboard_url}",
        f"control key: {fake.control_key}",
    ]
    return "\n".join(lines) + "\n"


def env_lines(fake: FakeCreateOS) -> str:
    """The lines ``--print-env`` writes: ``source`` them, or strip ``export `` for a
    ``$GITHUB_ENV`` file."""
    names = {
        "CREATEOS_SANDBOX_BASE_URL": fake.url,
        "CREATEOS_API_KEY": fake.api_key,
        "CREATEOS_SANDBOX_API_KEY": fake.api_key,
        ENV_CONTROL_KEY: fake.control_key,
    }
    return "".join(f"export {name}={shlex.quote(value)}\n" for name, value in names.items())


def write_env(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole (a waiting reader never sees half of it), mode 0600,
    never through a link planted in its folder (``hostfiles.write_whole``)."""
    write_whole(path, text.encode())


def keys_from_environment(
    parser: argparse.ArgumentParser, args: argparse.Namespace, environ: Mapping[str, str]
) -> None:
    """``--api-key`` and ``--control-key`` from their variables when the flags are absent;
    a bad value is a usage error naming the variable (never echoing the value)."""
    for attribute, name in (("api_key", ENV_API_KEY), ("control_key", ENV_CONTROL_KEY)):
        if getattr(args, attribute, "unset") is not None or not environ.get(name):
            continue
        try:
            setattr(args, attribute, _api_key(environ[name]))
        except argparse.ArgumentTypeError as exc:
            parser.error(f"${name}: {exc}")


def serve_fake(args: argparse.Namespace, runtime: str) -> FakeCreateOS:
    """The fake ``serve`` runs, configured from its flags (not started)."""
    policy = (
        TransitionPolicy.immediate()
        if args.transitions == "immediate"
        else TransitionPolicy.realistic()
    )
    fake = FakeCreateOS(
        seed=args.seed if args.seed is not None else 0,
        clock=RealClock(),
        transitions=policy,
        api_key=serve_key(args.api_key, args.seed),
        control_key=args.control_key,
        rate_limit=args.rate_limit,
        journal_limit=args.journal_limit,
        host=args.host,
        port=args.port,
        preview_port=args.preview_port,
        runtime=runtime,
        network=NetworkOptions(private=args.egress_private == "allow"),
        egress_hostnames=args.egress_hostnames,
        image_fallback=args.image_fallback,
    )
    fake.journal.messages = args.journal_messages == "on"
    fake.runtimes.process_choice = "createos-fake serve --runtime process"
    return fake


#: Keys shorter than this get a warning: easy to guess, and masked only where they stand whole.
SHORT_KEY = 8


def short_key_warnings(args: argparse.Namespace) -> list[str]:
    """A line per given key shorter than ``SHORT_KEY`` characters (never the key itself)."""
    lines = []
    for attribute, flag in (("api_key", "--api-key"), ("control_key", "--control-key")):
        value = getattr(args, attribute, None)
        if value is not None and len(value) < SHORT_KEY:
            lines.append(
                f"warning: the {flag} value is shorter than {SHORT_KEY} "
                "characters: anyone who can reach the port can guess it, and the journal "
                "masks it only where it stands as a whole word"
            )
    return lines


async def _serve(args: argparse.Namespace) -> int:
    """Serve until a signal; every line goes through a ``Console``, so a closed or stuck
    stdout or stderr (``serve | head -3``) never changes an answer or holds up a stop."""
    console = Console()
    try:
        return await _serve_with(args, console)
    finally:
        console.close()


async def _serve_with(args: argparse.Namespace, console: Console) -> int:
    def complain(message: str) -> None:
        console.err(f"createos-fake: {message}")

    for line in short_key_warnings(args):
        complain(line)
    try:
        runtime, runtime_line = _runtime(args.runtime, args.image_fallback, console.out)
        fake = serve_fake(args, runtime)
    except RuntimeUnavailable as exc:
        complain(str(exc))
        return 1
    persistence = None
    if args.state_dir is not None:
        from fake_server.persist import Persistence, StateDirError

        try:
            persistence = Persistence(
                fake, args.state_dir, on_error=complain, keep_key=args.api_key is not None
            )
        except StateDirError as exc:
            fake.runtimes.close()
            complain(str(exc))
            return 2
    outer = [host_guard(allowed_hosts(args.host, args.allow_host))]
    if not args.quiet:
        outer.insert(0, request_log(fake.faults, console.out, dashboard_request))
    try:
        await fake.start_async(
            outer_middlewares=outer, idle_timeout=args.idle_timeout, shutdown_grace=STOP_GRACE
        )
    except OSError as exc:
        reason = "address already in use" if exc.errno == errno.EADDRINUSE else exc.strerror
        ports = f"{args.port}" if not args.preview_port else f"{args.port} or {args.preview_port}"
        complain(f"cannot listen on {args.host}:{ports}: {reason}")
        await fake.aclose()
        return 1
    state_lines = persistence.describe() if persistence is not None else ()
    with StopSignals(console.out) as signals:
        try:
            if args.print_env is not None:  # before the lines: whoever reads them finds it
                try:
                    write_env(args.print_env, env_lines(fake))
                except OSError as exc:
                    complain(f"cannot write --print-env {args.print_env}: {exc.strerror}")
                    return 1
            for line in connection_help(fake, runtime_line, state_lines).splitlines():
                console.out(line)
            console.out("")
            if args.open:
                _open_browser(fake.dashboard_url, complain)
            await signals.stopping.wait()
            if persistence is not None:
                persistence.begin_stop()  # from here on a request gets 503, changing nothing
                console.out(f"createos-fake: saving the state to {args.state_dir}")
        finally:
            await fake.aclose()
    console.out("createos-fake: stopped")
    return 0


def _complain(message: str) -> None:
    print(f"createos-fake: {message}", file=sys.stderr, flush=True)


def _open_browser(url: str, complain: Callable[[str], None] = _complain) -> None:
    """``--open``: the default browser, without waiting for it; a machine without one says so."""
    import webbrowser

    try:
        opened = webbrowser.open(url)
    except webbrowser.Error:
        opened = False
    if not opened:
        complain(f"no browser to open; visit {url}")


def _image() -> int:
    """Build the devbox:1 image's cache: bun and the Debian 13 tree (CI does it before the
    tests, which stay offline)."""
    from fake_server.models.catalog import Catalog
    from fake_server.runtime.process.images import system

    try:
        chosen = system.build(progress=lambda line: print(line, flush=True))
    except RuntimeUnavailable as exc:
        _complain(str(exc))
        return 1
    print(chosen.describe(Catalog().rootfs))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    keys_from_environment(parser, args, os.environ)
    if args.command == "image":
        return _image()
    with contextlib.suppress(KeyboardInterrupt):
        return asyncio.run(_serve(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
