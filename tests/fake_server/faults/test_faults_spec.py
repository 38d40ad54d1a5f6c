"""JSON fault specs (the control API's input): valid specs build faults, bad ones name the field."""

from __future__ import annotations

import pytest

from fake_server.faults import (
    DEFAULT,
    Call,
    CutStream,
    FaultSpecError,
    HttpError,
    TamperFile,
    action_to_json,
    fault_from_json,
)


def test_the_documented_example_builds_a_once_fault() -> None:
    fault = fault_from_json(
        {"operation": "resume_sandbox", "action": {"type": "http_error", "status": 503}, "times": 1}
    )
    assert (fault.operation, fault.action, fault.times, fault.after) == (
        "resume_sandbox",
        HttpError(503),
        1,
        0,
    )
    assert fault.expected is True


def test_every_schedule_and_matcher_field_is_read() -> None:
    fault = fault_from_json(
        {
            "operation": "connect_process",
            "action": {"type": "cut_stream", "after_frames": 2, "mode": "eof"},
            "times": None,
            "after": 1,
            "probability": 0.25,
            "sandbox_id": "sb-1",
            "process_id": "proc-1",
            "account": "acct",
            "query": {"after": "0"},
            "name": "cut",
            "expected": True,
        }
    )
    assert fault.action == CutStream(after_frames=2, mode="eof")
    assert (fault.times, fault.after, fault.probability) == (None, 1, 0.25)
    assert (fault.sandbox_id, fault.process_id, fault.account, fault.name) == (
        "sb-1",
        "proc-1",
        "acct",
        "cut",
    )
    assert fault.expected is True
    hit = Call(operation="connect_process", sandbox_id="sb-1", process_id="proc-1", account="acct")
    assert fault.matches(Call(**{**hit.__dict__, "query": {"after": "0"}}))
    assert not fault.matches(Call(**{**hit.__dict__, "query": {"after": "3"}}))


def test_probability_without_times_means_every_call() -> None:
    fault = fault_from_json(
        {"operation": "*", "action": {"type": "http_error", "status": 503}, "probability": 0.05}
    )
    assert fault.times is None
    assert fault.expected is False
    assert DEFAULT is not None


def test_tamper_file_takes_text_or_base64() -> None:
    text = fault_from_json(
        {"operation": "exec", "action": {"type": "tamper_file", "path": "/m", "data": "x"}}
    )
    raw = fault_from_json(
        {
            "operation": "exec",
            "action": {"type": "tamper_file", "path": "/m", "data_base64": "AAE="},
        }
    )
    assert text.action == TamperFile("/m", b"x")
    assert raw.action == TamperFile("/m", b"\x00\x01")
    assert action_to_json(raw.action) == {
        "type": "tamper_file",
        "path": "/m",
        "data_base64": "AAE=",
        "sandbox_id": None,
    }


def test_action_to_json_round_trips() -> None:
    action = HttpError(429, retry_after=2)
    spec = action_to_json(action)
    assert spec == {
        "type": "http_error",
        "status": 429,
        "retry_after": 2,
        "code": None,
        "message": None,
    }
    assert fault_from_json({"operation": "exec", "action": spec}).action == action


@pytest.mark.parametrize(
    ("spec", "field", "message"),
    [
        ([], "fault", "must be a JSON object"),
        ({"operation": "exec", "action": {"type": "lost_reply"}, "bogus": 1}, "bogus", "unknown"),
        ({"action": {"type": "lost_reply"}}, "operation", "required string"),
        ({"operation": "nope", "action": {"type": "lost_reply"}}, "operation", "unknown operation"),
        ({"operation": "exec"}, "action", 'required object with a "type"'),
        ({"operation": "exec", "action": {"type": "boom"}}, "action.type", "must be one of"),
        ({"operation": "exec", "action": {"type": "http_error"}}, "action.status", "required"),
        (
            {"operation": "exec", "action": {"type": "http_error", "status": "503"}},
            "action.status",
            "status must be an integer HTTP status",
        ),
        (
            {"operation": "exec", "action": {"type": "http_error", "status": 503, "x": 1}},
            "action.x",
            "unknown field",
        ),
        (
            {"operation": "exec", "action": {"type": "latency", "seconds": [1]}},
            "action.seconds",
            "must be a scalar",
        ),
        (
            {"operation": "exec", "action": {"type": "lost_reply"}, "times": 0},
            "times",
            "times must be an integer >= 1 or None (every call)",
        ),
        (
            {"operation": "exec", "action": {"type": "lost_reply"}, "after": "1"},
            "after",
            "after must be an integer >= 0",
        ),
        (
            {"operation": "exec", "action": {"type": "lost_reply"}, "probability": 2},
            "probability",
            "probability must be a number between 0 and 1",
        ),
        (
            {"operation": "exec", "action": {"type": "lost_reply"}, "sandbox_id": ""},
            "sandbox_id",
            "must be a non-empty string of at most 200",
        ),
        (
            {"operation": "exec", "action": {"type": "lost_reply"}, "query": {"a": 1}},
            "query",
            "must be an object of string values",
        ),
        (
            {"operation": "exec", "action": {"type": "lost_reply"}, "expected": "yes"},
            "expected",
            "must be a boolean",
        ),
        (
            {"operation": "get_sandbox", "action": {"type": "cut_stream", "after_frames": 1}},
            "action",
            "CutStream applies only to: connect_process, exec_stream",
        ),
        (
            {"operation": "exec", "action": {"type": "tamper_file", "path": "/m", "data": 3}},
            "action.data",
            "must be a string",
        ),
        (
            {
                "operation": "exec",
                "action": {"type": "tamper_file", "path": "/m", "data_base64": "!!"},
            },
            "action.data_base64",
            "must be valid base64",
        ),
    ],
)
def test_bad_specs_name_the_field(spec: object, field: str, message: str) -> None:
    with pytest.raises(FaultSpecError) as info:
        fault_from_json(spec)
    assert info.value.field == field
    assert message in info.value.message
