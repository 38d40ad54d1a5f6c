"""Requests a test can assert on: ``fake.calls`` and the fault handle ``faults.add()`` returns."""

from __future__ import annotations

import pytest

from fake_server.models.journal.calls import ApiCall, Calls
from fake_server.models.journal.events import Event
from fake_server.models.journal.recording import body_text, redacted
from pytest_createos._live import RedactedConfig

CALLS_TESTS = """
import pytest
from pytest_createos import Fault, HttpError
from pytest_createos.provider import CreateosApiError


@pytest.mark.asyncio
async def test_calls_and_fault_handle(createos_fake, createos_provider, createos_env):
    lease = await createos_provider.acquire_lease(createos_env)
    sandbox = lease.provider_lease_id
    calls = createos_fake.calls
    created = calls.assert_called_once("create_sandbox")
    assert (created.method, created.path, created.status) == ("POST", "/v1/sandboxes", 200)
    assert calls.filter("get_sandbox", sandbox_id=sandbox).call_count >= 1
    calls.assert_not_called("delete_sandbox")
    fault = createos_fake.faults.add(Fault("exec", HttpError(503)))
    assert fault.fired == 0 and fault.calls == []
    with pytest.raises(CreateosApiError):
        await createos_provider.resume_lease(createos_env, sandbox, lease.metadata)
    assert fault.fired == 1
    assert [(c.operation, c.sandbox_id) for c in fault.calls] == [("exec", sandbox)]
    failed = createos_fake.calls.filter("exec", status=503).assert_called_once()
    assert failed.sandbox_id == sandbox and failed.faults[0].startswith("fault#1 HttpError(")
    await createos_provider.destroy_lease(createos_env, sandbox, lease.metadata)


def test_a_failed_assertion_lists_the_calls(createos_fake, createos_lease):
    createos_fake.calls.assert_called_once("resume_sandbox")
"""


def test_calls_and_fault_handles_from_a_test(inner: pytest.Pytester) -> None:
    """A test asserts on the calls it made and on the fault it armed; a failed assertion
    names what it wanted and lists every call, the matching ones starred."""
    inner.makepyfile(CALLS_TESTS)
    result = inner.runpytest()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "E       AssertionError: expected 1 call(s) matching operation='resume_sandbox'; "
            "0 matched",
            "E       the fake received 4 call(s):",
            "E*  +0.00s create_sandbox POST /v1/sandboxes -> 200",
            "E*  +0.00s get_sandbox GET /v1/sandboxes/sb-01KD* -> 200",
            "E*  +0.00s exec POST /v1/sandboxes/sb-01KD*/exec -> 200",
            "E*  +0.00s upload_file PUT /v1/sandboxes/sb-01KD*/files -> 200",
        ]
    )


def test_calls_pair_requests_with_replies_and_faults() -> None:
    """A request without a response has no status; faults land on their call; the failure
    message stars the matches."""
    events = [
        Event(1.0, "request", "whoami", "GET", "/v1/whoami"),
        Event(1.0, "fault", "whoami", "GET", "/v1/whoami", detail="fault#1 LostReply()"),
        Event(1.0, "response", "whoami", "GET", "/v1/whoami", 200),
        Event(1.5, "request", "whoami", "GET", "/v1/whoami"),
    ]
    calls = Calls.from_events(events, origin=1.0)
    assert list(calls) == [
        ApiCall(1.0, "whoami", "GET", "/v1/whoami", status=200, faults=("fault#1 LostReply()",)),
        ApiCall(1.5, "whoami", "GET", "/v1/whoami"),
    ]
    assert calls.last.status is None
    assert len(calls.filter(status=200)) == 1
    with pytest.raises(AssertionError) as caught:
        calls.assert_not_called("whoami", status=200)
    assert str(caught.value) == (
        "expected 0 call(s) matching operation='whoami', status=200; 1 matched\n"
        "the fake received 2 call(s):\n"
        "  * +0.00s whoami GET /v1/whoami -> 200 (fault#1 LostReply())\n"
        "    +0.50s whoami GET /v1/whoami -> no reply"
    )


def test_recorded_headers_and_bodies_reach_the_calls_redacted_and_capped() -> None:
    """The event model carries query, headers and body; the helpers mask secrets, cap text
    and summarise binary; ``where=`` filters on them."""
    headers = redacted([("X-Api-Key", "cos_live_secret"), ("Content-Type", "application/json")])
    assert headers == (("x-api-key", "<redacted>"), ("content-type", "application/json"))
    assert body_text(b"\xff\x00\x01") == "<binary, 3 bytes, sha256 942e1e2a66a4>"
    assert body_text(b"abcdef", limit=4) == "abcd… (2 more characters)"
    events = [
        Event(
            1.0,
            "request",
            "create_sandbox",
            "POST",
            "/v1/sandboxes",
            query="dry=1",
            headers=headers,
            body=body_text(b'{"shape": "s-1vcpu-1gb"}'),
        ),
        Event(
            1.0,
            "response",
            "create_sandbox",
            "POST",
            "/v1/sandboxes",
            200,
            headers=redacted([("Content-Type", "application/json")]),
            body='{"id": "sb-1"}',
        ),
    ]
    call = Calls.from_events(events).assert_called_once(
        "create_sandbox", where=lambda c: '"s-1vcpu-1gb"' in (c.request_body or "")
    )
    assert call.query == "dry=1"
    assert call.header("X-API-KEY") == "<redacted>"
    assert call.header("content-type", response=True) == "application/json"
    assert call.response_body == '{"id": "sb-1"}'
    assert events[0].format() == "     1.000s request    create_sandbox POST /v1/sandboxes"
    assert "cos_live_secret" not in repr(call)


def test_a_live_config_hides_its_key_like_the_journal() -> None:
    """One redaction table: the plugin's config repr masks what the journal masks."""
    config = RedactedConfig(apiUrl="https://api.test", apiKey="cos_live_secret", shape="s")
    assert repr(config) == "{'apiUrl': 'https://api.test', 'apiKey': '<redacted>', 'shape': 's'}"
    assert config == {"apiUrl": "https://api.test", "apiKey": "cos_live_secret", "shape": "s"}
