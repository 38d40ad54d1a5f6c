"""Running nftables' ``nft`` on a batch of commands, in the fake's or another namespace."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import shutil
import subprocess
from typing import TYPE_CHECKING

from fake_server.runtime.process.net.batch import TIMEOUT, run_batch

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["list_tables", "nft_path", "run", "run_async"]


@functools.cache
def nft_path() -> str | None:
    """nftables' ``nft``, or ``None`` when it is not installed."""
    return shutil.which("nft") or shutil.which("nft", path="/usr/sbin:/sbin:/usr/bin:/bin")


def run(commands: Sequence[str], *, enter: Sequence[str] = ()) -> str:
    """Apply ``commands`` as one atomic batch (``nft -f -``), inside the namespace that
    ``enter`` (an ``nsenter`` prefix) names; ``OSError`` with nft's first complaint."""
    path = nft_path()
    if path is None:
        raise FileNotFoundError("nftables' nft is not installed (apt-get install nftables)")
    done = run_batch([*enter, path, "-f", "-"], commands, tool="nft")
    if done.returncode != 0:
        errors = [line.split("Error:", 1)[1].strip() for line in done.stderr.splitlines()
                  if "Error:" in line]  # fmt: skip
        raise OSError(f"nft failed: {(errors or [str(done.returncode)])[0][:200]}")
    return done.stdout


async def run_async(commands: Sequence[str], *, enter: Sequence[str] = ()) -> None:
    """``run`` without blocking the loop; ``OSError`` when nft refuses or cannot run."""
    path = nft_path()
    if path is None:
        raise FileNotFoundError("nftables' nft is not installed (apt-get install nftables)")
    proc = await asyncio.create_subprocess_exec(
        *enter,
        path,
        "-f",
        "-",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        env={},
    )
    try:
        async with asyncio.timeout(TIMEOUT):
            _out, err = await proc.communicate(("\n".join(commands) + "\n").encode())
    except BaseException as exc:  # a timeout, or the caller cancelled: nft must not outlive it
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        with contextlib.suppress(BaseException):
            await proc.wait()
        if isinstance(exc, TimeoutError):
            raise OSError("nft did not finish in time") from None
        raise
    if proc.returncode != 0:
        raise OSError(f"nft failed: {err.decode(errors='replace').strip()[:200]}")


def list_tables(*, enter: Sequence[str] = ()) -> list[str]:
    """The names of the tables in a namespace (``family name`` each)."""
    path = nft_path()
    if path is None:
        return []
    done = subprocess.run(
        [*enter, path, "list", "tables"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
        env={},
    )
    return [line.removeprefix("table ").strip() for line in done.stdout.splitlines()]
