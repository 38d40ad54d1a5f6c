"""Exec output is bounded and never cut silently.

A buffered exec keeps at most ``BUFFERED_LIMIT`` bytes of each stream and its result's
``error`` says what was dropped (200 MB of buffered output once took the fake to 661 MB); a
streamed exec's command waits while its client has not taken ``STREAM_BACKLOG`` of output; and
bashkit's own cut of a command's output at 10 MiB is said on stderr with status 1.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import pytest

from fake_server.models import exec_output
from fake_server.models.exec_output import Backlog, OutputSink, cut_notice
from fake_server.runtime.bashkit.outputcut import OUTPUT_LIMIT, cut_status
from fake_server.runtime.bashkit.outputcut import cut_notice as bashkit_notice

if TYPE_CHECKING:
    import httpx
    from _runtime_box import Box

pytestmark = pytest.mark.asyncio

MakeSandbox = Callable[..., Awaitable[str]]


async def _exec(client: httpx.AsyncClient, sandbox_id: str, script: str) -> dict[str, Any]:
    reply = await client.post(
        f"/v1/sandboxes/{sandbox_id}/exec", json={"cmd": "bash", "args": ["-c", script]}
    )
    assert reply.status_code == 200, reply.text
    result: dict[str, Any] = reply.json()["data"]["result"]
    return result


async def test_a_buffered_exec_keeps_the_limit_of_each_stream_and_says_what_it_dropped(
    client: httpx.AsyncClient, make_sandbox: MakeSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(exec_output, "BUFFERED_LIMIT", 1000)
    sandbox_id = await make_sandbox()
    result = await _exec(client, sandbox_id, "seq 1000; seq 500 >&2; exit 3")
    out = "".join(f"{i}\n" for i in range(1, 1001))
    err = "".join(f"{i}\n" for i in range(1, 501))
    assert result == {
        "exit_code": 3,
        "stdout": out[:1000],
        "stderr": err[:1000],
        "error": f"stdout and stderr passed the 1000-byte limit a buffered exec keeps of each "
        f"stream ({len(out) - 1000} stdout and {len(err) - 1000} stderr bytes dropped); "
        "stream the output (stream=true) or write it to a file",
    }


async def test_a_buffered_exec_within_the_limit_is_whole_and_says_nothing(
    client: httpx.AsyncClient, make_sandbox: MakeSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(exec_output, "BUFFERED_LIMIT", 1000)
    sandbox_id = await make_sandbox()
    result = await _exec(client, sandbox_id, "head -c 1000 /dev/zero | tr '\\0' a")
    assert result == {"exit_code": 0, "stdout": "a" * 1000, "stderr": "", "error": ""}


async def test_a_streamed_exec_is_not_cut(
    client: httpx.AsyncClient, make_sandbox: MakeSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(exec_output, "BUFFERED_LIMIT", 1000)
    sandbox_id = await make_sandbox()
    body = {"cmd": "bash", "args": ["-c", "seq 1000"], "stream": True}
    reply = await client.post(f"/v1/sandboxes/{sandbox_id}/exec", json=body)
    frames = [line for line in reply.text.splitlines() if '"stdout"' in line]
    text = "".join(json.loads(line)["stdout"] for line in frames)
    assert text == "".join(f"{i}\n" for i in range(1, 1001))


async def test_a_cut_inside_a_multibyte_character_ends_in_a_replacement_character() -> None:
    sink = OutputSink(limit=4)
    await sink("abcé".encode())  # "é" is two bytes: the limit falls between them
    assert (sink.text(), sink.dropped) == ("abc\ufffd", 1)
    assert cut_notice(sink, OutputSink(limit=4)) == (
        "stdout passed the 4-byte limit a buffered exec keeps of each stream (1 stdout bytes "
        "dropped); stream the output (stream=true) or write it to a file"
    )


async def test_streamed_output_past_the_backlog_waits_for_the_client() -> None:
    backlog = Backlog(limit=10)
    taken: list[str] = []

    def emit(text: str) -> None:
        taken.append(text)
        backlog.added(len(text))

    sink = OutputSink(emit, backlog=backlog)
    await sink(b"0123456789")  # at the limit: the command goes on
    writing = asyncio.ensure_future(sink(b"x"))  # past it: the command waits
    for _ in range(5):
        await asyncio.sleep(0)
    assert not writing.done()
    backlog.taken(11)  # the client took the frames
    await asyncio.wait_for(writing, timeout=5)
    assert taken == ["0123456789", "x"]


# -- bashkit's own cut -----------------------------------------------------------------------


async def test_bashkits_cut_of_a_commands_output_is_said_with_status_1(box: Box) -> None:
    result = await box.sh(f"head -c {OUTPUT_LIMIT + 1000} /dev/zero; echo err >&2")
    assert len(result.stdout) == OUTPUT_LIMIT
    assert result.stderr == (
        "err\nbash: stdout cut at 10485760 bytes: the bashkit runtime passes on at most 10 MiB "
        "of a command's output (bashkit's own limit); write it to a file, or run the command "
        "on the process runtime\n"
    )
    assert result.code == 1


@pytest.mark.parametrize(
    ("stdout", "stderr", "code", "notice", "status"),
    [
        (False, False, 0, None, 0),
        (True, False, 3, "stdout", 3),
        (False, True, 0, "stderr", 1),
        (True, True, 0, "stdout and stderr", 1),
    ],
)
async def test_the_notice_names_every_stream_bashkit_cut(
    stdout: bool, stderr: bool, code: int, notice: str | None, status: int
) -> None:
    result: Any = SimpleNamespace(stdout_truncated=stdout, stderr_truncated=stderr)
    said = bashkit_notice(result)
    assert (said.decode().split(" cut at")[0] if said else None) == (
        None if notice is None else f"bash: {notice}"
    )
    assert cut_status(code, result) == status


# -- large replies ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        {"status": "success", "data": {"result": {"stdout": 'a"b\\c\n\t' * 30_000, "n": 1}}},
        {"s": "é😀\u2028" * 40_000, "list": [1, None, True, "x" * 70_000, {"k": 2.5}]},
        {"empty": "", "nested": [[{"deep": ["y" * 65_536]}]]},
    ],
)
async def test_a_reply_in_pieces_is_the_reply_json_response_writes(value: Any) -> None:
    from fake_server.http.streams.writers import json_pieces

    pieces = list(json_pieces(value))
    assert "".join(pieces) == json.dumps(value)
    assert max(map(len, pieces)) <= 12 * 64 * 1024  # an escaped slice at most, never the whole


async def test_a_large_buffered_result_is_written_in_pieces_and_journaled_by_size(
    fake: Any,
    client: httpx.AsyncClient,
    make_sandbox: MakeSandbox,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from fake_server.http.handlers import commands

    monkeypatch.setattr(commands, "LARGE_JSON", 100)
    sandbox_id = await make_sandbox()
    reply = await client.post(
        f"/v1/sandboxes/{sandbox_id}/exec", json={"cmd": "bash", "args": ["-c", "seq 100"]}
    )
    assert reply.headers["content-type"] == "application/json; charset=utf-8"
    out = "".join(f"{i}\n" for i in range(1, 101))
    data = reply.json()["data"]
    assert data["result"] == {"exit_code": 0, "stdout": out, "stderr": "", "error": ""}
    assert (
        reply.content
        == json.dumps(
            {"status": "success", "data": {"result": data["result"], "exec_ms": data["exec_ms"]}}
        ).encode()
    )
    event = fake.journal.filter(kind="response", operation="exec")[-1]
    assert event.body == f"<json, {len(reply.content)} bytes>"
