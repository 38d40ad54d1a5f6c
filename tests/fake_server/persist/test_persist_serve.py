"""``createos-fake serve --state-dir`` as a user runs it: a subprocess stopped cleanly
(SIGTERM) or killed (SIGKILL) and started again on the same directory, on both runtimes; and
the directories it refuses, with exit status 2 and a message naming the path and the cause."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest
from createos import Client, CreateSandboxRequest, RunCommandRequest

from tests._helpers import followed_build_log, running_below, settled
from tests.fake_server.persist._persist_scenario import check_world, make_world

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.reliability


class Served:
    """One ``serve`` process and what it printed."""

    def __init__(self, state: Path, runtime: str) -> None:
        command = [
            sys.executable, "-m", "fake_server", "serve", "--port", "0", "--quiet",
            "--transitions", "immediate", "--runtime", runtime, "--state-dir", str(state),
        ]  # fmt: skip
        self.process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        assert self.process.stdout is not None
        self.lines: list[str] = []
        while line := self.process.stdout.readline():
            self.lines.append(line.rstrip("\n"))
            if line.startswith("control key: "):
                break
        assert self.lines, self.process.communicate()[1]
        self.origin = self.lines[0].split()[2]
        key = next(x for x in self.lines if x.startswith("export CREATEOS_API_KEY="))
        self.key = key.split("=", 1)[1]
        self.state = next(x for x in self.lines if x.startswith("state: "))

    def stop(self, how: signal.Signals) -> tuple[str, str]:
        self.process.send_signal(how)
        out, err = self.process.communicate(timeout=30)
        return out, err


@pytest.fixture(name="served")
def _served(tmp_path: Path) -> Iterator[list[Served]]:
    started: list[Served] = []
    yield started
    for item in started:
        if item.process.poll() is None:
            item.process.kill()
            item.process.wait()


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL], ids=["clean-stop", "kill-9"])
@pytest.mark.parametrize("runtime", ["bashkit", "process"])
def test_a_restart_brings_every_sandbox_back_paused(
    tmp_path: Path, served: list[Served], runtime: str, how: signal.Signals
) -> None:
    state = tmp_path / "state"
    first = Served(state, runtime)
    served.append(first)
    assert first.state == f"state: {state} (new)"
    with Client(first.key, base_url=first.origin) as client:
        made = make_world(client, disks=True)
        # A build on the process runtime runs after its create answered (a restart during it
        # ends it failed): follow it to its end, which the read saves.
        _follow_build(first, made.template)
    if how == signal.SIGKILL:
        # A change is written milliseconds after its answer (no answer waits on SQLite):
        # kill once the last one, the template's build, is in the database.
        _until_stored(state, made.template, absent='"running": true')
    out, err = first.stop(how)
    assert err == ""
    if how == signal.SIGTERM:
        assert first.process.returncode == 0
        assert out.strip("\n").splitlines()[1:] == [
            f"createos-fake: saving the state to {state}",
            "createos-fake: stopped",
        ]
    else:
        assert first.process.returncode == -signal.SIGKILL

    second = Served(state, runtime)
    served.append(second)
    assert second.key == first.key
    assert second.state == (
        f"state: {state} (restored 1 account(s) and 3 sandbox(es); "
        "1 that were running came back paused)"
    )
    with Client(second.key, base_url=second.origin) as client:
        check_world(client, second.key, made)
    assert second.stop(signal.SIGTERM)[1] == ""
    assert second.process.returncode == 0
    if runtime == "process":  # destroyed sandboxes leave no directory behind; the bucket and
        # the template's layer (the template is kept) stay
        assert sorted(p.name for p in (state / "sandboxes").iterdir()) == [".layers"]
        assert len(list((state / "sandboxes" / ".layers").iterdir())) == 1
        buckets = list((state / "disks").iterdir())
        assert [(b / "kept.txt").read_text() for b in buckets] == ["on-disk\n"]


def _follow_build(served: Served, template_id: str) -> None:
    """Read the build's followed log to its final event (the build ended)."""
    events = followed_build_log(served.origin, served.key, template_id)
    assert events[-1] == {"final": True, "status": "ready", "attempt": 1}, events


def _until_stored(state: Path, text: str, *, absent: str = "") -> None:
    deadline = time.monotonic() + 30
    while True:
        with contextlib.closing(sqlite3.connect(state / "state.sqlite3")) as db:
            rows = [data for (data,) in db.execute("SELECT data FROM accounts")]
            if any(text in data and not (absent and absent in data) for data in rows):
                return
        assert time.monotonic() < deadline, "the last change was not written within 30 s"
        time.sleep(0.01)


def _refused(state: Path, *prefix: str) -> subprocess.CompletedProcess[str]:
    command = [
        *prefix, sys.executable, "-m", "fake_server", "serve", "--port", "0",
        "--runtime", "bashkit", "--state-dir", str(state),
    ]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


def test_a_read_only_state_directory_is_refused(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    if os.geteuid() == 0:  # root writes anywhere: a read-only mount, in a mount namespace
        unshare = shutil.which("unshare")  # of the command's own (gone with it)
        assert unshare is not None
        script = f'mount --bind -o ro "{state}" "{state}" && exec "$@"'
        done = _refused(state, unshare, "--mount", "sh", "-c", script, "sh")
        cause = "read-only: Read-only file system"
    else:
        state.chmod(0o555)
        done = _refused(state)
        cause = "not writable: Permission denied"
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"createos-fake: state directory {state} is {cause}\n"
    assert list(state.iterdir()) == []


def test_a_state_directory_of_another_user_is_refused(tmp_path: Path) -> None:
    me = os.geteuid()
    if me == 0:
        state = tmp_path / "state"
        state.mkdir()
        os.chown(state, 65534, 65534)
        owner = 65534
    else:  # a directory root owns
        state, owner = Path("/var"), 0
    done = _refused(state)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"createos-fake: state directory {state} is owned by uid {owner}, not by this user "
        f"(uid {me}); use a directory of your own\n"
    )
    if me == 0:
        assert list(state.iterdir()) == []


#: A build the test stops during its second step: ``sleep 20`` is running when it does.
SLOW_BUILD = (
    "FROM nodeops/sandbox:debian\nRUN echo first > /opt/first\nRUN sleep 20 && echo slept\n"
)
SLEEP = b"sleep\x0020\x00"


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL], ids=["clean-stop", "kill-9"])
def test_a_restart_during_a_build_builds_the_template_again(
    tmp_path: Path, served: list[Served], how: signal.Signals
) -> None:
    """A stop of ``serve --state-dir`` during a process-runtime build cancels it (its build
    sandbox goes: processes and directory; after a kill -9, at the next start); the next start
    builds the template again from its Dockerfile as attempt 2 (the TS SDK's
    ``TemplateLogEvent.attempt``), ``building`` until it ends ``ready``, and a sandbox of it
    has the build's files."""
    state = tmp_path / "state"
    first = Served(state, "process")
    served.append(first)
    headers = {"X-Api-Key": first.key}
    body = {"name": "slow", "dockerfile": SLOW_BUILD}
    made = httpx.post(f"{first.origin}/v1/templates", json=body, headers=headers, timeout=30)
    assert made.status_code == 201
    template_id = made.json()["data"]["id"]
    assert settled(lambda: running_below(first.process.pid, SLEEP) != [], 60)
    builds = list((state / "sandboxes").glob("build-*"))
    assert len(builds) == 1
    _out, err = first.stop(how)
    assert (first.process.returncode, err) == (0 if how == signal.SIGTERM else -how, "")
    if how == signal.SIGTERM:
        # the build went with the fake: no process, no build sandbox's directory, no layer
        assert running_below(os.getpid(), SLEEP) == []
        assert [p.name for p in (state / "sandboxes").glob("build-*")] == []
        assert not (state / "sandboxes" / ".layers").exists() or not any(
            (state / "sandboxes" / ".layers").iterdir()
        )

    second = Served(state, "process")
    served.append(second)
    assert not builds[0].exists()  # a killed fake's is removed at the next start
    headers = {"X-Api-Key": second.key}
    detail = httpx.get(f"{second.origin}/v1/templates/{template_id}", headers=headers, timeout=30)
    assert detail.json()["data"]["status"] == "building"
    events = followed_build_log(second.origin, second.key, template_id)
    assert events[-1] == {"final": True, "status": "ready", "attempt": 2}, events
    lines = [(event["attempt"], event["line"]) for event in events if "line" in event]
    earlier = [line for attempt, line in lines if attempt == 1]
    steps = [
        "Step 1/3 : FROM nodeops/sandbox:debian",
        "Step 2/3 : RUN echo first > /opt/first",
        "Step 3/3 : RUN sleep 20 && echo slept",
    ]
    # a clean stop saved every line; a killed fake, those saved before it was killed (the
    # create's, at least)
    assert earlier == steps if how == signal.SIGTERM else steps[: len(earlier)] == earlier
    assert earlier
    assert lines[len(earlier) :] == [
        (2, "the fake stopped during build attempt 1: building again from the Dockerfile"),
        (2, "Step 1/3 : FROM nodeops/sandbox:debian"),
        (2, "Step 2/3 : RUN echo first > /opt/first"),
        (2, "Step 3/3 : RUN sleep 20 && echo slept"),
        (2, "slept"),
        (2, "built template slow on devbox:1"),
    ]
    url = f"{second.origin}/v1/templates/{template_id}/logs"
    only_first = httpx.get(url, params={"attempt": "1"}, headers=headers, timeout=30)
    assert only_first.text.splitlines() == [line for attempt, line in lines if attempt == 1]
    beyond = httpx.get(url, params={"attempt": "3"}, headers=headers, timeout=30)
    assert (beyond.status_code, beyond.json()) == (
        404,
        {
            "status": "fail",
            "data": {"code": "attempt_not_found", "message": "build attempt not found"},
        },
    )
    with Client(second.key, base_url=second.origin) as client:
        sandbox = client.create_sandbox(CreateSandboxRequest(shape="s-1vcpu-1gb", rootfs="slow"))
        sandbox.wait_until_running()
        result = sandbox.run_command(RunCommandRequest(command="cat", arguments=["/opt/first"]))
        assert (result.result.exit_code, result.result.standard_output) == (0, "first\n")
    assert second.stop(signal.SIGTERM)[1] == ""
    assert [p.name for p in (state / "sandboxes").glob("build-*")] == []
    assert len(list((state / "sandboxes" / ".layers").iterdir())) == 1


def test_a_read_reaches_the_disk_before_a_kill_with_no_request_after_it(
    tmp_path: Path, served: list[Served]
) -> None:
    """A read changes nothing saved, yet its journal events are written within a quarter
    second by a timer: a fake killed after that quiet wait comes back with them."""
    state = tmp_path / "state"
    first = Served(state, "bashkit")
    served.append(first)
    with Client(first.key, base_url=first.origin) as client:
        sandbox = client.create_sandbox(CreateSandboxRequest(shape="s-1vcpu-1gb"))
        client.get_sandbox(sandbox.id)  # the last request: nothing follows it
    _until_journalled(state, "get_sandbox")
    first.stop(signal.SIGKILL)
    assert first.process.returncode == -signal.SIGKILL

    second = Served(state, "bashkit")
    served.append(second)
    control = next(x for x in second.lines if x.startswith("control key: ")).split(": ", 1)[1]
    reply = httpx.get(f"{second.origin}/_fake/journal", headers={"X-Fake-Control-Key": control})
    reads = [
        e["kind"]
        for e in reply.json()["data"]["events"]
        if e["operation"] == "get_sandbox" and e.get("sandbox_id") == sandbox.id
    ]
    assert reads == ["request", "response"]
    assert second.stop(signal.SIGTERM)[1] == ""


def _until_journalled(state: Path, operation: str) -> None:
    deadline = time.monotonic() + 30
    while True:
        with contextlib.closing(sqlite3.connect(state / "state.sqlite3")) as db:
            if any(operation in data for (data,) in db.execute("SELECT data FROM journal")):
                return
        assert time.monotonic() < deadline, f"no {operation} event was written within 30 s"
        time.sleep(0.01)
