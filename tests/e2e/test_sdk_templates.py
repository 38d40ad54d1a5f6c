"""Templates through the official SDK: Dockerfile builds on the fake clock, build logs plain
and followed, sandboxes from a template, failed builds and refused Dockerfiles."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import httpx
import pytest
from createos import APIError, Client
from createos.models import (
    GetTemplateOptions,
    PaginationOptions,
    RunCommandRequest,
    TemplateCreateRequest,
    TemplateInclude,
    TemplateLogsOptions,
    TemplateStatus,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from createos.instance import SandboxInstance

    from fake_server import FakeCreateOS

DOCKERFILE = """FROM nodeops/sandbox:debian
# tools for the app
ENV APP_HOME=/opt/app GREETING="hello there"
WORKDIR /opt/app
RUN echo building in $(pwd) \\
 && echo v1 > version
EXPOSE 8080
"""


def _error(call: Callable[[], object]) -> APIError:
    with pytest.raises(APIError) as caught:
        call()
    return caught.value


def _settle(sdk: Client, rfake: FakeCreateOS, template_id: str) -> TemplateStatus:
    for _ in range(20):
        status = sdk.templates.get(template_id).status
        if status not in (TemplateStatus.PENDING, TemplateStatus.BUILDING):
            return status
        rfake.clock.advance(0.5)  # type: ignore[attr-defined]
    raise AssertionError("the build never ended")


def test_build_states_follow_the_fake_clock(sdk: Client, rfake: FakeCreateOS) -> None:
    template = sdk.templates.create(TemplateCreateRequest(name="app", dockerfile=DOCKERFILE))
    assert (template.status, template.base, template.built_at) == (
        TemplateStatus.PENDING,
        "devbox:1",
        None,
    )
    rfake.clock.advance(1.0)  # type: ignore[attr-defined]
    assert sdk.templates.get(template.id).status is TemplateStatus.BUILDING
    assert sdk.templates.logs(template.id).splitlines() == [
        "Step 1/5 : FROM nodeops/sandbox:debian"
    ]
    rfake.clock.advance(2.5)  # type: ignore[attr-defined]
    ready = sdk.templates.get(template.id)
    assert ready.status is TemplateStatus.READY
    assert ready.built_at is not None
    assert ready.ext4_size_bytes > 0
    assert ready.dockerfile == ""
    detail = sdk.templates.get(template.id, GetTemplateOptions(include=TemplateInclude.DOCKERFILE))
    assert detail.dockerfile == DOCKERFILE
    log = sdk.templates.logs(template.id, TemplateLogsOptions(attempt=1))
    assert log.splitlines() == [
        "Step 1/5 : FROM nodeops/sandbox:debian",
        'Step 2/5 : ENV APP_HOME=/opt/app GREETING="hello there"',
        "Step 3/5 : WORKDIR /opt/app",
        "note: WORKDIR applies to the following RUN lines; sandboxes still start in "
        "/root (the fake does not change their default directory)",
        "Step 4/5 : RUN echo building in $(pwd) && echo v1 > version",
        "building in /opt/app",
        "Step 5/5 : EXPOSE 8080",
        "not honoured by the fake: EXPOSE (line 7): ports are reached through ingress",
        "built template app on devbox:1",
    ]


def test_sandbox_from_template_has_its_files_and_env(
    sdk: Client, rfake: FakeCreateOS, running: Callable[..., SandboxInstance]
) -> None:
    rfake.world.ctx.resources.template_pending_seconds = 0.0
    template = sdk.templates.create(TemplateCreateRequest(name="app", dockerfile=DOCKERFILE))
    not_ready = _error(lambda: running(rootfs=template.id))
    assert not_ready.status_code == 400
    assert str(not_ready).endswith("rootfs: template is not ready (status building)")
    assert _settle(sdk, rfake, template.id) is TemplateStatus.READY
    for rootfs in (template.id, "app"):
        sandbox = running(rootfs=rootfs)
        result = sandbox.run_command(
            RunCommandRequest(
                command="bash", arguments=["-c", "cat /opt/app/version; echo $GREETING"]
            )
        ).result
        assert (result.exit_code, result.standard_output) == (0, "v1\nhello there\n")
    sdk.templates.delete(template.id)
    assert (
        sandbox.run_command(
            RunCommandRequest(command="cat", arguments=["/opt/app/version"])
        ).result.standard_output
        == "v1\n"
    )
    assert _error(lambda: sdk.templates.get(template.id)).status_code == 404


def test_follow_logs_streams_ndjson_with_a_final_event(sdk: Client, rfake: FakeCreateOS) -> None:
    template = sdk.templates.create(TemplateCreateRequest(name="app", dockerfile=DOCKERFILE))
    # The SDK 0.1.x decoder cannot build a TemplateLogEvent (zero-argument super() in a slots
    # dataclass raises TypeError): its own example treats the stream as optional. The stream
    # itself is checked below on the wire.
    with pytest.raises(TypeError, match="super"):
        with sdk.templates.follow_logs(template.id) as stream:
            next(stream)
    headers = {"X-Api-Key": rfake.api_key}
    with httpx.stream(
        "GET",
        f"{rfake.url}/v1/templates/{template.id}/logs",
        params={"follow": "true"},
        headers=headers,
        timeout=30,
    ) as response:
        assert response.headers["Content-Type"] == "application/x-ndjson"
        events = [json.loads(line) for line in response.iter_lines() if line]
    assert events[0]["line"] == "Step 1/5 : FROM nodeops/sandbox:debian"
    assert {e["level"] for e in events[:-1]} == {"info", "warn"}
    assert events[-1] == {"final": True, "status": "ready", "attempt": 1}
    assert sdk.templates.get(template.id).status is TemplateStatus.READY


def test_failed_builds_end_failed_with_the_reason(
    sdk: Client, rfake: FakeCreateOS, running: Callable[..., SandboxInstance]
) -> None:
    rfake.world.ctx.resources.template_pending_seconds = 0.0
    unknown = sdk.templates.create(TemplateCreateRequest(name="base", dockerfile="FROM alpine:3\n"))
    failing = sdk.templates.create(
        TemplateCreateRequest(
            name="run", dockerfile="FROM devbox:1\nRUN echo oops >&2; exit 3\nRUN true\n"
        )
    )
    assert _settle(sdk, rfake, unknown.id) is TemplateStatus.FAILED
    assert _settle(sdk, rfake, failing.id) is TemplateStatus.FAILED
    assert sdk.templates.logs(unknown.id).splitlines()[-1] == (
        "build failed at line 1: unknown base image 'alpine:3'"
    )
    assert sdk.templates.logs(failing.id).splitlines()[-2:] == [
        "oops",
        "build failed at line 2: RUN exited with status 3",
    ]
    refused = _error(lambda: running(rootfs=failing.id))
    assert str(refused).endswith("rootfs: template is not ready (status failed)")


def test_refused_dockerfiles_and_limits(sdk: Client, rfake: FakeCreateOS) -> None:
    cases = [
        ("RUN true\n", "dockerfile: must start with a single FROM line"),
        ("FROM devbox:1\nFROM devbox:1\n", "dockerfile: must start with a single FROM line"),
        (
            "FROM devbox:1\nCOPY . /app\n",
            "dockerfile: line 2: COPY and ADD are not permitted; bring content in with RUN",
        ),
        ("   \n", "dockerfile: is required"),
    ]
    for dockerfile, message in cases:
        error = _error(
            lambda d=dockerfile: sdk.templates.create(TemplateCreateRequest(name="x", dockerfile=d))
        )
        assert (error.status_code, str(error).split(": ", 2)[2]) == (400, message)
    bad_base = _error(
        lambda: sdk.templates.create(
            TemplateCreateRequest(name="x", dockerfile="FROM devbox:1\n", base="nope:1")
        )
    )
    assert str(bad_base).endswith("base: unknown rootfs")
    sdk.templates.create(TemplateCreateRequest(name="x", dockerfile="FROM devbox:1\n"))
    assert (
        _error(
            lambda: sdk.templates.create(
                TemplateCreateRequest(name="x", dockerfile="FROM devbox:1\n")
            )
        ).status_code
        == 409
    )
    rfake.world.ctx.resources.max_templates = 1
    quota = _error(
        lambda: sdk.templates.create(TemplateCreateRequest(name="y", dockerfile="FROM devbox:1\n"))
    )
    assert quota.status_code == 403
    assert [t.name for t in sdk.templates.list(PaginationOptions())] == ["x"]
    missing_attempt = _error(lambda: sdk.templates.logs("x", TemplateLogsOptions(attempt=2)))
    assert missing_attempt.status_code == 404


def test_out_of_band_build_failure(sdk: Client, rfake: FakeCreateOS) -> None:
    template = sdk.templates.create(TemplateCreateRequest(name="app", dockerfile=DOCKERFILE))
    rfake.clock.advance(1.6)  # type: ignore[attr-defined]
    rfake.faults.fail_template_build(template.id, "builder node lost")
    assert sdk.templates.get(template.id).status is TemplateStatus.FAILED
    assert sdk.templates.logs(template.id).splitlines()[-1] == "build failed: builder node lost"


def test_a_template_on_desktop_1_has_a_desktop_by_id_and_by_name(
    sdk: Client, rfake: FakeCreateOS, running: Callable[..., SandboxInstance]
) -> None:
    """Computer use works on a sandbox of a template built on desktop:1, named by id or by
    name, and is refused on one built on devbox:1."""
    built = {}
    for name, base in (("with-desktop", "desktop"), ("without", "debian")):
        dockerfile = f"FROM nodeops/sandbox:{base}\nRUN echo hi\n"
        template = sdk.templates.create(TemplateCreateRequest(name=name, dockerfile=dockerfile))
        assert _settle(sdk, rfake, template.id) is TemplateStatus.READY
        built[name] = template.id
    for rootfs in (built["with-desktop"], "with-desktop"):
        geometry = running(rootfs=rootfs, shape="s-2vcpu-4gb").computer.screen()
        assert (geometry.width, geometry.height) == (1280, 800)
    for rootfs in (built["without"], "without"):
        error = _error(running(rootfs=rootfs).computer.screen)
        assert error.status_code == 409
        assert str(error).endswith(
            "code: not_a_desktop; message: computer use needs a desktop rootfs (desktop:1)"
        )
