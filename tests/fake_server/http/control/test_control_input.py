"""Bad input to the control API gets a 4xx naming the field, never a 500; an armed fault that
cannot act (a tampered path that is a directory) never turns the API into 500s."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import httpx
import pytest
import pytest_asyncio

from fake_server import FakeCreateOS, TransitionPolicy, tls_context

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from tests._fakes import MakeFake

pytestmark = pytest.mark.asyncio

LIVE, GONE, PROCESS = "<live>", "<gone>", "<process>"


@pytest_asyncio.fixture(name="world")
async def _world(
    make_fake: MakeFake,
) -> AsyncIterator[tuple[FakeCreateOS, httpx.AsyncClient, dict[str, str]]]:
    fake = await make_fake(transitions=TransitionPolicy.immediate())
    keys = {"X-Api-Key": fake.api_key, "X-Fake-Control-Key": getattr(fake, "control_key", "")}
    async with httpx.AsyncClient(
        verify=tls_context(), base_url=fake.url, headers=keys, timeout=10
    ) as client:
        live = (await client.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"})).json()
        sandbox_id = live["data"]["id"]
        process = await client.post(
            f"/v1/sandboxes/{sandbox_id}/processes", json={"cmd": "echo", "args": ["hi"]}
        )
        gone = (await client.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"})).json()
        await client.delete(f"/v1/sandboxes/{gone['data']['id']}")
        ids = {
            LIVE: sandbox_id,
            GONE: gone["data"]["id"],
            PROCESS: process.json()["data"]["process_id"],
        }
        yield fake, client, ids


def _fill(value: object, ids: dict[str, str]) -> object:
    if isinstance(value, dict):
        return {key: _fill(item, ids) for key, item in value.items()}
    return ids.get(value, value) if isinstance(value, str) else value


def _raw(body: object) -> bytes:
    return json.dumps(body).encode()  # lone surrogates travel escaped, as \ud800


NOT_FOUND = {"code": "not_found", "message": "no such sandbox"}
SURROGATES = {"body": "must be valid UTF-8 JSON"}


def _now(action: dict[str, object], **ids: str) -> dict[str, object]:
    return {"action": action, "sandbox_id": LIVE, **ids}


NOW_CASES = {
    "tamper a directory": (
        _now({"type": "tamper_file", "path": "/tmp"}),
        400,
        {"action.path": "is a directory in the sandbox"},
    ),
    "tamper /": (
        _now({"type": "tamper_file", "path": "/"}),
        400,
        {"action.path": "is a directory in the sandbox"},
    ),
    "tamper a NUL path": (
        _now({"type": "tamper_file", "path": "/a\x00b"}),
        400,
        {"action.path": "cannot be written in the sandbox"},
    ),
    "tamper under a file": (
        _now({"type": "tamper_file", "path": "/etc/hostname/x"}),
        400,
        {"action.path": "has a parent that is not a directory"},
    ),
    "tamper a destroyed sandbox": (
        {"action": {"type": "tamper_file", "path": "/x"}, "sandbox_id": GONE},
        404,
        NOT_FOUND,
    ),
    "status of a destroyed sandbox": (
        {"action": {"type": "set_status", "status": "running"}, "sandbox_id": GONE},
        404,
        NOT_FOUND,
    ),
    "crash in a destroyed sandbox": (
        {"action": {"type": "crash_process"}, "sandbox_id": GONE, "process_id": PROCESS},
        404,
        NOT_FOUND,
    ),
    "non-string path": (
        _now({"type": "tamper_file", "path": 5}),
        400,
        {"action.path": "path must be a string"},
    ),
    "non-string signal": (
        _now({"type": "crash_process", "signal": 9}, process_id=PROCESS),
        400,
        {"action.signal": "signal must be a string"},
    ),
    "non-string sandbox id in the action": (
        _now({"type": "forget", "sandbox_id": 5}),
        400,
        {"action.sandbox_id": "sandbox_id must be a non-empty string of at most 200 characters"},
    ),
    "empty process id in the action": (
        _now({"type": "crash_process", "process_id": ""}, process_id=PROCESS),
        400,
        {"action.process_id": "process_id must be a non-empty string of at most 200 characters"},
    ),
    "lone surrogate in a path": (
        _now({"type": "tamper_file", "path": "/a\ud800"}),
        400,
        SURROGATES,
    ),
    "lone surrogate in data": (
        _now({"type": "tamper_file", "path": "/x", "data": "\ud800"}),
        400,
        SURROGATES,
    ),
    "lone surrogate in an id": (
        _now({"type": "forget"}) | {"sandbox_id": "\ud800"},
        400,
        SURROGATES,
    ),
}


@pytest.mark.parametrize("case", sorted(NOW_CASES))
async def test_bad_out_of_band_actions_get_a_4xx_naming_the_field(
    world: tuple[FakeCreateOS, httpx.AsyncClient, dict[str, str]], case: str
) -> None:
    fake, client, ids = world
    body, status, data = NOW_CASES[case]
    response = await client.post("/_fake/faults/now", content=_raw(_fill(body, ids)))
    assert (response.status_code, response.json()) == (status, {"status": "fail", "data": data})
    assert fake.errors == []


def _spec(action: dict[str, object], **extra: object) -> dict[str, object]:
    return {"operation": "exec_stream", "action": action, **extra}


SPEC_CASES = {
    "non-string line": (
        _spec({"type": "malformed_frame", "line": 5}),
        {"action.line": "line must be a string"},
    ),
    "non-string code": (
        _spec({"type": "http_error", "status": 503, "code": 5}),
        {"action.code": "code must be a string"},
    ),
    "non-string message": (
        _spec({"type": "http_error", "status": 503, "message": 5}),
        {"action.message": "message must be a string"},
    ),
    "endless latency": (
        _spec({"type": "latency", "seconds": 1e308}),
        {"action.seconds": "seconds must be a number of seconds between 0 and 1000000000"},
    ),
    "lone surrogate in a name": (
        _spec({"type": "latency", "seconds": 0}, name="\ud800"),
        SURROGATES,
    ),
    "lone surrogate in a line": (_spec({"type": "malformed_frame", "line": "\ud800"}), SURROGATES),
    "lone surrogate in a query": (
        _spec({"type": "latency", "seconds": 0}, query={"\ud800": "x"}),
        SURROGATES,
    ),
    "lone surrogate in a message": (
        _spec({"type": "http_error", "status": 503, "message": "\udfff"}),
        SURROGATES,
    ),
}


@pytest.mark.parametrize("case", sorted(SPEC_CASES))
async def test_bad_fault_specs_get_a_400_naming_the_field(
    world: tuple[FakeCreateOS, httpx.AsyncClient, dict[str, str]], case: str
) -> None:
    fake, client, _ids = world
    spec, data = SPEC_CASES[case]
    response = await client.post("/_fake/faults", content=_raw(spec))
    assert (response.status_code, response.json()) == (400, {"status": "fail", "data": data})
    assert fake.faults.faults == []
    assert fake.errors == []


async def test_an_armed_tamper_of_a_directory_leaves_every_exec_working(
    world: tuple[FakeCreateOS, httpx.AsyncClient, dict[str, str]],
) -> None:
    fake, client, ids = world
    spec = {"operation": "exec", "action": {"type": "tamper_file", "path": "/tmp"}, "times": None}
    assert (await client.post("/_fake/faults", content=_raw(spec))).status_code == 201
    for _ in range(3):
        answer = await client.post(f"/v1/sandboxes/{ids[LIVE]}/exec", json={"cmd": "true"})
        assert answer.status_code == 200
        assert answer.json()["data"]["result"]["exit_code"] == 0
    assert fake.errors == []
