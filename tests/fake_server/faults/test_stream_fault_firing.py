"""A stream fault fires only when it acts on the body: one whose trigger lies past the end of
the stream cuts nothing, counts nothing, stays armed and is reported by ``unfired()``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx
import pytest

from fake_server import Fault, TransitionPolicy, tls_context
from fake_server.faults import CutStream, TruncatedDownload

if TYPE_CHECKING:
    from tests._fakes import MakeFake

pytestmark = pytest.mark.asyncio


async def _exec_stream(client: httpx.AsyncClient, sandbox_id: str, script: str) -> list[str]:
    lines = []
    try:
        async with client.stream(
            "POST",
            f"/v1/sandboxes/{sandbox_id}/exec?stream=true",
            json={"cmd": "bash", "args": ["-c", script]},
        ) as response:
            async for line in response.aiter_lines():
                lines.append(line)
    except httpx.TransportError:
        lines.append("<cut>")
    return lines


async def test_a_cut_past_the_end_of_the_stream_does_not_fire(make_fake: MakeFake) -> None:
    fake = await make_fake(transitions=TransitionPolicy.immediate())
    fault = fake.faults.add(Fault("exec_stream", CutStream(after_frames=1)))
    async with httpx.AsyncClient(
        verify=tls_context(), base_url=fake.url, headers={"X-Api-Key": fake.api_key}, timeout=10
    ) as client:
        created = await client.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"})
        sandbox_id = created.json()["data"]["id"]
        short = await _exec_stream(client, sandbox_id, "true")  # one frame: the exit
        assert len(short) == 1
        assert short == ['{"exit_code":0}']
        assert fake.faults.fire_count(fault) == 0
        assert fake.faults.fired == []
        assert fake.faults.unfired() == [fault]
        assert "fault" not in [event.kind for event in fake.journal.events]

        long = await _exec_stream(client, sandbox_id, "echo hi")  # output, then exit
        assert long[-1] == "<cut>"
        assert len(long) == 2
    assert fake.faults.fire_count(fault) == 1
    assert [firing.operation for firing in fake.faults.fired] == ["exec_stream"]
    assert fake.faults.unfired() == []
    assert [event.kind for event in fake.journal.events].count("fault") == 1


async def test_byte_and_frame_faults_that_never_act_stay_unfired(make_fake: MakeFake) -> None:
    fake = await make_fake(transitions=TransitionPolicy.immediate())
    truncate = fake.faults.add(Fault("download_file", TruncatedDownload(after_bytes=100)))
    cut = fake.faults.add(Fault("exec_stream", CutStream(after_bytes=10_000)))
    async with httpx.AsyncClient(
        verify=tls_context(), base_url=fake.url, headers={"X-Api-Key": fake.api_key}, timeout=10
    ) as client:
        created = await client.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"})
        sandbox_id = created.json()["data"]["id"]
        download = await client.get(
            f"/v1/sandboxes/{sandbox_id}/files", params={"path": "/etc/hostname"}
        )
        assert download.content == b"sandbox\n"
        assert (await _exec_stream(client, sandbox_id, "echo hi"))[-1] != "<cut>"
        missing = await client.post(
            "/v1/sandboxes/sb-missing/exec?stream=true", json={"cmd": "true"}
        )
        assert missing.status_code == 404
    assert fake.faults.unfired() == [truncate, cut]
    assert fake.faults.fired == []
