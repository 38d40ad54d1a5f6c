"""What a client may send: commands Linux can start, bodies that keep coming, and a bounded
number of connections.

An exec argument over 128 KiB once answered 500 (``execve`` failed with ``E2BIG``); it is a
400 naming the field now, as is an environment entry over the same size or a command line
past Linux's 2 MiB. A body that stops coming answers 408 after the idle timeout, and a server
past half its open-files limit in connections closes the one that waits longest on its client.
"""

from __future__ import annotations

import asyncio
import errno
import json
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest

from fake_server import FakeCreateOS, TransitionPolicy, VirtualClock
from fake_server.http.admission import Admission
from fake_server.http.connections import WatchedRunner
from fake_server.runtime.argv import MAX_ARG_BYTES, MAX_ARGS_TOTAL, oversize

pytestmark = pytest.mark.asyncio

MakeSandbox = Callable[..., Awaitable[str]]

_STRLEN = (
    "longer than 131071 bytes, the most Linux passes to a program (MAX_ARG_STRLEN); pass "
    "large data as stdin or in a file"
)
_ARG, _CMD = f"has an argument {_STRLEN}", f"is {_STRLEN}"
_TOTAL = (
    f"arguments and environment take more than {MAX_ARGS_TOTAL} bytes together; pass large "
    "data as stdin or in a file"
)


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        (
            {"cmd": "echo", "args": ["a" * (MAX_ARG_BYTES + 1)]},
            "args",
            f"has an argument {_STRLEN}",
        ),
        ({"cmd": "echo", "args": ["é" * 70_000]}, "args", _ARG),
        ({"cmd": "/" + "a" * MAX_ARG_BYTES}, "cmd", _CMD),
        ({"cmd": "echo", "args": ["a" * 130_000] * 16}, "args", _TOTAL),
        (
            {"cmd": "true", "env": {"A": "v" * MAX_ARG_BYTES}},
            "env",
            "has an entry (KEY=VALUE) longer than 131071 bytes, the most Linux passes to a "
            "program (MAX_ARG_STRLEN); pass large data in a file",
        ),
    ],
    ids=["argument", "multibyte", "cmd", "total", "env"],
)
async def test_a_command_larger_than_linux_starts_is_a_400_naming_the_field(
    client: httpx.AsyncClient,
    make_sandbox: MakeSandbox,
    body: dict[str, Any],
    field: str,
    message: str,
) -> None:
    sandbox_id = await make_sandbox(envs={"A": "1"})
    reply = await client.post(f"/v1/sandboxes/{sandbox_id}/exec", json=body)
    assert (reply.status_code, reply.json()) == (400, {"status": "fail", "data": {field: message}})


@pytest.mark.parametrize("route", ["exec?stream=true", "processes"])
async def test_streamed_execs_and_processes_check_the_same_sizes(
    client: httpx.AsyncClient, make_sandbox: MakeSandbox, route: str
) -> None:
    sandbox_id = await make_sandbox()
    body = {"cmd": "echo", "args": ["a" * (MAX_ARG_BYTES + 1)]}
    reply = await client.post(f"/v1/sandboxes/{sandbox_id}/{route}", json=body)
    assert (reply.status_code, reply.json()) == (400, {"status": "fail", "data": {"args": _ARG}})


async def test_the_largest_argument_linux_passes_runs(
    client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    sandbox_id = await make_sandbox()
    body = {"cmd": "printf", "args": ["%s", "a" * MAX_ARG_BYTES]}
    reply = await client.post(f"/v1/sandboxes/{sandbox_id}/exec", json=body)
    assert reply.json()["data"]["result"]["stdout"] == "a" * MAX_ARG_BYTES


async def test_sizes_are_counted_as_linux_counts_them() -> None:
    assert oversize(["x" * MAX_ARG_BYTES], {}) is None
    assert oversize(["\ud800" * 43_690], {}) is None  # 3 bytes each once encoded, as U+FFFD
    assert oversize(["\ud800" * 43_691], {}) == ("cmd", _CMD)
    # Each string costs its bytes, its NUL and its 8-byte pointer.
    fits = ["a" * 100_000] * 19
    fits.append("a" * (MAX_ARGS_TOTAL - 19 * (100_000 + 9) - 9))
    assert oversize(fits, {}) is None
    assert oversize([*fits, ""], {}) == ("args", _TOTAL)


# -- bodies ------------------------------------------------------------------------------------


async def test_a_body_that_stops_coming_answers_408_after_the_idle_timeout() -> None:
    fake = FakeCreateOS(clock=VirtualClock(), transitions=TransitionPolicy.immediate())
    await fake.start_async(idle_timeout=0.2)
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", fake.port)
        writer.write(
            b"POST /v1/sandboxes HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            + f"X-Api-Key: {fake.api_key}\r\n".encode()
            + b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
        )
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=10)
        length = next(
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        body = await asyncio.wait_for(reader.readexactly(length), timeout=10)
        writer.close()
        assert head.startswith(b"HTTP/1.1 408 ")
        assert json.loads(body) == {
            "status": "fail",
            "data": {
                "code": "request_timeout",
                "message": "the request body stalled: no bytes arrived for 0.2 s",
            },
        }
        assert fake.errors == []
    finally:
        await fake.aclose()


# -- connections --------------------------------------------------------------------------------


class _Connection:
    def __init__(self, name: str, admission: Admission) -> None:
        self.name = name
        self.closed = False
        self._admission = admission

    def force_close(self) -> None:
        self.closed = True

    def __repr__(self) -> str:
        return self.name


def _open(admission: Admission, *names: str) -> dict[str, _Connection]:
    opened = {name: _Connection(name, admission) for name in names}
    for connection in opened.values():
        admission.opened(connection)
    return opened


async def test_past_the_bound_the_connection_waiting_longest_on_its_client_goes() -> None:
    admission = Admission(limit=lambda: 3)
    c = _open(admission, "a", "b", "c")
    admission.heard(c["a"])  # a sent bytes last: b has waited longest
    _open(admission, "d")
    assert [n for n, conn in c.items() if conn.closed] == ["b"]
    assert (len(admission), admission.shed) == (3, 1)


async def test_idle_keep_alive_connections_go_after_requests_that_never_arrived() -> None:
    admission = Admission(limit=lambda: 3)
    c = _open(admission, "pooled", "stalled", "busy")
    admission.serving(c["pooled"])
    admission.idle(c["pooled"])  # served once, waits for its next request
    admission.serving(c["busy"])  # an exec running: never closed for another
    c |= _open(admission, "new")
    assert [n for n, conn in c.items() if conn.closed] == ["stalled"]
    admission.serving(c["new"])  # its request arrived whole
    c |= _open(admission, "newer")
    assert sorted(n for n, conn in c.items() if conn.closed) == ["pooled", "stalled"]


async def test_a_handler_waiting_for_body_bytes_waits_on_its_client() -> None:
    admission = Admission(limit=lambda: 2)
    c = _open(admission, "uploading", "busy")
    admission.serving(c["busy"])
    admission.serving(c["uploading"])
    admission.arriving(c["uploading"])  # its handler reads the body (``bodies.read_some``)
    newcomer = _open(admission, "new")["new"]
    assert (c["uploading"].closed, c["busy"].closed, newcomer.closed) == (True, False, False)


async def test_when_every_connection_is_being_served_the_newcomer_is_closed() -> None:
    admission = Admission(limit=lambda: 1)
    busy = _open(admission, "busy")["busy"]
    admission.serving(busy)
    newcomer = _open(admission, "new")["new"]
    assert (busy.closed, newcomer.closed, len(admission)) == (False, True, 1)


async def test_a_server_without_an_open_files_limit_holds_any_number() -> None:
    admission = Admission(limit=lambda: None)
    opened = _open(admission, *(str(i) for i in range(100)))
    assert not any(connection.closed for connection in opened.values())


async def test_a_host_refusing_a_smaller_command_line_is_an_exit_not_a_500(
    client: httpx.AsyncClient, make_sandbox: MakeSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A host whose stack limit is below 8 MiB refuses less than the API checks for."""
    from fake_server.runtime.bashkit.shell import Shell

    async def refuse(*args: object, **kwargs: object) -> int:
        raise OSError(errno.E2BIG, "Argument list too long")

    monkeypatch.setattr(Shell, "run", refuse)
    sandbox_id = await make_sandbox()
    buffered = await client.post(f"/v1/sandboxes/{sandbox_id}/exec", json={"cmd": "true"})
    assert buffered.json()["data"]["result"] == {
        "exit_code": 126,
        "stdout": "",
        "stderr": "",
        "error": "fork/exec true: argument list too long",
    }
    body = {"cmd": "true", "stream": True}
    streamed = await client.post(f"/v1/sandboxes/{sandbox_id}/exec", json=body)
    assert [json.loads(line) for line in streamed.text.splitlines()] == [
        {"error": "fork/exec true: argument list too long"},
        {"exit_code": 126},
    ]


async def test_every_socket_counts_once_whatever_it_speaks(fake: FakeCreateOS) -> None:
    """A connection that sends nothing yet (the HTTP/2 front waits for its first bytes) counts,
    and an HTTP/2 connection counts once whatever its streams (each runs on a channel in
    memory, which holds no descriptor)."""
    runner = fake._runner
    assert isinstance(runner, WatchedRunner)
    admission = runner.admission
    loop = asyncio.get_running_loop()

    async def counted(expected: int) -> None:
        deadline = loop.time() + 10
        while len(admission) != expected:
            assert loop.time() < deadline, (len(admission), expected)
            await asyncio.sleep(0.005)

    base = len(admission)
    silent = [await asyncio.open_connection("127.0.0.1", fake.port) for _ in range(3)]
    await counted(base + 3)
    async with httpx.AsyncClient(
        base_url=fake.url, headers={"X-Api-Key": fake.api_key}, http1=False, http2=True
    ) as h2:
        replies = await asyncio.gather(*(h2.get("/v1/whoami") for _ in range(5)))
        assert {reply.http_version for reply in replies} == {"HTTP/2"}
        await counted(base + 4)
    for _reader, writer in silent:
        writer.close()
    await counted(base)
