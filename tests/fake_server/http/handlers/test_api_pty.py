"""PTY processes created the way the official SDK's example does: only ``pty``, no ``cmd``."""

from __future__ import annotations

import base64
import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    import httpx

pytestmark = pytest.mark.asyncio

MakeSandbox = Callable[..., Awaitable[str]]


def encode(text: str) -> dict[str, str]:
    return {"data_base64": base64.b64encode(text.encode()).decode()}


async def test_pty_without_cmd_runs_an_interactive_bash(
    client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    sandbox = await make_sandbox()
    created = await client.post(
        f"/v1/sandboxes/{sandbox}/processes", json={"pty": {"rows": 24, "cols": 80}}
    )
    assert created.status_code == 201, created.text
    resource = created.json()["data"]
    assert (resource["kind"], resource["cmd"], resource["args"]) == ("pty", "/bin/bash", [])
    base = f"/v1/sandboxes/{sandbox}/processes/{resource['process_id']}"
    frames: list[dict[str, Any]] = []
    async with client.stream("GET", base + "/connect") as stream:
        assert (await client.post(base + "/input", json=encode("echo hi\n"))).status_code == 200
        lines = stream.aiter_lines()
        async for line in lines:
            frames.append(json.loads(line))
            if frames[-1].get("type") == "data":
                break
        assert frames[-1]["stream"] == "pty"
        assert base64.b64decode(frames[-1]["data_base64"]) == b"hi\n"
        assert (await client.post(base + "/input", json=encode("exit 3\n"))).status_code == 200
        async for line in lines:
            frames.append(json.loads(line))
    assert frames[-1] == {"type": "exit", "exit_code": 3}


async def test_pty_with_an_empty_cmd_also_defaults_to_bash(
    client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    sandbox = await make_sandbox()
    created = await client.post(
        f"/v1/sandboxes/{sandbox}/processes", json={"cmd": "", "pty": {"rows": 5, "cols": 20}}
    )
    assert created.json()["data"]["cmd"] == "/bin/bash"


async def test_cmd_stays_required_without_pty(
    client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    sandbox = await make_sandbox()
    response = await client.post(f"/v1/sandboxes/{sandbox}/processes", json={"args": ["x"]})
    assert (response.status_code, response.json()) == (
        400,
        {"status": "fail", "data": {"cmd": "is required"}},
    )
