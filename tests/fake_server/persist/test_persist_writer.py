"""``serve --state-dir``'s writes leave the serving loop: requests only note what they changed,
a loop turn's changes go to the writer's thread as one transaction, and a transaction that
fails is reported once and written again with everything else the store lacks."""

from __future__ import annotations

import json
import sqlite3
import time
from typing import TYPE_CHECKING

import httpx

from fake_server import FakeCreateOS, TransitionPolicy, VirtualClock, tls_context
from fake_server.clock import RealClock
from fake_server.models.journal.events import Event
from fake_server.persist import Persistence, saver
from fake_server.persist.codec import EVENT_FIELDS, decode_event, encode_event, encode_events

if TYPE_CHECKING:
    from pathlib import Path

    import pytest

SHAPE = "s-1vcpu-1gb"


def _served(state: Path, errors: list[str]) -> tuple[FakeCreateOS, Persistence]:
    fake = FakeCreateOS(clock=RealClock(), transitions=TransitionPolicy.immediate())
    persistence = Persistence(fake, state, on_error=errors.append)
    return fake.start(), persistence


def _create(fake: FakeCreateOS) -> str:
    with httpx.Client(verify=tls_context(), headers={"X-Api-Key": fake.api_key}) as http:
        reply = http.post(f"{fake.api_url}/sandboxes", json={"shape": SHAPE})
    assert reply.status_code == 200
    return str(reply.json()["data"]["id"])


def _until(condition: object, what: str) -> None:
    deadline = time.monotonic() + 10
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"still not {what} after 10 s"
        time.sleep(0.01)


def _stored_sandboxes(state: Path) -> set[str]:
    with sqlite3.connect(state / "state.sqlite3") as db:
        return {row[0] for row in db.execute("SELECT id FROM sandboxes")}


def test_a_failed_write_is_reported_once_and_written_with_the_next_change(
    tmp_path: Path,
) -> None:
    state, errors = tmp_path / "state", []
    fake, persistence = _served(state, errors)
    try:
        first = _create(fake)
        fake._call(persistence.saver.sync)  # written: the store is still
        persistence.store.db.execute("PRAGMA query_only = ON")  # every write now fails
        second = _create(fake)
        _until(lambda: errors, "reported")
        fake._call(persistence.saver.sync)
        assert errors == [f"cannot save the state to {state}: attempt to write a readonly database"]
        assert _stored_sandboxes(state) == {first}
        persistence.store.db.execute("PRAGMA query_only = OFF")
        third = _create(fake)
        fake._call(persistence.saver.sync)
        assert _stored_sandboxes(state) == {first, second, third}  # the next save wrote all
        assert len(errors) == 1
    finally:
        fake.close()
    assert errors == [f"cannot save the state to {state}: attempt to write a readonly database"]
    assert fake.errors == []

    again, restored = _served(state, errors)
    try:
        assert {s.id for s in again.sandboxes()} == {first, second, third}
        assert restored.describe()[0].startswith(f"state: {state} (restored 1 account(s)")
    finally:
        again.close()


def test_a_clean_stop_writes_what_the_writer_still_held(tmp_path: Path) -> None:
    state, errors = tmp_path / "state", []
    fake, _ = _served(state, errors)
    made = [_create(fake) for _ in range(5)]
    fake.close()  # no wait for the writer first: the stop drains it
    assert _stored_sandboxes(state) == set(made)
    assert errors == []


def _stored_operations(state: Path) -> list[str]:
    with sqlite3.connect(state / "state.sqlite3") as db:
        batches = [json.loads(data) for (data,) in db.execute("SELECT data FROM journal")]
    field = EVENT_FIELDS.index("operation")
    return [event[field] for batch in batches for event in batch]


def test_reads_are_journalled_on_disk_without_a_later_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read changes nothing the store holds, but its journal events are written within
    ``JOURNAL_EVERY`` by a timer, not left for whichever request comes next (or the stop)."""
    monkeypatch.setattr(saver, "JOURNAL_EVERY", 0.05)
    state, errors = tmp_path / "state", []
    fake, persistence = _served(state, errors)
    try:
        sandbox_id = _create(fake)
        fake._call(persistence.saver.sync)
        with httpx.Client(verify=tls_context(), headers={"X-Api-Key": fake.api_key}) as http:
            assert http.get(f"{fake.api_url}/sandboxes/{sandbox_id}").status_code == 200
        _until(lambda: "get_sandbox" in _stored_operations(state), "journalled")
        assert _stored_operations(state).count("get_sandbox") == 2  # its request and response
    finally:
        fake.close()
    assert errors == []


def test_an_event_orjson_refuses_is_written_by_json_and_reads_back() -> None:
    """A lone surrogate (a header or body no codec could decode) is kept, escaped."""
    clock = VirtualClock()
    try:
        events = [
            Event(time=1.5, kind="request", operation="get_sandbox", body="caf\udce9"),
            Event(time=2.0, kind="response", operation="get_sandbox", status=200, body='{"a": 1}'),
        ]
        text = encode_events(events)
        assert "\\udce9" in text
        back = [decode_event(values, 0.0, clock) for values in json.loads(text)]
        assert [(e.kind, e.body, e.status) for e in back] == [
            ("request", "caf\udce9", None),
            ("response", '{"a": 1}', 200),
        ]
        # orjson's text reads back as json's would
        plain = json.dumps([encode_event(events[1])])
        assert json.loads(encode_events(events[1:])) == json.loads(plain)
    finally:
        clock.close()
