"""The fault engine without HTTP: matching, schedules, seeded randomness, firing records."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import pytest

from fake_server.clock import VirtualClock
from fake_server.faults import (
    Aim,
    Call,
    CrashProcess,
    CutStream,
    DetachDisk,
    EvictOutput,
    FailTemplateBuild,
    Fault,
    FaultFiring,
    Faults,
    Forget,
    HttpError,
    Latency,
    LostReply,
    OutOfBandAction,
    SetStatus,
    StallStream,
    TamperFile,
    TruncatedDownload,
    UnknownTargetError,
    VanishNetwork,
)
from fake_server.faults.aim import AIM_IDS
from fake_server.faults.catalog import ACTION_TYPES

if TYPE_CHECKING:
    from fake_server.models import World


def call(operation: str = "get_sandbox", **kwargs: object) -> Call:
    defaults: dict[str, object] = {
        "method": "GET",
        "path": "/v1/sandboxes/sb-1",
        "sandbox_id": "sb-1",
        "account": "acct-1",
    }
    defaults.update(kwargs)
    return Call(operation=operation, **defaults)  # type: ignore[arg-type]


def fires(faults: Faults, n: int, operation: str = "get_sandbox", **kwargs: object) -> list[bool]:
    return [not faults.plan(call(operation, **kwargs)).empty for _ in range(n)]


def test_a_fault_fires_once_by_default_and_is_then_no_longer_unfired() -> None:
    faults = Faults()
    fault = faults.add(Fault("resume_sandbox", HttpError(503)))
    assert faults.unfired() == [fault]
    assert fires(faults, 3, "resume_sandbox") == [True, False, False]
    assert faults.unfired() == []
    assert faults.fire_count(fault) == 1


def test_idle_only_while_no_fault_is_armed_spent_ones_included() -> None:
    """The HTTP layer skips describing a request to an idle registry: idle must mean that
    ``plan`` has nothing to consult."""
    faults = Faults()
    assert faults.idle
    fault = faults.add(Fault("get_sandbox", HttpError(503)))
    assert not faults.idle
    assert fires(faults, 2) == [True, False]
    assert not faults.idle  # spent, still armed: plan still counts its calls
    faults.remove(fault)
    assert faults.idle
    faults.add(Fault("get_sandbox", HttpError(503)))
    faults.clear()
    assert faults.idle


def test_times_and_after_select_which_matching_calls_fire() -> None:
    faults = Faults()
    fault = faults.add(Fault("get_sandbox", HttpError(429, retry_after=2), times=3, after=1))
    assert fires(faults, 6) == [False, True, True, True, False, False]
    assert faults.fire_count(fault) == 3
    assert faults.match_count(fault) == 4  # an exhausted fault stops looking


def test_times_none_fires_on_every_matching_call() -> None:
    faults = Faults()
    faults.add(Fault("get_sandbox", HttpError(503), times=None))
    assert fires(faults, 4) == [True] * 4


def test_matchers_narrow_by_operation_sandbox_process_account_and_predicate() -> None:
    faults = Faults()
    faults.add(Fault("get_sandbox", HttpError(404), sandbox_id="sb-2", times=None))
    faults.add(Fault("kill_process", HttpError(500), process_id="proc-9", times=None))
    faults.add(Fault("exec", HttpError(502), account="acct-2", times=None))
    faults.add(Fault("list_sandboxes", HttpError(400), when=lambda c: c.query.get("limit") == "7"))
    assert fires(faults, 1) == [False]
    assert fires(faults, 1, sandbox_id="sb-2") == [True]
    assert fires(faults, 1, "kill_process", process_id="proc-1") == [False]
    assert fires(faults, 1, "kill_process", process_id="proc-9") == [True]
    assert fires(faults, 1, "exec") == [False]
    assert fires(faults, 1, "exec", account="acct-2") == [True]
    assert fires(faults, 1, "list_sandboxes", query={"limit": "8"}) == [False]
    assert fires(faults, 1, "list_sandboxes", query={"limit": "7"}) == [True]


def test_star_matches_every_operation_but_stream_actions_only_streams() -> None:
    faults = Faults()
    faults.add(Fault("*", CutStream(after_frames=1), times=None))
    assert fires(faults, 1, "get_sandbox") == [False]
    assert fires(faults, 1, "download_file") == [False]  # frames only exist in NDJSON
    assert fires(faults, 1, "connect_process") == [True]
    assert fires(faults, 1, "exec_stream") == [True]


def test_probability_is_seeded_per_fault_and_independent_of_other_faults() -> None:
    def pattern(seed: int, extra: bool) -> list[bool]:
        faults = Faults(seed=seed)
        if extra:
            faults.add(Fault("*", Latency(0.5), probability=0.5))
        faults.add(Fault("get_sandbox", HttpError(503), probability=0.3))
        if extra:
            faults.add(Fault("get_sandbox", HttpError(500), probability=0.5))
        return [
            any(f.fault.action == HttpError(503) for f in faults.plan(call()).firings)
            for _ in range(200)
        ]

    base = pattern(7, extra=False)
    assert base == pattern(7, extra=False)
    assert base == pattern(7, extra=True)
    assert base != pattern(8, extra=False)
    assert 30 < sum(base) < 90  # roughly 30 % of 200


def test_identical_faults_get_distinct_random_streams() -> None:
    faults = Faults(seed=1)
    a = faults.add(Fault("get_sandbox", Latency(1), probability=0.5))
    b = faults.add(Fault("get_sandbox", Latency(1), probability=0.5))
    seen_a, seen_b = [], []
    for _ in range(64):
        ids = {f.fault_id for f in faults.plan(call()).firings}
        seen_a.append(faults.fault_id(a) in ids)
        seen_b.append(faults.fault_id(b) in ids)
    assert seen_a != seen_b


def test_probabilistic_faults_are_not_reported_unfired_unless_expected() -> None:
    faults = Faults()
    faults.add(Fault("get_sandbox", HttpError(503), probability=0.0))
    must = faults.add(Fault("get_sandbox", HttpError(503), probability=0.0, expected=True))
    assert fires(faults, 5) == [False] * 5
    assert faults.unfired() == [must]


def test_first_response_action_wins_and_the_other_stays_armed() -> None:
    faults = Faults()
    first = faults.add(Fault("pause_sandbox", HttpError(503)))
    second = faults.add(Fault("pause_sandbox", LostReply()))
    plan = faults.plan(call("pause_sandbox"))
    assert plan.response == HttpError(503)
    plan = faults.plan(call("pause_sandbox"))
    assert plan.response == LostReply()
    assert (faults.fire_count(first), faults.fire_count(second)) == (1, 1)


def test_latency_and_out_of_band_compose_with_a_response() -> None:
    faults = Faults()
    faults.add(Fault("get_sandbox", Latency(1.5)))
    faults.add(Fault("get_sandbox", Latency(0.5)))
    faults.add(Fault("get_sandbox", SetStatus("failed")))
    faults.add(Fault("get_sandbox", HttpError(500)))
    plan = faults.plan(call())
    assert plan.latency == 2.0
    assert plan.out_of_band == ((SetStatus("failed"), Aim("sb-1", account="acct-1")),)
    assert plan.response == HttpError(500)
    assert len(plan.firings) == 4


def test_out_of_band_process_actions_need_a_process() -> None:
    faults = Faults()
    faults.add(Fault("*", CrashProcess(), times=None))
    assert faults.plan(call("get_sandbox")).empty
    plan = faults.plan(call("connect_process", process_id="proc-1"))
    assert plan.out_of_band == ((CrashProcess(), Aim("sb-1", "proc-1", account="acct-1")),)
    named = Faults()
    named.add(Fault("whoami", EvictOutput(up_to_seq=3, sandbox_id="sb-5", process_id="p")))
    assert named.plan(call("whoami", sandbox_id=None)).out_of_band == (
        (
            EvictOutput(up_to_seq=3, sandbox_id="sb-5", process_id="p"),
            Aim("sb-5", "p", account="acct-1"),
        ),
    )


def test_a_firing_records_operation_request_and_fake_time() -> None:
    clock = VirtualClock(autojump=False)
    clock.advance(12.5)
    faults = Faults(clock=clock)
    heard: list[FaultFiring] = []
    faults.listeners.append(heard.append)
    fault = faults.add(Fault("resume_sandbox", HttpError(503)))
    faults.plan(call("resume_sandbox", method="POST", path="/v1/sandboxes/sb-1/resume"))
    [firing] = faults.fired
    assert heard == [firing]
    assert firing.fault is fault
    assert (firing.operation, firing.method, firing.at) == ("resume_sandbox", "POST", 12.5)
    assert firing.format() == (
        "t=12.500 fault#1 HttpError(status=503, retry_after=None, code=None, message=None) "
        "on resume_sandbox POST /v1/sandboxes/sb-1/resume"
    )
    assert faults.format() == firing.format()
    clock.close()


def test_clear_disarms_and_forgets() -> None:
    faults = Faults()
    fault = faults.add(Fault("get_sandbox", HttpError(503)))
    faults.plan(call())
    faults.clear()
    assert (faults.faults, faults.fired, faults.unfired()) == ([], [], [])
    with pytest.raises(KeyError):
        faults.fire_count(fault)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: Fault("resme_sandbox", HttpError(503)), "unknown operation 'resme_sandbox'"),
        (
            lambda: Fault("get_sandbox", CutStream(after_frames=1)),
            "CutStream applies only to: connect_process, exec_stream",
        ),
        (
            lambda: Fault("get_sandbox", CutStream(after_bytes=1)),
            "CutStream applies only to: connect_process, download_file, exec_stream",
        ),
        (
            lambda: Fault("connect_process", TruncatedDownload(5)),
            "TruncatedDownload applies only to: download_file",
        ),
        (lambda: Fault("exec", HttpError(503), times=0), "times must be an integer >= 1"),
        (lambda: Fault("exec", HttpError(503), after=-1), "after must be an integer >= 0"),
        (lambda: Fault("exec", HttpError(503), probability=1.5), "probability must be a number"),
        (lambda: HttpError(302), "status must be an HTTP error status between 400 and 599"),
        (lambda: HttpError(429, retry_after=-1), "retry_after must be an integer >= 0"),
        (lambda: CutStream(), "CutStream needs exactly one of after_frames or after_bytes"),
        (lambda: StallStream(seconds=float("inf")), "seconds must be a number of seconds"),
        (
            lambda: SetStatus("zombie"),
            "status must be one of: creating, destroyed, destroying, error, failed, forking, "
            "paused, pausing, resuming, running",
        ),
        (lambda: TamperFile("relative"), "path must be absolute"),
        (lambda: CrashProcess("kill"), "signal must look like SIGKILL"),
        (lambda: Latency(-1), "seconds must be a number of seconds between 0 and 1000000000"),
    ],
)
def test_bad_faults_are_rejected_with_a_clear_message(build: object, message: str) -> None:
    with pytest.raises(ValueError) as info:
        build()  # type: ignore[operator]
    assert str(info.value).startswith(message)


def test_adding_the_same_fault_twice_is_an_error() -> None:
    faults = Faults()
    fault = faults.add(Fault("exec", HttpError(503)))
    with pytest.raises(ValueError, match=r"^this Fault is already armed$"):
        faults.add(fault)


#: Stands for the fake's world: the recorder below never reads it.
WORLD = cast("World", object())


@pytest.fixture(name="applied")
def _applied(monkeypatch: pytest.MonkeyPatch) -> list[tuple[object, ...]]:
    """Each out-of-band action applied, as ``(kind, *what it aims at)``, instead of its change;
    ``forget`` of ``gone`` fails as for a vanished sandbox."""
    seen: list[tuple[object, ...]] = []

    def record(action: OutOfBandAction, world: World, aim: Aim) -> None:
        assert world is WORLD
        if isinstance(action, Forget) and aim.sandbox_id == "gone":
            raise UnknownTargetError("no such sandbox")
        fields = {k: v for k, v in vars(action).items() if v is not None}
        seen.append((action.kind, {**fields, **_aimed(aim)}))

    for cls in ACTION_TYPES.values():
        if issubclass(cls, OutOfBandAction):
            monkeypatch.setattr(cls, "apply", record)
    return seen


def _aimed(aim: Aim) -> dict[str, str]:
    return {name: getattr(aim, name) for name in (*AIM_IDS, "account") if getattr(aim, name)}


def test_direct_out_of_band_changes_reach_the_world(applied: list[tuple[object, ...]]) -> None:
    faults = Faults(world=WORLD)
    faults.set_status("sb-1", "error")
    faults.forget("sb-1")
    faults.tamper_file("sb-1", "/m", b"x")
    faults.evict_output("sb-1", "p-1")
    faults.crash_process("sb-1", "p-1", "SIGTERM")
    assert applied == [
        ("set_status", {"status": "error", "sandbox_id": "sb-1"}),
        ("forget", {"sandbox_id": "sb-1"}),
        ("tamper_file", {"path": "/m", "data": b"x", "sandbox_id": "sb-1"}),
        ("evict_output", {"sandbox_id": "sb-1", "process_id": "p-1"}),
        ("crash_process", {"signal": "SIGTERM", "sandbox_id": "sb-1", "process_id": "p-1"}),
    ]
    with pytest.raises(ValueError, match=r"^signal must look like SIGKILL$"):
        faults.crash_process("sb-1", "p-1", "9")


def test_resource_changes_aim_at_their_own_ids_or_the_call_s(
    applied: list[tuple[object, ...]],
) -> None:
    faults = Faults(world=WORLD)
    faults.vanish_network("net_1")
    faults.detach_disk("disk_1", "sb-1", "/mnt/d")
    faults.fail_template_build("tpl_1", "no space")
    faults.apply_now(VanishNetwork("net_2"), account="acct-2")
    assert applied == [
        ("vanish_network", {"network_id": "net_1"}),
        ("detach_disk", {"disk_id": "disk_1", "sandbox_id": "sb-1", "mount_path": "/mnt/d"}),
        ("fail_template_build", {"template_id": "tpl_1", "reason": "no space"}),
        ("vanish_network", {"network_id": "net_2", "account": "acct-2"}),
    ]
    with pytest.raises(ValueError, match=r"^VanishNetwork needs network_id$"):
        faults.apply_now(VanishNetwork())
    with pytest.raises(ValueError, match=r"^CrashProcess needs process_id$"):
        faults.apply_now(CrashProcess(), "sb-1")
    armed = Faults(world=WORLD)
    armed.add(Fault("*", FailTemplateBuild(), times=None))
    assert armed.plan(call("get_sandbox")).empty  # no template named: not matched
    plan = armed.plan(call("get_template", sandbox_id=None, template_id="tpl_9"))
    assert plan.out_of_band == ((FailTemplateBuild(), Aim(template_id="tpl_9", account="acct-1")),)
    armed.add(Fault("detach_disk", DetachDisk()))
    plan = armed.plan(call("detach_disk", disk_id="disk_3"))
    assert plan.out_of_band[0][1] == Aim("sb-1", disk_id="disk_3", account="acct-1")
    with pytest.raises(ValueError, match=r"^reason must be one line of 1 to 200 characters$"):
        FailTemplateBuild(reason="two\nlines")
    with pytest.raises(ValueError, match=r"^mount_path must be an absolute path$"):
        DetachDisk("disk_1", mount_path="mnt")


def test_planned_out_of_band_changes_skip_vanished_targets(
    applied: list[tuple[object, ...]],
) -> None:
    faults = Faults(world=WORLD)
    faults.add(Fault("get_sandbox", Forget()))
    faults.add(Fault("get_sandbox", SetStatus("failed")))
    faults.apply_out_of_band(faults.plan(call(sandbox_id="gone")))
    assert applied == [
        ("set_status", {"status": "failed", "sandbox_id": "gone", "account": "acct-1"})
    ]


def test_direct_changes_need_a_started_fake() -> None:
    with pytest.raises(RuntimeError, match=r"^out-of-band changes need a started fake$"):
        Faults().forget("sb-1")
