"""Envelopes for everything that goes wrong: unknown routes, wrong methods, bad bodies, bugs."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest

from fake_server.models import Account

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    import httpx

    from fake_server import FakeCreateOS

pytestmark = pytest.mark.asyncio


async def test_unknown_top_level_route_names_nearest_routes(client: httpx.AsyncClient) -> None:
    response = await client.get("/v1/volumes")
    assert response.json() == {
        "status": "error",
        "code": 501,
        "message": "this route is not implemented by the CreateOS fake; nearest known routes: "
        "/v1/metrics, /v1/hosts, /v1/templates",
        "data": {"code": "not_implemented_by_fake"},
    }


async def test_wrong_method_on_a_known_path_is_405(client: httpx.AsyncClient) -> None:
    response = await client.put("/v1/sandboxes/sb-1")
    assert response.status_code == 405
    assert response.headers["Allow"] == "DELETE, GET, PATCH"
    assert response.json() == {
        "status": "fail",
        "data": {
            "code": "method_not_allowed",
            "message": "method not allowed; allowed: DELETE, GET, PATCH",
        },
    }


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"{not json", "is not valid JSON"),
        (b"[1, 2]", "must be a JSON object"),
        (b"", "must be a JSON object"),
        (b'"shape"', "must be a JSON object"),
        (b'{"shape": "\\ud800"}', "must be valid UTF-8 JSON"),
        (b"\xff\xfe", "is not valid JSON"),
    ],
)
async def test_malformed_bodies_are_400(
    client: httpx.AsyncClient, content: bytes, message: str
) -> None:
    response = await client.post(
        "/v1/sandboxes", content=content, headers={"Content-Type": "application/json"}
    )
    assert (response.status_code, response.json()) == (
        400,
        {"status": "fail", "data": {"body": message}},
    )


async def test_unknown_sandbox_is_404_not_501(client: httpx.AsyncClient) -> None:
    response = await client.post("/v1/sandboxes/sb-unknown/exec", json={"cmd": "true"})
    assert (response.status_code, response.json()) == (
        404,
        {"status": "fail", "data": {"code": "sandbox_not_found", "message": "sandbox not found"}},
    )


async def test_a_bug_in_the_fake_is_a_500_envelope_and_recorded(
    fake: FakeCreateOS, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: Account) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(Account, "whoami", broken)
    response = await client.get("/v1/whoami")
    assert (response.status_code, response.json()) == (
        500,
        {
            "status": "error",
            "code": 500,
            "message": "internal error in the fake",
            "data": {"code": "internal_error"},
        },
    )
    [(operation, trace)] = fake.errors
    assert operation == "whoami"
    assert "RuntimeError: boom" in trace
    fake.errors.clear()


async def test_error_messages_never_echo_keys_or_paths(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: Callable[..., Awaitable[str]]
) -> None:
    sandbox_id = await make_sandbox()
    secret_path = "/secret-dir/token-abc123"
    missing = await client.get(f"/v1/sandboxes/{sandbox_id}/files", params={"path": secret_path})
    wrong_key = await client.get("/v1/whoami", headers={"X-Api-Key": "cos_live_leaked"})
    for response in (missing, wrong_key):
        assert "token-abc123" not in response.text
        assert "cos_live_leaked" not in response.text
    assert "token-abc123" not in fake.journal.format()


async def test_oversized_upload_is_413_before_the_body_is_read(
    fake: FakeCreateOS, make_sandbox: Callable[..., Awaitable[str]]
) -> None:
    sandbox_id = await make_sandbox()
    reader, writer = await asyncio.open_connection(fake.host, fake.port)
    head = (
        f"PUT /v1/sandboxes/{sandbox_id}/files?path=/big HTTP/1.1\r\n"
        f"Host: fake\r\nX-Api-Key: {fake.api_key}\r\n"
        f"Content-Length: {10_000_001}\r\n\r\n"  # one byte over the fake's file limit
    )
    writer.write(head.encode())
    await writer.drain()
    status_line = await reader.readline()
    rest = await reader.read(4096)
    writer.close()
    await writer.wait_closed()
    assert status_line.startswith(b"HTTP/1.1 413")
    assert rest.endswith(
        b'{"status": "fail", "data": '
        b'{"body": "file exceeds the fake sandbox\'s 10000000-byte file limit"}}'
    )


async def test_unknown_routes_pass_through_fault_middlewares(
    fake: FakeCreateOS, client: httpx.AsyncClient
) -> None:
    from fake_server import Fault
    from fake_server.faults import HttpError

    fake.faults.add(Fault("not_implemented", HttpError(503)))
    first = await client.get("/v1/volumes")
    second = await client.get("/v1/volumes")
    assert (first.status_code, second.status_code) == (503, 501)


async def test_a_bug_while_streaming_ends_the_stream_with_an_error_frame(
    fake: FakeCreateOS,
    client: httpx.AsyncClient,
    make_sandbox: Callable[..., Awaitable[str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from fake_server.runtime.bashkit import Shell

    async def broken(self: Shell, *args: object, **kwargs: object) -> int:
        raise RuntimeError("interpreter bug")

    sandbox_id = await make_sandbox()
    monkeypatch.setattr(Shell, "run", broken)
    streamed = await client.post(f"/v1/sandboxes/{sandbox_id}/exec?stream=true", json={"cmd": "ls"})
    assert streamed.text == '{"error":"internal error in the fake"}\n'
    process = await client.post(f"/v1/sandboxes/{sandbox_id}/processes", json={"cmd": "ls"})
    base = f"/v1/sandboxes/{sandbox_id}/processes/{process.json()['data']['process_id']}"
    waited = (await client.get(base + "/wait")).json()["data"]
    assert (waited["state"], waited["tree_exited"], waited["exit_code"]) == ("failed", True, None)
    assert [operation for operation, _ in fake.errors] == ["exec_stream", "create_process"]
    assert all("RuntimeError: interpreter bug" in trace for _, trace in fake.errors)
    fake.errors.clear()


async def test_every_reply_names_its_request_and_the_journal_records_it(
    fake: FakeCreateOS, client: httpx.AsyncClient
) -> None:
    answers = [
        await client.get("/v1/whoami"),
        await client.get("/v1/volumes"),  # 501
        await client.get("/v1/sandboxes/sb-unknown"),  # 404
        await client.get("/healthz", headers={"X-Api-Key": ""}),
    ]
    ids = [answer.headers["X-Request-Id"] for answer in answers]
    assert len(set(ids)) == 4
    journaled = [e.request_id for e in fake.journal.events if e.kind == "response"]
    assert journaled[-4:] == ids


async def test_the_sdk_reads_an_error_s_message_code_and_request_id(fake: FakeCreateOS) -> None:
    """A string ``code`` made the Python SDK drop the message ("request failed")."""
    from createos import Client, RetryOptions
    from createos.errors import APIError

    from fake_server import Fault
    from fake_server.faults import HttpError

    fake.faults.add(
        Fault("list_templates", HttpError(500, message="templates are down"), times=None)
    )

    def call() -> APIError:
        # No retries: the SDK's backoff sleeps in real time.
        with Client(fake.api_key, base_url=fake.url, retry=RetryOptions(max_retries=0)) as sdk:
            with pytest.raises(APIError) as raised:
                sdk.templates.list()
            return raised.value

    error = await asyncio.to_thread(call)
    assert (error.status_code, error.code) == (500, 500)
    assert str(error).startswith("GET /v1/templates: HTTP 500: templates are down")
    assert error.request_id == fake.journal.responses("list_templates")[-1].request_id


@pytest.mark.parametrize(
    ("path", "body", "setting", "message"),
    [
        ("/v1/networks", {"name": "n{}"}, "max_networks", "network quota exceeded (1 per account)"),
        (
            "/v1/disks",
            {
                "name": "d{}",
                "config": {"bucket": "b{}", "endpoint": "https://s3.example.test", "region": "eu"},
                "credentials": {"access_key": "AKIA1", "secret_key": "s" * 20},
            },
            "max_disks",
            "disk quota exceeded (1 per account)",
        ),
        (
            "/v1/templates",
            {"name": "t{}", "dockerfile": "FROM devbox:1\n"},
            "max_templates",
            "template quota exceeded (1 per account)",
        ),
    ],
)
async def test_a_quota_is_403_quota_exceeded_as_the_docs_promise(
    fake: FakeCreateOS,
    client: httpx.AsyncClient,
    path: str,
    body: dict[str, object],
    setting: str,
    message: str,
) -> None:
    """docs/fidelity-resources.md and the networks guide promise 403 ``quota_exceeded``; the
    code was ``forbidden`` while a second error table's code went unread."""
    setattr(fake.world.ctx.resources, setting, 1)

    def numbered(value: object, number: int) -> object:
        if isinstance(value, dict):
            return {key: numbered(item, number) for key, item in value.items()}
        return value.format(number) if isinstance(value, str) else value

    first = await client.post(path, json=numbered(body, 1))
    assert first.status_code in (200, 201), first.text
    second = await client.post(path, json=numbered(body, 2))
    assert second.status_code == 403
    assert second.json() == {
        "status": "fail",
        "data": {"code": "quota_exceeded", "message": message},
    }
