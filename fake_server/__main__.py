"""``createos-fake serve``: the fake on a real clock, for manual and out-of-process use."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import signal
import sys
from typing import TYPE_CHECKING

from fake_server.clock import RealClock
from fake_server.models import TransitionPolicy
from fake_server.runtime.api import RuntimeUnavailable
from fake_server.server import FakeCreateOS

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["JOURNAL_LIMIT", "main"]

#: Journal events ``serve`` keeps by default: two per request, so the last 50,000 requests.
JOURNAL_LIMIT = 100_000


def _rate_limit(text: str) -> int | None:
    if text == "off":
        return None
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("must be a positive integer or 'off'") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be a positive integer or 'off'")
    return value


def _journal_limit(text: str) -> int | None:
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="createos-fake", description="A fake of the CreateOS sandbox API."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve the fake API until Ctrl-C or SIGTERM")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=_port, default=8080, help="0 picks a free port")
    serve.add_argument("--api-key", type=_api_key, default=None, help="the default key")
    serve.add_argument("--seed", type=int, default=0)
    serve.add_argument(
        "--rate-limit", type=_rate_limit, default=300, help="requests/minute per key, or 'off'"
    )
    serve.add_argument("--transitions", choices=("realistic", "immediate"), default="realistic")
    serve.add_argument(
        "--journal-limit",
        type=_journal_limit,
        default=JOURNAL_LIMIT,
        help="keep the newest N journal events (a server may run for days), or 'off'",
    )
    serve.add_argument(
        "--runtime",
        choices=("auto", "process", "bashkit"),
        default="auto",
        help="what runs in sandboxes: real programs under bubblewrap (process), the in-memory "
        "bashkit shell, or auto: process where bubblewrap runs here, else bashkit",
    )
    return parser


def _runtime(choice: str) -> tuple[str, str]:
    """The runtime to serve with and the line that says so."""
    from fake_server.runtime.process.bwrap import require_bwrap

    if choice != "auto":
        return choice, f"runtime: {choice}"
    try:
        require_bwrap()
    except RuntimeUnavailable as exc:
        return "bashkit", f"runtime: bashkit ({str(exc).split('. ')[0]})"
    return "process", "runtime: process"


async def _serve(args: argparse.Namespace) -> int:
    policy = (
        TransitionPolicy.immediate()
        if args.transitions == "immediate"
        else TransitionPolicy.realistic()
    )
    runtime, runtime_line = _runtime(args.runtime)
    try:
        fake = FakeCreateOS(
            seed=args.seed,
            clock=RealClock(),
            transitions=policy,
            api_key=args.api_key,
            rate_limit=args.rate_limit,
            journal_limit=args.journal_limit,
            host=args.host,
            port=args.port,
            runtime=runtime,
        )
    except RuntimeUnavailable as exc:
        print(f"createos-fake: {exc}", file=sys.stderr)
        return 1
    try:
        await fake.start_async()
    except OSError as exc:
        reason = "address already in use" if exc.errno == errno.EADDRINUSE else exc.strerror
        print(f"createos-fake: cannot listen on {args.host}:{args.port}: {reason}", file=sys.stderr)
        return 1
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    print(f"{fake.url}/v1", flush=True)
    print(f"api key: {fake.api_key}", flush=True)
    print(runtime_line, flush=True)
    try:
        await stop.wait()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        await fake.aclose()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        return asyncio.run(_serve(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
