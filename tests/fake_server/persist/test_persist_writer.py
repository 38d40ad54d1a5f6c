"""``serve --state-dir``'s writes leave the serving loop: requests only note what they changed,
a loop turn's changes go to the writer's thread as one transaction, and a transaction that
fails is reported once and written again with everything else the store lacks."""

from __future__ import annotations

import sqlite3
import time
from typing import TYPE_CHECKING

import httpx

from fake_server import FakeCreateOS, TransitionPolicy, tls_context
from fake_server.clock import RealClock
from fake_server.persist import Persistence

if TYPE_CHECKING:
    from pathlib import Path

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
