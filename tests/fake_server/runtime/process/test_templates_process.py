"""Template builds on the process runtime, through the official Python SDK and httpx: ``RUN``
steps run in a contained build sandbox on the devbox image, and sandboxes start from the
result (issue 30 item 11; the TS SDK's how-to/disks-networks-templates.md builds
``RUN apt-get install -y ripgrep`` and runs ``rg`` in a sandbox of the template).

The ripgrep test reaches past the machine, as ``tests/security/test_apt.py`` does: the build
installs a small package from the Debian archive the host's apt uses, through the fake's NAT."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from createos import Client
from createos.models import CreateSandboxRequest, RunCommandRequest, TemplateCreateRequest

from fake_server import FakeCreateOS, TransitionPolicy, tls_context
from fake_server.runtime.netoptions import NetworkOptions
from fake_server.runtime.process import ProcessRuntime
from fake_server.runtime.process.containment import seccomp
from fake_server.runtime.process.net.resolver import host_resolver
from tests._helpers import followed_build_log, running_below, settled
from tests.fake_server._process_runtime import bwrap_descendants, needs_nft

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from createos.instance import SandboxInstance

pytestmark = pytest.mark.reliability

#: The how-to's template, with the index update a fresh image needs before an install.
RIPGREP = "FROM nodeops/sandbox:debian\nRUN apt-get update && apt-get install -y ripgrep\n"


@pytest.fixture(name="fake", scope="module")
def _fake() -> Iterator[FakeCreateOS]:
    """A process-runtime fake whose sandboxes resolve names through the host's resolver (the
    suite's fakes otherwise answer no query: ``tests/conftest.py``)."""
    network = NetworkOptions(dns_upstream=host_resolver())
    fake = FakeCreateOS(
        transitions=TransitionPolicy.immediate(), runtime="process", network=network
    ).start()
    yield fake
    fake.close()


@pytest.fixture(name="sdk")
def _sdk(fake: FakeCreateOS) -> Iterator[Client]:
    fake.reset()
    with (
        httpx.Client(verify=tls_context()) as http,
        Client(fake.api_key, base_url=fake.url, http_client=http) as client,
    ):
        yield client
    assert fake.errors == []


def _runtime(fake: FakeCreateOS) -> ProcessRuntime:
    runtime = fake.runtimes.get("process")
    assert isinstance(runtime, ProcessRuntime)
    return runtime


def _build(fake: FakeCreateOS, sdk: Client, name: str, dockerfile: str) -> list[dict[str, Any]]:
    """Create the template and follow its build log to the end (the SDK 0.1's
    ``follow_logs`` cannot decode events): every event, the final one last."""
    template = sdk.templates.create(TemplateCreateRequest(name=name, dockerfile=dockerfile))
    assert template.status.value == "pending"  # the create answers before the build runs
    # apt-get fetching from the archive: the stream's bound, not a wait
    return followed_build_log(
        fake.url, fake.api_key, template.id, timeout=600, verify=tls_context()
    )


def _lines(events: list[dict[str, Any]]) -> list[str]:
    return [event["line"] for event in events if "line" in event]


def _sandbox(sdk: Client, rootfs: str) -> SandboxInstance:
    sandbox = sdk.create_sandbox(CreateSandboxRequest(shape="s-1vcpu-1gb", rootfs=rootfs))
    sandbox.wait_until_running()
    return sandbox


def _sh(sandbox: SandboxInstance, script: str) -> tuple[int, str]:
    request = RunCommandRequest(command="bash", arguments=["-c", script])
    result = sandbox.run_command(request).result
    return result.exit_code, result.standard_output + result.standard_error


def _no_build_left(fake: FakeCreateOS) -> None:
    """No build sandbox is left: not running, not on disk."""
    runtime = _runtime(fake)
    assert [name for name in runtime.machines if name.startswith("build-")] == []
    assert [p.name for p in runtime.fake_root.path.glob("build-*")] == []


@needs_nft
@pytest.mark.skipif(host_resolver() is None, reason="the host has no resolver to relay to")
def test_the_how_tos_ripgrep_template_builds_and_its_sandboxes_run_rg(
    fake: FakeCreateOS, sdk: Client
) -> None:
    events = _build(fake, sdk, "with-ripgrep", RIPGREP)
    lines = _lines(events)
    assert events[-1] == {"final": True, "status": "ready", "attempt": 1}, lines[-20:]
    assert lines[:2] == [
        "Step 1/2 : FROM nodeops/sandbox:debian",
        "Step 2/2 : RUN apt-get update && apt-get install -y ripgrep",
    ]
    assert any(line.startswith("Setting up ripgrep ") for line in lines), lines[-20:]
    assert lines[-1] == "built template with-ripgrep on devbox:1"
    template = sdk.templates.get("with-ripgrep")
    assert (template.status.value, template.base) == ("ready", "devbox:1")
    assert template.ext4_size_bytes > 0
    _no_build_left(fake)

    sandbox = _sandbox(sdk, "with-ripgrep")
    code, out = _sh(sandbox, "rg --version | head -1; printf 'a\\nneedle\\n' | rg needle")
    assert code == 0, out
    assert out.startswith("ripgrep "), out
    assert out.endswith("\nneedle\n"), out
    # the base image's sandboxes are untouched by the build
    assert _sh(_sandbox(sdk, "devbox:1"), "command -v rg") == (1, "")


def test_a_failing_run_step_ends_the_template_failed_with_the_step_and_its_status(
    fake: FakeCreateOS, sdk: Client
) -> None:
    dockerfile = (
        "FROM nodeops/sandbox:debian\n"
        "RUN test -x /usr/bin/apt-get && echo first > /opt/first\n"
        "# the step that fails\n"
        "RUN echo about to fail && cat /opt/first && exit 3\n"
        "RUN echo never\n"
    )
    events = _build(fake, sdk, "fails", dockerfile)
    assert _lines(events) == [
        "Step 1/4 : FROM nodeops/sandbox:debian",
        "Step 2/4 : RUN test -x /usr/bin/apt-get && echo first > /opt/first",
        "Step 3/4 : RUN echo about to fail && cat /opt/first && exit 3",
        "about to fail",
        "first",
        "build failed at line 4: RUN exited with status 3",
    ]
    assert events[-2]["level"] == "error"
    assert events[-1] == {"final": True, "status": "failed", "attempt": 1}
    template = sdk.templates.get("fails")
    assert (template.status.value, template.ext4_size_bytes) == ("failed", 0)
    assert sdk.templates.logs(template.id).splitlines()[-1] == (
        "build failed at line 4: RUN exited with status 3"
    )
    reply = httpx.post(
        f"{fake.url}/v1/sandboxes",
        json={"shape": "s-1vcpu-1gb", "rootfs": "fails"},
        headers={"X-Api-Key": fake.api_key},
        verify=tls_context(),
    )
    assert (reply.status_code, reply.json()) == (
        400,
        {"status": "fail", "data": {"rootfs": "template is not ready (status failed)"}},
    )
    # nothing of the failed build is left: no build sandbox, no layer
    _no_build_left(fake)
    layers = _runtime(fake).fake_root.path / ".layers"
    assert not layers.exists() or list(layers.iterdir()) == []


def test_a_build_is_contained_as_a_sandbox_is(
    fake: FakeCreateOS, sdk: Client, tmp_path: Path
) -> None:
    outside = tmp_path / "escape"  # a host path the build writes to: only its own gets it
    runtime = _runtime(fake)
    dockerfile = (
        "FROM nodeops/sandbox:debian\n"
        'RUN id -u && awk \'{print $1, ($2 == 0 ? "host root" : "unprivileged"), $3}\' '
        "/proc/self/uid_map\n"
        "RUN grep '^Seccomp:' /proc/self/status\n"
        f"RUN mkdir -p {outside} && echo escaped > {outside}/marker && echo written\n"
        f"RUN ls {runtime.fake_root.path} /work 2>&1 | sed 's/^.*cannot access //' || true\n"
    )
    events = _build(fake, sdk, "contained", dockerfile)
    filtered = "2" if seccomp.available() is None else "0"
    assert _lines(events) == [
        "Step 1/5 : FROM nodeops/sandbox:debian",
        'Step 2/5 : RUN id -u && awk \'{print $1, ($2 == 0 ? "host root" : "unprivileged"), '
        "$3}' /proc/self/uid_map",
        "0",
        "0 unprivileged 65536",
        "Step 3/5 : RUN grep '^Seccomp:' /proc/self/status",
        f"Seccomp:\t{filtered}",
        f"Step 4/5 : RUN mkdir -p {outside} && echo escaped > {outside}/marker && echo written",
        "written",
        f"Step 5/5 : RUN ls {runtime.fake_root.path} /work 2>&1 | sed 's/^.*cannot access //'"
        " || true",
        f"'{runtime.fake_root.path}': No such file or directory",
        "'/work': No such file or directory",
        "built template contained on devbox:1",
    ]
    assert not outside.exists()  # the host never saw the write
    sandbox = _sandbox(sdk, "contained")
    assert _sh(sandbox, f"cat {outside}/marker") == (0, "escaped\n")  # the template has it
    _no_build_left(fake)
    layers = runtime.fake_root.path / ".layers"
    assert len(list(layers.iterdir())) == 1
    sdk.templates.delete("contained")  # its layer goes; the sandbox keeps its copy
    assert list(layers.iterdir()) == []
    assert _sh(sandbox, f"cat {outside}/marker") == (0, "escaped\n")


def test_closing_the_fake_cancels_a_build_and_leaves_nothing() -> None:
    """FakeCreateOS.close during a build (issue 30): its build sandbox's processes are killed,
    its directories removed, its task ended; nothing of the fake's is left on the host."""
    before = set(bwrap_descendants())  # the module's fake's sandboxes, if it runs
    fake = FakeCreateOS(transitions=TransitionPolicy.immediate(), runtime="process").start()
    runtime = _runtime(fake)
    try:
        reply = httpx.post(
            f"{fake.url}/v1/templates",
            json={"name": "slow", "dockerfile": "FROM nodeops/sandbox:debian\nRUN sleep 300\n"},
            headers={"X-Api-Key": fake.api_key},
            verify=tls_context(),
        )
        assert reply.status_code == 201
        assert settled(lambda: running_below(os.getpid(), b"sleep\x00300\x00") != [], 60)
        [build] = [m for name, m in runtime.machines.items() if name.startswith("build-")]
        [template] = next(iter(fake.world.accounts.values())).resources.templates.items.values()
        task = template.task
        assert task is not None
        root = runtime.fake_root.path
        assert build.directory.is_dir()
    finally:
        fake.close()
    assert task.cancelled()
    assert running_below(os.getpid(), b"sleep\x00300\x00") == []
    assert set(bwrap_descendants()) <= before
    assert not build.directory.exists()
    assert not root.exists()
    assert runtime.machines == {}
    assert fake.errors == []
