"""Helpers for the process-runtime tests: leftover checks on the host, a sandbox's machine and a
shell in it, directly or through the API."""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fake_server import FakeCreateOS, TransitionPolicy, VirtualClock
from fake_server.runtime.process import ProcessMachine
from fake_server.runtime.process.net import nft
from fake_server.runtime.process.sandbox import tree
from fake_server.runtime.process.storage.rootdir import BASE_NAME
from tests._needs import needs

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

    import httpx


#: For tests of sandboxes' way out (NAT, egress rules) and of what serve says with one.
needs_nft = needs(None if nft.nft_path() else "nftables' nft", "apt-get install nftables")


def bwrap_descendants() -> list[int]:
    """Processes below this test process that run bwrap (a sandbox's tree or its init)."""
    found = []
    for level in tree.descendants(os.getpid()):
        for pid in level:
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if b"bwrap" in cmdline.split(b"\0", 1)[0]:
                found.append(pid)
    return found


async def no_bwrap_left(deadline: float = 5.0) -> bool:
    """Whether every bwrap process is gone (they die at once; reaping may lag a moment)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + deadline
    while bwrap_descendants():
        if loop.time() > end:
            return False
        await asyncio.sleep(0.01)
    return True


def described(holders: list[str]) -> list[str]:
    """Each holder of :func:`netns_holders` with its command line, for a failure message."""
    named = []
    for holder in holders:
        pid = holder.split("/", 1)[0]
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").strip()
        except OSError:
            command = b"(gone)"
        named.append(f"{holder} ({command.decode(errors='replace')})")
    return named


async def until(predicate: Callable[[], bool], deadline: float = 20.0) -> None:
    """Wait (in real time, bounded) until ``predicate()`` holds; a real process decides when."""
    loop = asyncio.get_running_loop()
    end = loop.time() + deadline
    while not predicate():
        if loop.time() > end:
            raise AssertionError("condition not reached within the bound")
        await asyncio.sleep(0.005)


def base_dir() -> Path:
    import tempfile

    return Path(tempfile.gettempdir()) / BASE_NAME


def host_bytes(path: Path | str) -> bytes | None:
    """A host file's bytes, ``None`` when it does not exist."""
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        return None


def netns_holders(inode: str) -> list[str]:
    """What keeps the network namespace ``inode`` (``net:[…]``) alive on the host: processes
    in it and descriptors on it (``<pid>`` or ``<pid>/fd/<n>``); empty once it is gone."""
    holders = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        links = [f"{entry.name}/ns/net"]
        with contextlib.suppress(OSError):
            links += [f"{entry.name}/fd/{fd}" for fd in os.listdir(f"/proc/{entry.name}/fd")]
        for link in links:
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/{link}") == inode:
                    holders.append(link.removesuffix("/ns/net"))
    return holders


@contextlib.asynccontextmanager
async def process_fake() -> AsyncIterator[FakeCreateOS]:
    """A fake whose sandboxes run real programs, in this loop; nothing may be left once it
    closes (no error recorded, no bwrap process)."""
    fake = FakeCreateOS(
        clock=VirtualClock(), transitions=TransitionPolicy.immediate(), runtime="process"
    )
    async with fake:
        yield fake
        assert fake.errors == []
    assert await no_bwrap_left()


def machine(fake: FakeCreateOS, sandbox_id: str) -> ProcessMachine:
    """The process-runtime machine of ``sandbox_id``."""
    found = fake.sandbox(sandbox_id).machine
    assert isinstance(found, ProcessMachine)
    return found


async def sh(machine: ProcessMachine, script: str, stdin: bytes | None = None) -> tuple[int, str]:
    """Exit status and stdout+stderr of ``sh -c script`` in the sandbox, run on its machine.

    stderr joins stdout inside the shell (``exec 2>&1``), so the output keeps the order the
    commands wrote it in: two pipes read as bytes arrive have no order between them."""
    output: list[bytes] = []

    async def sink(data: bytes) -> None:
        output.append(data)

    code = await machine.runner(VirtualClock()).run(
        ["sh", "-c", "exec 2>&1\n" + script], stdin=stdin, on_stdout=sink, on_stderr=sink
    )
    return code, b"".join(output).decode()


async def api_sh(client: httpx.AsyncClient, sandbox_id: str, script: str) -> dict[str, Any]:
    """``bash -c script`` in the sandbox through the exec API, as a client runs it; its result."""
    response = await client.post(
        f"/v1/sandboxes/{sandbox_id}/exec", json={"cmd": "bash", "args": ["-c", script]}
    )
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()["data"]["result"]
    return result
