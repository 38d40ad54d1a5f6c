"""``when=`` on the request body: a JSON subset or a predicate reading ``call.json()``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from fake_server.faults import Call, Fault, Faults, FaultSpecError, HttpError, fault_from_json

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    import httpx

    from fake_server import FakeCreateOS


def _create(body: bytes | None) -> Call:
    return Call(operation="create_sandbox", method="POST", path="/v1/sandboxes", body=body)


def test_a_json_subset_matches_objects_by_field_and_the_rest_exactly() -> None:
    fault = Fault("create_sandbox", HttpError(503), when={"env": {"A": "1"}, "ports": [80]})
    assert fault.matches(_create(b'{"env": {"A": "1", "B": "2"}, "ports": [80], "x": 1}'))
    assert not fault.matches(_create(b'{"env": {"A": "2"}, "ports": [80]}'))
    assert not fault.matches(_create(b'{"env": {"A": "1"}, "ports": [80, 443]}'))
    assert not fault.matches(_create(b'{"env": {"A": "1"}}'))
    flag = Fault("create_sandbox", HttpError(503), when={"ingress_enabled": True})
    assert not flag.matches(_create(b'{"ingress_enabled": 1}'))
    for body in (None, b"", b"[1]", b"not json", b'{"env": '):
        assert not fault.matches(_create(body))
    assert repr(fault) == (
        "Fault(create_sandbox HttpError(status=503, retry_after=None, code=None, message=None) "
        'times=1 when=body contains {"env": {"A": "1"}, "ports": [80]})'
    )


def test_a_predicate_reads_the_body_and_its_errors_name_the_call_not_the_body() -> None:
    fault = Fault("*", HttpError(503), when=lambda c: c.json().get("shape") == "s-2vcpu-4gb")
    assert fault.matches(_create(b'{"shape": "s-2vcpu-4gb"}'))
    assert not fault.matches(_create(b'{"shape": "s-1vcpu-1gb"}'))
    assert _create(b"\xff").text == "\ufffd"
    with pytest.raises(ValueError) as caught:
        _create(b"secret-text").json()
    assert str(caught.value) == "the request body of create_sandbox POST /v1/sandboxes is not JSON"
    with pytest.raises(ValueError) as caught:
        _create(None).json()
    assert str(caught.value) == "create_sandbox POST /v1/sandboxes has no request body"
    assert "secret-text" not in repr(_create(b"secret-text"))


@pytest.mark.parametrize(
    ("when", "error", "message"),
    [
        (
            "rootfs",
            TypeError,
            "when must be a callable taking the Call (call.json() is the request body) or a "
            "dict the request's JSON body must contain; got str",
        ),
        (
            [("rootfs", "python")],
            TypeError,
            "when must be a callable taking the Call (call.json() is the request body) or a "
            "dict the request's JSON body must contain; got list",
        ),
        ({}, ValueError, "when={} matches every call; leave when out instead"),
        ({1: "a"}, ValueError, "when: keys must be strings (JSON object keys); got 1"),
        (
            {"env": {"A": {1, 2}}},
            ValueError,
            "when['env']['A'] is not a JSON value (dict, list, str, int, float, bool or None); "
            "got set",
        ),
        (
            {"ports": (80,)},
            ValueError,
            "when['ports'] is not a JSON value (dict, list, str, int, float, bool or None); "
            "got tuple",
        ),
    ],
)
def test_bad_when_values_are_refused_with_a_clear_message(
    when: Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as caught:
        Fault("create_sandbox", HttpError(503), when=when)
    assert str(caught.value) == message


def test_the_control_api_matches_bodies_too_alone_or_with_the_query() -> None:
    spec = {"operation": "exec", "action": {"type": "lost_reply"}, "body": {"cmd": "rm"}}
    fault = fault_from_json(spec)
    exec_call = Call(operation="exec", method="POST", body=b'{"cmd": "rm", "args": ["-rf"]}')
    assert fault.matches(exec_call)
    assert not fault.matches(Call(operation="exec", method="POST", body=b'{"cmd": "ls"}'))
    both = fault_from_json({**spec, "query": {"stream": "true"}})
    assert not both.matches(exec_call)
    assert both.matches(Call(**{**exec_call.__dict__, "query": {"stream": "true"}}))
    assert repr(both.when) == (
        "QueryEquals(params=(('stream', 'true'),)) and body contains {\"cmd\": \"rm\"}"
    )
    for bad in ({}, [], "rm"):
        with pytest.raises(FaultSpecError) as caught:
            fault_from_json({**spec, "body": bad})
        assert (caught.value.field, caught.value.message) == (
            "body",
            "must be a non-empty object the request's JSON body contains",
        )


def test_the_registry_counts_only_calls_whose_body_matches() -> None:
    faults = Faults()
    fault = faults.add(Fault("create_sandbox", HttpError(503), when={"rootfs": "python"}))
    assert faults.plan(_create(b'{"rootfs": "ubuntu"}')).empty
    assert faults.match_count(fault) == 0
    assert not faults.plan(_create(b'{"rootfs": "python"}')).empty
    assert fault.fired == 1


@pytest.mark.asyncio
async def test_over_http_only_the_matching_create_fails_and_the_body_reaches_the_handler(
    fake: FakeCreateOS,
    client: httpx.AsyncClient,
    make_sandbox: Callable[..., Awaitable[str]],
) -> None:
    fault = fake.faults.add(Fault("create_sandbox", HttpError(503), when={"rootfs": "python"}))
    plain = await client.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"})
    assert plain.status_code == 200
    failed = await client.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb", "rootfs": "python"})
    assert failed.status_code == 503
    assert fault.fired == 1
    assert fault.calls[0].call.json()["rootfs"] == "python"
    sandbox_id = await make_sandbox()
    upload = Fault("upload_file", HttpError(507), when=lambda c: c.body.startswith(b"#!"))
    fake.faults.add(upload)
    files = f"/v1/sandboxes/{sandbox_id}/files"
    kept = await client.put(files, params={"path": "/a.txt"}, content=b"plain text")
    assert kept.status_code == 200
    assert kept.json()["data"]["bytes"] == 10
    refused = await client.put(files, params={"path": "/run.sh"}, content=b"#!/bin/sh\n")
    assert refused.status_code == 507
    assert fake.calls.filter("upload_file", status=507).last.request.text == "#!/bin/sh\n"


@pytest.mark.asyncio
async def test_a_predicate_that_raises_is_the_fakes_internal_error_naming_the_call(
    fake: FakeCreateOS, client: httpx.AsyncClient
) -> None:
    """The request gets the 500 envelope, ``fake.errors`` the predicate's traceback (which the
    plugin reports at teardown); the body's text is in neither."""
    fake.faults.add(Fault("create_sandbox", HttpError(503), when=lambda c: c.json()["x"]))
    reply = await client.post("/v1/sandboxes", content=b"secret-not-json")
    assert reply.status_code == 500
    assert reply.json()["message"] == "internal error in the fake"
    [(operation, trace)] = fake.errors
    assert operation == "create_sandbox"
    assert trace.rstrip().endswith(
        "ValueError: the request body of create_sandbox POST /v1/sandboxes is not JSON"
    )
    assert "secret-not-json" not in trace
    assert fake.sandboxes() == []
    fake.errors.clear()
