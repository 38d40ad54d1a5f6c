"""The pure domain: transitions, output journal, ids, policies, journal; no HTTP."""

from __future__ import annotations

import pytest

from fake_server import TransitionPolicy, VirtualClock
from fake_server.models import (
    BadRequest,
    Conflict,
    Context,
    IdGenerator,
    Journal,
    NotFound,
    OutputJournal,
    SandboxSpec,
    Step,
    World,
)
from fake_server.models.account.table import check_abs_path
from fake_server.runtime.bashkit import CommandRegistry


def make_world(policy: TransitionPolicy | None = None) -> tuple[World, VirtualClock]:
    clock = VirtualClock(autojump=False)
    ctx = Context(clock=clock, ids=IdGenerator(0, clock), commands=CommandRegistry())
    if policy is not None:
        ctx.policy = policy
    return World(ctx), clock


def test_policy_presets_and_overrides() -> None:
    assert TransitionPolicy.realistic().resuming == Step(seconds=3.0)
    assert TransitionPolicy.immediate().pausing == Step()
    assert TransitionPolicy.after_reads(2).creating == Step(reads=2)
    assert TransitionPolicy.after(1.5).destroying == Step(seconds=1.5)
    custom = TransitionPolicy.immediate().override(resuming=10.0, pausing=3, creating=Step(1, 1))
    assert (custom.resuming, custom.pausing, custom.creating) == (
        Step(seconds=10.0),
        Step(reads=3),
        Step(seconds=1, reads=1),
    )
    with pytest.raises(ValueError, match="unknown transition 'forking'"):
        TransitionPolicy().override(forking=1.0)
    with pytest.raises(ValueError, match="a transition step needs seconds >= 0 and reads >= 0"):
        Step(seconds=-1)


def test_steps_need_both_time_and_reads() -> None:
    world, clock = make_world(TransitionPolicy.immediate().override(creating=Step(2.0, 1)))
    account = world.add_account("k")
    sandbox = account.create_sandbox(SandboxSpec(shape="s-1vcpu-1gb", rootfs="", region=""))
    assert account.get_sandbox(sandbox.id).status == "creating"  # read 1, time not due
    clock.advance(2.0)
    assert account.get_sandbox(sandbox.id).status == "running"


def test_state_machine_rules() -> None:
    world, _ = make_world(TransitionPolicy.after_reads(1))
    account = world.add_account("k")
    sandbox = account.create_sandbox(SandboxSpec(shape="s-1vcpu-1gb", rootfs="", region=""))
    with pytest.raises(Conflict, match="sandbox is not running"):
        account.pause_sandbox(sandbox.id)
    statuses = [account.get_sandbox(sandbox.id).status for _ in range(2)]
    assert statuses == ["creating", "running"]
    assert account.resume_sandbox(sandbox.id) == (sandbox, False)
    assert account.pause_sandbox(sandbox.id) == (sandbox, True)
    with pytest.raises(Conflict, match="sandbox must be paused or error to resume"):
        account.resume_sandbox(sandbox.id)
    statuses = [account.get_sandbox(sandbox.id).status for _ in range(2)]
    assert statuses == ["pausing", "paused"]
    assert account.pause_sandbox(sandbox.id) == (sandbox, False)
    sandbox.force_status("failed")
    with pytest.raises(Conflict):
        account.resume_sandbox(sandbox.id)
    with pytest.raises(ValueError, match="unknown sandbox status 'asleep'"):
        sandbox.force_status("asleep")


def test_forget_sandbox_makes_it_404() -> None:
    world, _ = make_world()
    account = world.add_account("k")
    sandbox = account.create_sandbox(SandboxSpec(shape="s-1vcpu-1gb", rootfs="", region=""))
    account.forget_sandbox(sandbox.id)
    with pytest.raises(NotFound, match="sandbox not found"):
        account.get_sandbox(sandbox.id)


def test_catalog_accepts_added_shapes() -> None:
    world, _ = make_world()
    world.ctx.catalog.add_shape("test-shape", vcpu=2, mem_mib=512)
    sandbox = world.add_account("k").create_sandbox(
        SandboxSpec(shape="test-shape", rootfs="", region="")
    )
    assert (sandbox.shape.vcpu, sandbox.shape.mem_mib) == (2, 512)


def test_duplicate_or_bad_api_keys_are_rejected() -> None:
    world, _ = make_world()
    world.add_account("same")
    with pytest.raises(ValueError, match="that API key already belongs to an account"):
        world.add_account("same")
    with pytest.raises(ValueError, match="an API key must be 1-512 printable characters"):
        world.add_account("bad\nkey")


def test_output_journal_numbers_chunks_and_evicts_oldest_first() -> None:
    journal = OutputJournal(limit=100_000)
    frames = journal.append("stdout", b"a" * 70_000)
    assert [(f.seq, len(f.data)) for f in frames] == [(1, 65_536), (2, 4_464)]
    journal.append("stderr", b"b" * 40_000)
    assert (journal.oldest_seq, journal.newest_seq, journal.bytes) == (2, 3, 44_464)
    assert journal.expired(0) is True
    assert journal.expired(1) is False
    assert [f.seq for f in journal.after(2)] == [3]
    journal.evict(up_to_seq=2)
    assert (journal.oldest_seq, journal.bytes) == (3, 40_000)
    journal.evict()
    assert (journal.oldest_seq, journal.newest_seq, journal.bytes) == (4, 3, 0)
    assert journal.expired(3) is False


def test_empty_journal_accepts_cursor_zero() -> None:
    journal = OutputJournal()
    assert (journal.oldest_seq, journal.newest_seq, journal.expired(0)) == (1, 0, False)


def test_ids_look_real_and_are_seeded() -> None:
    clock = VirtualClock(autojump=False)
    first, second = IdGenerator(5, clock), IdGenerator(5, clock)
    values = [first.sandbox_id(), first.process_id(), first.api_key(), first.name()]
    assert values == [second.sandbox_id(), second.process_id(), second.api_key(), second.name()]
    sandbox_id = values[0]
    assert sandbox_id.startswith("sb-01KDVDNA00")  # 2026-01-01T00:00:00Z in ULID time bits
    assert set(sandbox_id[3:]) <= set("0123456789ABCDEFGHJKMNPQRSTVWXYZ")
    first.reseed(5)
    assert first.sandbox_id() == sandbox_id


@pytest.mark.parametrize(
    ("path", "expected"),
    [("/a/b", "/a/b"), ("/a/../b", "/b"), ("//x//y/", "/x/y"), ("/", "/")],
)
def test_paths_are_normalised(path: str, expected: str) -> None:
    assert check_abs_path(path) == expected


@pytest.mark.parametrize("path", ["", "rel", "/a\x00b", "/" + "x" * 5000, "/\udc80"])
def test_bad_paths_are_rejected(path: str) -> None:
    with pytest.raises(BadRequest):
        check_abs_path(path)


def test_journal_filters_and_formats() -> None:
    from fake_server.models import Event

    journal = Journal()
    journal.record(
        Event(
            time=1.0,
            kind="request",
            operation="get_sandbox",
            method="GET",
            path="/v1/sandboxes/sb-1",
            sandbox_id="sb-1",
        )
    )
    journal.record(Event(time=1.5, kind="response", operation="get_sandbox", status=404))
    assert [e.kind for e in journal.filter(operation="get_sandbox")] == ["request", "response"]
    assert journal.responses()[0].status == 404
    assert journal.format() == (
        "     1.000s request    get_sandbox GET /v1/sandboxes/sb-1 sandbox=sb-1\n"
        "     1.500s response   get_sandbox -> 404"
    )
