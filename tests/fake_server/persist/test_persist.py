"""``serve --state-dir`` in process: a fake stopped and a new one on the same directory, the
state directory's refusals, and the 503 of a request that races a shutdown."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from typing import TYPE_CHECKING

import httpx
import pytest
from createos import Client
from createos.models import CreateSandboxRequest

from fake_server import FakeCreateOS, TransitionPolicy, tls_context
from fake_server.__main__ import main
from fake_server.clock import RealClock
from fake_server.models import Sandbox
from fake_server.persist import SCHEMA_VERSION, Persistence, StateDirError
from fake_server.persist.hook import SHUTTING_DOWN
from fake_server.persist.store import prepare
from tests.fake_server.persist._persist_scenario import check_world, make_world

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from createos.instance import SandboxInstance

SHAPE = "s-1vcpu-1gb"


def _fake(state: Path, **kwargs: object) -> tuple[FakeCreateOS, Persistence]:
    fake = FakeCreateOS(clock=RealClock(), transitions=TransitionPolicy.immediate(), **kwargs)  # type: ignore[arg-type]
    resources = fake.world.ctx.resources
    resources.template_pending_seconds = resources.template_step_seconds = 0.0  # real seconds
    persistence = Persistence(fake, state, on_error=_fail)
    return fake.start(), persistence


def _fail(message: str) -> None:
    raise AssertionError(message)


@contextlib.contextmanager
def sdk(api_key: str, base_url: str) -> Iterator[Client]:
    """The official client over one shared TLS context (a client's own costs about 25 ms)."""
    with (
        httpx.Client(verify=tls_context()) as http,
        Client(api_key, base_url=base_url, http_client=http) as client,
    ):
        yield client


@pytest.fixture(name="state")
def _state(tmp_path: Path) -> Path:
    return tmp_path / "state"


@pytest.fixture(name="served")
def _served(state: Path) -> Iterator[tuple[FakeCreateOS, Persistence]]:
    fake, persistence = _fake(state)
    yield fake, persistence
    fake.close()
    assert fake.errors == []


def test_a_clean_stop_and_a_new_fake_bring_the_world_back(state: Path) -> None:
    fake, persistence = _fake(state)
    with sdk(fake.api_key, fake.url) as client:
        made = make_world(client, disks=True)
        user_id = client.who_am_i().user_id
    key = fake.api_key
    fake.close()
    assert persistence.describe() == [f"state: {state} (new)"]

    again, restored = _fake(state)
    try:
        assert again.api_key == key
        assert restored.describe() == [
            f"state: {state} (restored 1 account(s) and 3 sandbox(es); "
            "1 that were running came back paused)"
        ]
        with sdk(key, again.url) as client:
            assert client.who_am_i().user_id == user_id
            check_world(client, key, made)
        # The journal kept the first start's requests, and request ids go on from there.
        operations = [e.operation for e in again.journal.requests()]
        assert operations[:2] == ["create_sandbox", "upload_file"]
        ids = [e.request_id for e in again.journal.requests()]
        assert len(set(ids)) == len(ids)
    finally:
        again.close()
    assert again.errors == []


def _crash(fake: FakeCreateOS, persistence: Persistence) -> None:
    """Stop ``fake`` without the save a clean stop makes, as ``kill -9`` would once the
    writer's thread has written what the requests changed (milliseconds after each answer)."""
    fake.closing_hooks.remove(persistence.close)
    fake.close()  # the loop's last turns hand their changes to the writer
    persistence.saver.writer.close()
    persistence.store.close()  # the lock a dead process would no longer hold


def test_each_change_is_saved_after_its_reply_without_a_clean_stop(state: Path) -> None:
    fake, persistence = _fake(state)
    with sdk(fake.api_key, fake.url) as client:
        fresh = client.create_sandbox(CreateSandboxRequest(shape=SHAPE))  # the image's files
        written = client.create_sandbox(CreateSandboxRequest(shape=SHAPE))
        assert written.shell("echo one > /tmp/a; rm /usr/bin/yes").result.exit_code == 0
    _crash(fake, persistence)

    again, persistence = _fake(state)
    with sdk(again.api_key, again.url) as client:
        for sandbox_id in (fresh.id, written.id):
            client.get_sandbox(sandbox_id).resume()
        restored = client.get_sandbox(written.id)
        result = restored.shell("cat /tmp/a; test -e /usr/bin/yes || echo removed").result
        assert result.standard_output == "one\nremoved\n"  # a deletion is a change too
        # A sandbox that came back with the image's files keeps what is written after.
        assert client.get_sandbox(fresh.id).shell("echo two > /tmp/b").result.exit_code == 0
    _crash(again, persistence)

    third, _ = _fake(state)
    try:
        with sdk(third.api_key, third.url) as client:
            sandbox = client.get_sandbox(fresh.id)
            sandbox.resume()
            assert sandbox.files.download("/tmp/b").read() == b"two\n"
            assert sandbox.shell("test -e /usr/bin/yes && echo kept").result.standard_output == (
                "kept\n"
            )
    finally:
        third.close()


def test_restored_files_are_made_on_first_use_and_never_for_a_destroy(state: Path) -> None:
    fake, _ = _fake(state)
    with sdk(fake.api_key, fake.url) as client:
        used, dropped = (client.create_sandbox(CreateSandboxRequest(shape=SHAPE)) for _ in "ab")
        used.files.upload("/tmp/kept", b"kept")
    fake.close()
    again, _ = _fake(state)
    try:
        disks = {s.id: s.disk for s in again.sandboxes()}
        assert {k: getattr(d, "loaded", None) for k, d in disks.items()} == {
            used.id: False,
            dropped.id: False,
        }
        with sdk(again.api_key, again.url) as client:
            client.get_sandbox(dropped.id).destroy()
            restored = client.get_sandbox(used.id)
            restored.resume()
            assert restored.files.download("/tmp/kept").read() == b"kept"
        assert {k: getattr(d, "loaded", None) for k, d in disks.items()} == {
            used.id: True,
            dropped.id: False,
        }
        assert disks[dropped.id].wiped
    finally:
        again.close()
    third, _ = _fake(state)
    try:
        assert [s.id for s in third.sandboxes()] == [used.id]
    finally:
        third.close()


def test_ids_keys_and_names_are_not_drawn_again_after_a_restart(state: Path) -> None:
    first, _ = _fake(state, seed=7)
    first_key = first.add_account()
    with sdk(first.api_key, first.url) as client:
        first_name = client.create_sandbox(CreateSandboxRequest(shape=SHAPE)).name
    first.close()
    second, _ = _fake(state, seed=7)
    try:
        assert second.api_key == first.api_key  # the same seeded default account
        assert second.add_account() != first_key
        with sdk(second.api_key, second.url) as client:
            assert client.create_sandbox(CreateSandboxRequest(shape=SHAPE)).name != first_name
    finally:
        second.close()


def test_sandboxes_are_listed_in_the_order_they_were_created(state: Path) -> None:
    fake, _ = _fake(state)
    with sdk(fake.api_key, fake.url) as client:
        made = [client.create_sandbox(CreateSandboxRequest(shape=SHAPE)) for _ in range(3)]
        made[0].pause()  # the newest write: its row is rewritten last
        before = [s.id for s in client.list_sandboxes()]
    fake.close()
    again, _ = _fake(state)
    try:
        with sdk(again.api_key, again.url) as client:
            assert [s.id for s in client.list_sandboxes()] == before
    finally:
        again.close()


def test_a_restored_sandbox_has_every_attribute_a_new_one_has(
    served: tuple[FakeCreateOS, Persistence], state: Path
) -> None:
    fake, _ = served
    with sdk(fake.api_key, fake.url) as client:
        sandbox_id = client.create_sandbox(CreateSandboxRequest(shape=SHAPE)).id
    made = set(vars(fake.sandbox(sandbox_id)))
    fake.close()
    again, _ = _fake(state)
    try:
        restored = again.sandbox(sandbox_id)
        assert isinstance(restored, Sandbox)
        assert set(vars(restored)) == made
    finally:
        again.close()


def test_a_request_racing_a_shutdown_gets_503_and_changes_nothing(
    served: tuple[FakeCreateOS, Persistence], state: Path
) -> None:
    fake, persistence = served
    persistence.gate.closing = True  # what ``drain()`` does first on SIGTERM
    with httpx.Client(
        verify=tls_context(), base_url=fake.api_url, headers={"X-Api-Key": fake.api_key}
    ) as http:
        reply = http.post("/sandboxes", json={"shape": SHAPE})
    assert reply.status_code == 503
    assert reply.json() == {
        "status": "error",
        "code": 503,
        "message": SHUTTING_DOWN,
        "data": {"code": "shutting_down"},
    }
    assert fake.sandboxes() == []
    with sqlite3.connect(state / "state.sqlite3") as db:
        assert db.execute("SELECT COUNT(*) FROM sandboxes").fetchone() == (0,)


def test_a_database_of_a_newer_schema_is_refused(state: Path) -> None:
    fake, _ = _fake(state)
    fake.close()
    with sqlite3.connect(state / "state.sqlite3") as db:
        db.execute(
            "UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 1),)
        )
    with pytest.raises(StateDirError) as caught:
        Persistence(FakeCreateOS(clock=RealClock()), state, on_error=_fail)
    assert str(caught.value) == (
        f"state database {state}/state.sqlite3 has schema version {SCHEMA_VERSION + 1}, newer "
        f"than this createos-fake reads ({SCHEMA_VERSION}); upgrade pytest-createos or use "
        "another --state-dir"
    )
    # Nothing was replaced, and the directory is free again.
    with sqlite3.connect(state / "state.sqlite3") as db:
        version = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    assert version == (str(SCHEMA_VERSION + 1),)
    assert list(state.glob("corrupt-*")) == []


def test_a_corrupt_database_is_moved_aside_and_reported(state: Path) -> None:
    state.mkdir()
    garbage = b"this is not a database" * 100
    (state / "state.sqlite3").write_bytes(garbage)
    fake, persistence = _fake(state)
    fake.close()
    (aside,) = state.glob("corrupt-*")
    assert (aside / "state.sqlite3").read_bytes() == garbage
    assert persistence.describe() == [
        f"state: {state} (new)",
        f"state: state database {state}/state.sqlite3 could not be read (file is not a "
        f"database); moved it aside to {aside} and started empty",
    ]


def test_a_row_that_cannot_be_read_is_refused_and_left_alone(state: Path) -> None:
    fake, _ = _fake(state)
    with sdk(fake.api_key, fake.url) as client:
        client.create_sandbox(CreateSandboxRequest(shape=SHAPE))
    fake.close()
    with sqlite3.connect(state / "state.sqlite3") as db:
        db.execute("UPDATE sandboxes SET data = '{}'")
    with pytest.raises(StateDirError) as caught:
        Persistence(FakeCreateOS(clock=RealClock()), state, on_error=_fail)
    assert str(caught.value) == (
        f"state database {state}/state.sqlite3 could not be restored (KeyError: 'created_at'); "
        "nothing was changed: move the directory aside or use another --state-dir"
    )
    with sqlite3.connect(state / "state.sqlite3") as db:
        assert db.execute("SELECT data FROM sandboxes").fetchall() == [("{}",)]


def test_a_state_directory_in_use_is_refused(
    served: tuple[FakeCreateOS, Persistence], state: Path
) -> None:
    with pytest.raises(StateDirError) as caught:
        Persistence(FakeCreateOS(clock=RealClock()), state, on_error=_fail)
    assert str(caught.value) == (
        f"state directory {state} is in use by another createos-fake (pid {os.getpid()})"
    )


def test_a_full_disk_is_refused(state: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state.mkdir()
    real = os.statvfs(state)

    class Full:
        f_bavail, f_frsize = 2, real.f_frsize

    monkeypatch.setattr(os, "statvfs", lambda path: Full())
    with pytest.raises(StateDirError) as caught:
        prepare(state)
    assert str(caught.value) == (
        f"state directory {state} is on a full disk: {2 * real.f_frsize // 1024} KiB free, "
        "16 MiB needed"
    )


def test_a_file_in_the_way_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert main(["serve", "--port", "0", "--runtime", "bashkit", "--state-dir", str(blocker)]) == 2
    assert (
        capsys.readouterr().err == f"createos-fake: state directory {blocker} is not a directory\n"
    )
    assert (
        main(["serve", "--port", "0", "--runtime", "bashkit", "--state-dir", str(blocker / "x")])
        == 2
    )
    assert capsys.readouterr().err == (
        f"createos-fake: cannot create state directory {blocker / 'x'}: Not a directory\n"
    )


def test_the_database_holds_no_more_journal_than_the_limit(state: Path) -> None:
    def limited() -> FakeCreateOS:
        fake = FakeCreateOS(
            clock=RealClock(), transitions=TransitionPolicy.immediate(), journal_limit=4
        )
        Persistence(fake, state, on_error=_fail)
        return fake.start()

    fake = limited()
    with httpx.Client(
        verify=tls_context(), base_url=fake.api_url, headers={"X-Api-Key": fake.api_key}
    ) as http:
        for index in range(3):  # each one change, one batch of events
            assert http.post("/networks", json={"name": f"n{index}"}).status_code == 201
    last = fake.journal.events
    fake.close()
    with sqlite3.connect(state / "state.sqlite3") as db:
        counts = [count for (count,) in db.execute("SELECT count FROM journal ORDER BY seq")]
    # Whole batches go once the newer ones hold the limit: never more than one batch over it.
    assert sum(counts[1:]) < 4 <= sum(counts)
    again = limited()
    try:
        kept = again.journal.events
        assert [(e.kind, e.request_id, e.status) for e in kept] == [
            (e.kind, e.request_id, e.status) for e in last
        ]
        assert len(kept) == 4
    finally:
        again.close()


def test_a_process_runtime_disk_keeps_its_files_across_restarts_and_a_reset(
    state: Path,
) -> None:
    """The attachment comes back, mounted again on the bucket's directory in the state
    directory (files written through the mount are there); a ``reset()`` starts every bucket
    empty, and that empty start is what the next restart keeps."""
    from createos.models import (
        DiskAttachment,
        DiskConfig,
        DiskCreateRequest,
        DiskCredentials,
        RunCommandRequest,
    )

    def register(client: Client) -> list[DiskAttachment]:
        disk = client.disks.create(
            DiskCreateRequest(
                name="d",
                config=DiskConfig(bucket="b", endpoint="https://s3.example.test"),
                credentials=DiskCredentials(access_key="a", secret_key="s"),
            )
        )
        return [DiskAttachment(disk_id=disk.id, mount_path="/mnt/d")]

    def sh(sandbox: SandboxInstance, script: str) -> str:
        done = sandbox.run_command(RunCommandRequest(command="bash", arguments=["-c", script]))
        assert done.result.exit_code == 0, done.result.standard_error
        return done.result.standard_output

    fake, _ = _fake(state, runtime="process")
    with sdk(fake.api_key, fake.url) as client:
        sandbox = client.create_sandbox(CreateSandboxRequest(shape=SHAPE, disks=register(client)))
        sandbox.wait_until_running()
        sh(sandbox, "mkdir -p /mnt/d/logs && echo kept > /mnt/d/logs/a.txt")
    key = fake.api_key
    fake.close()
    again, restored = _fake(state, runtime="process")
    try:
        assert "lost disk" not in "\n".join(restored.describe())
        with sdk(key, again.url) as client:
            back = client.get_sandbox(sandbox.id)
            assert [d.mount_path for d in back.list_disks()] == ["/mnt/d"]
            back.resume()
            back.wait_until_running()
            assert sh(back, "cat /mnt/d/logs/a.txt; findmnt -n -o TARGET /mnt/d") == (
                "kept\n/mnt/d\n"
            )
        again.reset()
        assert list((state / "disks").iterdir()) == []  # the old buckets' files went
        with sdk(again.api_key, again.url) as client:
            fresh = client.create_sandbox(CreateSandboxRequest(shape=SHAPE, disks=register(client)))
            fresh.wait_until_running()
            assert sh(fresh, "ls -A /mnt/d; echo new > /mnt/d/n.txt") == ""
        key = again.api_key
    finally:
        again.close()
    assert again.errors == []
    third, _ = _fake(state, runtime="process")
    try:
        with sdk(key, third.url) as client:
            back = client.get_sandbox(fresh.id)
            back.resume()
            back.wait_until_running()
            assert sh(back, "ls -A /mnt/d; cat /mnt/d/n.txt") == "n.txt\nnew\n"
    finally:
        third.close()
    assert third.errors == []


def test_a_build_running_when_saved_comes_back_building_as_its_next_attempt() -> None:
    """A build that takes real time (the process runtime's) comes back ``building``, to start
    again from its Dockerfile as attempt 2 once the fake serves (the TS SDK's
    ``TemplateLogEvent.attempt``); a template saved before such builds (no ``running`` key)
    comes back as it was."""
    from fake_server.models.resources.templates import LogLine, Template
    from fake_server.persist.codec import decode_template, encode_template

    clock = RealClock()
    template = Template(
        id="tpl_1", name="t", base="devbox:1", dockerfile="FROM devbox:1\nRUN sleep 60\n",
        created_at=clock.time(), started=clock.now(), pending=1.0, running=True,
        log=[LogLine(0.0, "info", "Step 1/2 : FROM devbox:1"),
             LogLine(2.5, "info", "Step 2/2 : RUN sleep 60")],
    )  # fmt: skip
    saved = encode_template(template, clock)
    assert saved["running"] is True
    assert saved["image"] is False
    assert "attempt" not in saved
    back = decode_template(saved, clock)
    assert (back.status(clock.now() + 10), back.running, back.image) == ("building", True, None)
    assert (back.attempt, back.interrupted) == (2, True)
    assert back.log[:2] == template.log
    assert back.log[-1] == LogLine(
        2.5,
        "warn",
        "the fake stopped during build attempt 1: building again from the Dockerfile",
        2,
    )
    # saved again mid-attempt 2: the lines keep their attempts, the template its number
    again = encode_template(back, clock)
    assert (again["attempt"], again["log"][-1][3], len(again["log"][0])) == (2, 2, 3)
    third = decode_template(again, clock)
    assert third.attempt == 3
    assert [line.attempt for line in third.log] == [1, 1, 2, 3]
    template.running = False
    older = encode_template(template, clock)
    assert "running" not in older
    assert decode_template(older, clock).log == template.log
