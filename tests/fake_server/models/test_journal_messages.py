"""The journal keeps each exchange's query, headers and body: redacted, capped, summarised."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
from typing import TYPE_CHECKING

import httpx
import pytest

from fake_server.models.journal.recording import BODY_LIMIT, body_text, query_text, redacted

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from fake_server import FakeCreateOS
    from tests._fakes import MakeFake


@pytest.mark.asyncio
async def test_a_call_keeps_what_was_sent_and_answered(
    fake: FakeCreateOS, client: httpx.AsyncClient
) -> None:
    created = await client.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb", "rootfs": "python"})
    call = fake.calls.assert_called_once("create_sandbox")
    assert call.request.json() == {"shape": "s-1vcpu-1gb", "rootfs": "python"}
    assert call.request.header("Content-Type") == "application/json"
    assert call.request.header("host") is None  # transport noise is not kept
    assert call.response.json() == created.json()
    assert call.response.header("content-type") == "application/json; charset=utf-8"
    assert fake.calls.filter(json={"rootfs": "python"}).call_count == 1
    assert fake.calls.filter(json={"rootfs": "ubuntu"}).call_count == 0


@pytest.mark.asyncio
async def test_no_credential_reaches_the_journal_its_dump_or_the_log(
    fake: FakeCreateOS,
    client: httpx.AsyncClient,
    make_sandbox: Callable[..., Awaitable[str]],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Headers by name, JSON fields by name, the fake's keys wherever they appear."""
    caplog.set_level(logging.DEBUG)
    sandbox_id = await make_sandbox(env={"GITHUB_TOKEN": "ghp_user_secret", "KEY": fake.api_key})
    token = (await client.post(f"/v1/sandboxes/{sandbox_id}/access-token")).json()["data"]
    await client.get(
        "/v1/whoami",
        headers={"Authorization": "Bearer cos_bearer_secret", "Cookie": "session=cookie_secret"},
        params={"access_token": "query_secret", "note": fake.api_key},
    )
    await client.get("/v1/whoami", headers={"X-Auth-Token": fake.api_key})
    await client.get(f"/v1/sandboxes/{sandbox_id}", headers={"X-Access-Token": token["token"]})
    await client.post(
        "/v1/sandboxes/" + sandbox_id + "/exec", json={"cmd": "echo", "args": [fake.api_key]}
    )
    control = {"X-Fake-Control-Key": fake.control_key}
    dumped = await client.get("/_fake/journal", headers=control)
    secrets = [
        fake.api_key,
        fake.control_key,
        token["token"],
        "ghp_user_secret",
        "cos_bearer_secret",
        "cookie_secret",
        "query_secret",
    ]
    # The fake's and aiohttp's log records (httpx logs the URL it was given, on the client).
    logged = "\n".join(r.getMessage() for r in caplog.records if not r.name.startswith("http"))
    shown = [repr(fake.journal.events), fake.journal.format(), dumped.text, logged]
    shown += [repr(list(fake.calls)), repr(fake.calls.filter("exec").last.request.json())]
    for text in shown:
        for secret in secrets:
            assert secret not in text
    whoami = fake.calls.filter("whoami")[0]
    assert whoami.request.header("authorization") == "<redacted>"
    assert whoami.request.header("cookie") == "<redacted>"
    assert whoami.query == "access_token=<redacted>&note=<redacted>"
    assert fake.calls.filter("create_access_token").last.response.json()["data"]["token"] == (
        "<redacted>"
    )
    assert fake.calls.filter("exec").last.request.json()["args"] == ["<redacted>"]


@pytest.mark.asyncio
async def test_bodies_are_capped_and_binary_and_streams_summarised(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: Callable[..., Awaitable[str]]
) -> None:
    sandbox_id = await make_sandbox()
    stdin = "x" * 10_000
    whole = json.dumps({"cmd": "wc", "stdin": stdin})
    await client.post(f"/v1/sandboxes/{sandbox_id}/exec", content=whole)
    data = bytes(range(256)) * 40
    await client.put(f"/v1/sandboxes/{sandbox_id}/files", params={"path": "/a.bin"}, content=data)
    await client.get(f"/v1/sandboxes/{sandbox_id}/files", params={"path": "/a.bin"})
    streamed = await client.post(
        f"/v1/sandboxes/{sandbox_id}/exec",
        params={"stream": "true"},
        json={"cmd": "echo", "args": ["hi"]},
    )
    capped = fake.calls.filter("exec").assert_called_once()
    assert (
        capped.request.text == f"{whole[:BODY_LIMIT]}… ({len(whole) - BODY_LIMIT} more characters)"
    )
    with pytest.raises(ValueError) as caught:
        capped.request.json()
    assert str(caught.value) == (
        f"the request body of exec POST /v1/sandboxes/{sandbox_id}/exec was cut to 4096 "
        "characters in the journal; json() needs it whole (read .text)"
    )
    digest = hashlib.sha256(data).hexdigest()[:12]
    upload = fake.calls.filter("upload_file").last
    assert upload.request.body == f"<binary, 10240 bytes, sha256 {digest}>"
    assert upload.query == "path=/a.bin"
    assert fake.calls.filter("download_file").last.response.body == "<binary, 10240 bytes>"
    lines = streamed.text.count("\n")
    stream = fake.calls.filter("exec_stream").last
    assert stream.response.body == f"<ndjson stream, {lines} lines, {len(streamed.content)} bytes>"
    with pytest.raises(ValueError) as caught:
        stream.response.json()
    assert str(caught.value) == (
        f"the response body of exec_stream POST /v1/sandboxes/{sandbox_id}/exec is not text: "
        f"<ndjson stream, {lines} lines, {len(streamed.content)} bytes>"
    )


@pytest.mark.asyncio
async def test_control_calls_are_capped_and_messages_can_be_turned_off(
    fake: FakeCreateOS, client: httpx.AsyncClient
) -> None:
    control = {"X-Fake-Control-Key": fake.control_key}
    for _ in range(6):
        await client.get("/v1/whoami")
    dump = await client.get("/_fake/journal", headers=control)
    assert len(dump.content) > BODY_LIMIT
    kept = fake.journal.events[-1]
    assert kept.kind == "response"
    assert kept.body is not None
    assert kept.body.endswith(f"… ({len(dump.text) - BODY_LIMIT} more characters)")
    fake.journal.messages = False
    await client.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"})
    request, response = fake.journal.events[-2:]
    assert (request.headers, request.body, response.headers, response.body) == ((), None, (), None)
    with pytest.raises(ValueError) as caught:
        fake.calls.last.request.json()
    assert str(caught.value) == (
        "the request body of create_sandbox POST /v1/sandboxes was not recorded "
        "(there was none, or journal messages off)"
    )


def test_the_recording_helpers_redact_cap_and_summarise() -> None:
    headers = redacted(
        [
            ("X-Api-Key", "k"),
            ("Set-Cookie", "c"),
            ("X-Custom-Secret", "s"),
            ("Accept", "k1k"),
            ("Referer", "http://h/?key=k1"),
        ],
        secrets=("k1",),
    )
    assert headers == (
        ("x-api-key", "<redacted>"),
        ("set-cookie", "<redacted>"),
        ("x-custom-secret", "<redacted>"),
        ("accept", "k1k"),  # not the key: a longer word that contains it
        ("referer", "http://h/?key=<redacted>"),
    )
    assert query_text({"path": "/a b", "token": "t"}) == "path=/a+b&token=<redacted>"
    nested = body_text(b'[{"credentials": {"access_key": "a"}, "password": "", "n": 1}]')
    assert json.loads(nested) == [{"credentials": "<redacted>", "password": "", "n": 1}]
    assert body_text(b'{"token": 1') == '{"token": 1'  # not JSON: left as it is
    assert body_text("é".encode() * 5, limit=3) == "ééé… (2 more characters)"


def test_a_large_body_is_text_or_binary_whatever_byte_decides_it() -> None:
    """Large bodies are told apart from their start, but a late invalid byte still makes them
    binary, and a character cut at the point looked at first keeps them text."""

    def binary(data: bytes) -> str:
        return f"<binary, {len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()[:12]}>"

    late = b"a" * 100_000 + b"\xff"
    assert body_text(late) == binary(late)
    early = b"\xff" + b"a" * 100_000
    assert body_text(early) == binary(early)
    straddling = b"a" * 4095 + "é".encode() * 3000
    assert body_text(straddling, limit=5000) == "a" * 4095 + "é" * 905 + "… (2095 more characters)"


@pytest.mark.asyncio
async def test_a_failed_json_match_shows_the_bodies_it_looked_at(
    fake: FakeCreateOS, client: httpx.AsyncClient
) -> None:
    await client.post("/v1/sandboxes", content='{"shape": "s-1vcpu-1gb"}')
    with pytest.raises(AssertionError) as caught:
        fake.calls.assert_called_once("create_sandbox", json={"rootfs": "python"})
    assert str(caught.value) == (
        "expected 1 call(s) matching operation='create_sandbox', json={'rootfs': 'python'}; "
        "0 matched\n"
        "the fake received 1 call(s):\n"
        "    +0.00s create_sandbox POST /v1/sandboxes -> 200\n"
        "request bodies of the 1 call(s) matching the rest:\n"
        '    +0.00s create_sandbox POST /v1/sandboxes -> 200: {"shape": "s-1vcpu-1gb"}'
    )
    with pytest.raises(TypeError) as bad:
        fake.calls.filter(json='{"rootfs": "python"}')  # type: ignore[arg-type]
    assert str(bad.value) == "json= takes a dict the request body contains; got str"
    event = fake.journal.events[0]
    assert dataclasses.replace(event, headers=()).body == '{"shape": "s-1vcpu-1gb"}'


@pytest.mark.asyncio
async def test_calls_and_events_name_the_network_they_touch(
    fake: FakeCreateOS, client: httpx.AsyncClient
) -> None:
    """Requests on a network, and a change applied to it now, carry its id: ``fake.calls``
    filters by it and the journal prints it."""
    network = (await client.post("/v1/networks", json={"name": "n"})).json()["data"]["id"]
    other = (await client.post("/v1/networks", json={"name": "m"})).json()["data"]["id"]
    assert (await client.get(f"/v1/networks/{network}")).status_code == 200
    assert (await client.get(f"/v1/networks/{other}")).status_code == 200
    fake.faults.vanish_network(network)
    assert (await client.get(f"/v1/networks/{network}")).status_code == 404
    touched = fake.calls.filter(network_id=network)
    assert [(c.operation, c.status) for c in touched] == [
        ("get_network", 200),
        ("get_network", 404),
    ]
    assert fake.calls.filter(network_id=other).call_count == 1
    applied = [e for e in fake.journal.events if e.kind == "fault"]
    assert [(e.network_id, e.detail) for e in applied] == [
        (network, f"applied now VanishNetwork(network_id='{network}')")
    ]
    assert f"network={network}" in applied[0].format()


@pytest.mark.asyncio
async def test_a_short_key_is_masked_only_where_it_stands_whole(make_fake: MakeFake) -> None:
    """``--api-key test``: names that contain the word keep it; the key itself is masked."""
    from fake_server import TransitionPolicy

    fake = await make_fake(api_key="test", transitions=TransitionPolicy.immediate())
    async with httpx.AsyncClient(base_url=fake.url, headers={"X-Api-Key": "test"}) as client:
        body = {"shape": "s-1vcpu-1gb", "name": "integration-test-box", "envs": {"K": "test"}}
        created = await client.post("/v1/sandboxes", json=body)
        assert created.status_code == 200, created.text
    call = fake.calls.filter("create_sandbox").last
    sent = call.request.json()
    assert sent["name"] == "integration-test-box"
    assert sent["envs"] == {"K": "<redacted>"}
    assert call.response.json()["data"]["disk_mib"] > 0  # "disk_mib" keeps its k
    assert call.response.json()["data"]["name"] == "integration-test-box"
    assert "test" not in [value for _, value in call.request.headers]


def test_serve_warns_of_a_key_shorter_than_eight_characters() -> None:
    from fake_server.__main__ import build_parser, short_key_warnings

    args = build_parser().parse_args(["serve", "--api-key", "k", "--control-key", "12345678"])
    assert short_key_warnings(args) == [
        "warning: the --api-key value is shorter than 8 characters: anyone who can reach the "
        "port can guess it, and the journal masks it only where it stands as a whole word"
    ]
    fine = build_parser().parse_args(["serve", "--api-key", "cos_live_0123"])
    assert short_key_warnings(fine) == []
