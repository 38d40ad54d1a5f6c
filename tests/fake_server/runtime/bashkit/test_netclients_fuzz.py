"""``curl`` and ``wget`` of a bashkit sandbox on any arguments: one of their documented exit
statuses and a one-line message, never a Python error."""

from __future__ import annotations

import asyncio
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fake_server.clock import VirtualClock
from fake_server.runtime.bashkit import CommandRegistry
from fake_server.runtime.bashkit.machine import BashkitMachine

pytestmark = pytest.mark.reliability

_WORDS = st.one_of(
    st.sampled_from(
        [
            "-s", "-S", "-sSfL", "-o", "-O", "-O-", "-q", "-nv", "--url", "--max-time=5",
            "-H", "-X", "POST", "--", "-", "", "http://", "https://", "http://[::1]:80/",
            "https://example.com", "http://pypi.org:99999/", "ftp://x", "localhost:8080",
            "127.0.0.1", "10.0.0.1:80", "a b", "é", "http://%zz/", "//x", "http://:80/",
            "https://user:pw@host.example/path?q=1#f", "--version", "-V", "--url=",
        ]
    ),
    st.text(st.characters(blacklist_characters="\x00"), max_size=12),  # argv holds no NUL
)  # fmt: skip
STATUSES = {0, 1, 2, 3, 4, 6, 7, 35, 56}


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    command=st.sampled_from(["curl", "wget"]),
    rules=st.sampled_from([[], ["pypi.org"], ["*.example.com:443", "10.0.0.0/8"]]),
    args=st.lists(_WORDS, max_size=5),
)
def test_clients_never_crash_on_any_arguments(
    command: str, rules: list[str], args: list[str]
) -> None:
    async def scenario() -> tuple[int, str]:
        clock = VirtualClock()
        machine = BashkitMachine(CommandRegistry())
        machine.set_egress(rules, lambda: None)  # type: ignore[arg-type,return-value]
        err: list[bytes] = []

        async def sink(data: bytes) -> None:
            err.append(data)

        async def drop(data: bytes) -> None:
            pass

        try:
            code = await asyncio.wait_for(
                machine.runner(clock).run([command, *args], on_stdout=drop, on_stderr=sink), 10
            )
            return code, b"".join(err).decode(errors="replace")
        finally:
            machine.destroy()
            clock.close()

    code, stderr = asyncio.run(scenario())
    assert code in STATUSES, (code, stderr)
    assert re.search(r"\w(Error|Exception):|Traceback", stderr) is None
