"""The ``/_fake/faults`` control API: arm, list with counts, clear, apply now, validate."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    import httpx


pytestmark = pytest.mark.asyncio


async def sandbox(api: httpx.AsyncClient) -> str:
    created = await api.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"})
    sandbox_id: str = created.json()["data"]["id"]
    await api.get(f"/v1/sandboxes/{sandbox_id}")
    return sandbox_id


async def test_arm_fire_and_list_with_counts(api: httpx.AsyncClient) -> None:
    spec = {"operation": "whoami", "action": {"type": "http_error", "status": 503}, "times": 1}
    armed = await api.post("/_fake/faults", json=spec)
    assert armed.status_code == 201
    assert armed.json() == {
        "status": "success",
        "data": {
            "id": 1,
            "operation": "whoami",
            "action": {
                "type": "http_error",
                "status": 503,
                "retry_after": None,
                "code": None,
                "message": None,
            },
            "times": 1,
            "after": 0,
            "probability": None,
            "sandbox_id": None,
            "process_id": None,
            "account": None,
            "name": None,
            "expected": True,
            "fired": 0,
            "seen": 0,
        },
    }
    assert (await api.get("/_fake/faults")).json()["data"]["unfired"] == [1]
    assert (await api.get("/v1/whoami")).status_code == 503
    listing = (await api.get("/_fake/faults")).json()["data"]
    assert [(f["id"], f["fired"], f["seen"]) for f in listing["faults"]] == [(1, 1, 1)]
    assert listing["unfired"] == []
    [firing] = listing["fired"]
    assert {k: firing[k] for k in ("fault_id", "operation", "method", "path", "at")} == {
        "fault_id": 1,
        "operation": "whoami",
        "method": "GET",
        "path": "/v1/whoami",
        "at": 0.0,
    }


async def test_a_list_of_specs_arms_them_all(api: httpx.AsyncClient) -> None:
    specs = [
        {"operation": "whoami", "action": {"type": "latency", "seconds": 1}},
        {"operation": "*", "action": {"type": "http_error", "status": 500}, "probability": 0.5},
    ]
    armed = await api.post("/_fake/faults", json=specs)
    assert armed.status_code == 201
    assert [f["id"] for f in armed.json()["data"]["faults"]] == [1, 2]
    assert [f["times"] for f in armed.json()["data"]["faults"]] == [1, None]


async def test_delete_one_and_clear_all(api: httpx.AsyncClient) -> None:
    spec = {"operation": "whoami", "action": {"type": "http_error", "status": 503}}
    await api.post("/_fake/faults", json=[spec, spec])
    assert (await api.delete("/_fake/faults/1")).json()["data"] == {"removed": 1}
    missing = await api.delete("/_fake/faults/1")
    assert missing.status_code == 404
    assert missing.json() == {
        "status": "fail",
        "data": {"code": "fault_not_found", "message": "no armed fault has this id"},
    }
    assert (await api.delete("/_fake/faults")).json()["data"] == {"cleared": 1}
    assert (await api.get("/v1/whoami")).status_code == 200


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        (b"{not json", "body", "must be valid JSON"),
        (b'"text"', "fault", "must be a JSON object"),
        (b'{"operation": "whoami"}', "action", 'required object with a "type"'),
        (
            b'{"operation": "whoami", "action": {"type": "http_error", "status": 200}}',
            "action.status",
            "status must be an HTTP error status between 400 and 599",
        ),
        (
            b'{"operation": "whoami", "action": {"type": "lost_reply"}, "times": -1}',
            "times",
            "times must be an integer >= 1 or None (every call)",
        ),
    ],
)
async def test_bad_specs_answer_400_naming_the_field(
    api: httpx.AsyncClient, body: bytes, field: str, message: str
) -> None:
    response = await api.post(
        "/_fake/faults", content=body, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 400
    assert response.json() == {"status": "fail", "data": {field: message}}
    assert (await api.get("/_fake/faults")).json()["data"]["faults"] == []


async def test_a_huge_body_is_refused(api: httpx.AsyncClient) -> None:
    response = await api.post("/_fake/faults", content=b"[" + b" " * 300_000 + b"]")
    assert response.status_code == 400
    assert response.json() == {"status": "fail", "data": {"body": "must be at most 262144 bytes"}}


async def test_apply_an_out_of_band_change_now(api: httpx.AsyncClient) -> None:
    sandbox_id = await sandbox(api)
    body = {"action": {"type": "set_status", "status": "failed"}, "sandbox_id": sandbox_id}
    applied = await api.post("/_fake/faults/now", json=body)
    assert applied.status_code == 200
    assert applied.json()["data"]["applied"]["status"] == "failed"
    assert (await api.get(f"/v1/sandboxes/{sandbox_id}")).json()["data"]["status"] == "failed"
    tamper = {
        "action": {"type": "tamper_file", "path": "/tmp/m", "data": "evil"},
        "sandbox_id": sandbox_id,
    }
    assert (await api.post("/_fake/faults/now", json=tamper)).status_code == 200


@pytest.mark.parametrize(
    ("body", "status", "expected"),
    [
        (
            {"action": {"type": "http_error", "status": 500}, "sandbox_id": "sb-x"},
            400,
            {"status": "fail", "data": {"action.type": "must be an out-of-band action"}},
        ),
        (
            {"action": {"type": "forget"}},
            400,
            {"status": "fail", "data": {"sandbox_id": "required string"}},
        ),
        (
            {"action": {"type": "crash_process"}, "sandbox_id": "sb-x"},
            400,
            {"status": "fail", "data": {"process_id": "required string for this action"}},
        ),
        (
            {"action": {"type": "forget"}, "sandbox_id": "sb-nope"},
            404,
            {
                "status": "fail",
                "data": {"code": "not_found", "message": "no such sandbox"},
            },
        ),
    ],
)
async def test_apply_now_validates(
    api: httpx.AsyncClient, body: dict[str, object], status: int, expected: dict[str, object]
) -> None:
    response = await api.post("/_fake/faults/now", json=body)
    assert response.status_code == status
    assert response.json() == expected
