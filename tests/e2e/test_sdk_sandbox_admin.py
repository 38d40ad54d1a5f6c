"""The official Python SDK's sandbox-settings methods against the fake, through the plugin's
``createos_sdk`` fixture: each call's answer as the service documents it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import httpx
import pytest
from createos import CreateSandboxRequest, ForkSandboxRequest, RunCommandRequest
from createos.errors import APIError
from createos.models import ManagedProcessCreateRequest, PTYSize, SandboxStatus

from fake_server import tls_context

if TYPE_CHECKING:
    from fake_server import FakeCreateOS

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExampleKeyMaterial user@host"


def _create(sdk: Any, **fields: Any) -> Any:
    return sdk.create_sandbox(CreateSandboxRequest(shape="s-1vcpu-1gb", **fields))


def test_create_answers_a_running_sandbox_with_every_field(createos_sdk: Any) -> None:
    sandbox = _create(createos_sdk, rootfs="devbox:1")
    assert sandbox.status == SandboxStatus.RUNNING
    data = sandbox.refresh().data
    assert data.running_at is not None
    assert data.paused_at is None
    assert data.forked_from is None
    assert data.auto_pause_after_seconds is None
    assert data.bandwidth_ingress_bytes == 0
    assert data.ingress_url_template == ""  # absent: ingress is off
    with pytest.raises(ValueError, match="ingress is not enabled"):
        sandbox.preview_url(8080)
    sandbox.destroy()


def test_optional_fields_are_absent_not_null(createos_fake: FakeCreateOS) -> None:
    headers = {"X-Api-Key": createos_fake.api_key}
    created = httpx.post(
        f"{createos_fake.api_url}/sandboxes",
        json={"shape": "s-1vcpu-1gb"},
        headers=headers,
        verify=tls_context(),
    ).json()["data"]
    assert None not in created.values()
    assert "paused_at" not in created
    assert "ingress_url_template" not in created
    assert created["bandwidth_quota_bytes"] == 10 * 1024**3
    httpx.delete(
        f"{createos_fake.api_url}/sandboxes/{created['id']}", headers=headers, verify=tls_context()
    )


def test_ingress_gives_a_preview_url_that_answers_502_with_nothing_listening(
    createos_sdk: Any, createos_fake: FakeCreateOS
) -> None:
    sandbox = _create(createos_sdk, ingress_enabled=True)
    url = sandbox.preview_url(8080)
    assert url == f"{createos_fake.preview_origin}/_ingress/{sandbox.id}/8080/"
    answer = httpx.get(url + "index.html", verify=tls_context())  # public: no API key
    assert answer.status_code == 502
    assert answer.json()["message"] == "no server is listening on port 8080 in the sandbox"
    sandbox.set_ingress(False)
    assert sandbox.data.ingress_enabled is False
    assert httpx.get(url, verify=tls_context()).status_code == 404
    with pytest.raises(ValueError, match="ingress is not enabled"):
        sandbox.preview_url(8080)
    sandbox.set_ingress(True)
    assert sandbox.preview_url(3000).endswith("/3000/")
    sandbox.destroy()


def test_auto_pause_is_set_cleared_and_pauses_an_idle_sandbox(
    createos_sdk: Any, createos_fake: FakeCreateOS
) -> None:
    sandbox = _create(createos_sdk)
    assert sandbox.set_auto_pause(120).data.auto_pause_after_seconds == 120
    assert sandbox.set_auto_pause(None).data.auto_pause_after_seconds is None
    sandbox.set_auto_pause(60)
    sandbox.shell("true")
    createos_fake.clock.advance(59)
    assert sandbox.refresh().status == SandboxStatus.RUNNING
    createos_fake.clock.advance(1)
    assert sandbox.refresh().status == SandboxStatus.PAUSED  # immediate pausing step
    transitions = [e.detail for e in createos_fake.journal.transitions(sandbox.id)]
    assert transitions[-2:] == ["running -> pausing", "pausing -> paused"]
    sandbox.destroy()


def test_auto_pause_out_of_range_is_a_400_naming_the_field(createos_fake: FakeCreateOS) -> None:
    headers = {"X-Api-Key": createos_fake.api_key}
    api = createos_fake.api_url
    sid = httpx.post(
        f"{api}/sandboxes", json={"shape": "s-1vcpu-1gb"}, headers=headers, verify=tls_context()
    ).json()["data"]["id"]
    answer = httpx.patch(
        f"{api}/sandboxes/{sid}",
        json={"auto_pause_after_seconds": 5},
        headers=headers,
        verify=tls_context(),
    )
    assert (answer.status_code, answer.json()) == (
        400,
        {
            "status": "fail",
            "data": {"auto_pause_after_seconds": "must be between 60 and 86400 seconds"},
        },
    )
    httpx.delete(f"{api}/sandboxes/{sid}", headers=headers, verify=tls_context())


def test_fork_of_a_paused_sandbox_copies_files_and_diverges(createos_sdk: Any) -> None:
    base = _create(createos_sdk)
    base.files.upload("/root/seed.txt", b"seed\n")
    with pytest.raises(APIError) as refused:
        base.fork()
    assert refused.value.status_code == 409
    assert "only a paused sandbox can be forked" in str(refused.value)

    base.pause().wait_until_paused()
    clone = base.fork(ForkSandboxRequest(start_paused=True))
    assert clone.status in (SandboxStatus.FORKING, SandboxStatus.PAUSED)
    clone.wait_until_paused()
    assert clone.data.forked_from == base.id
    clone.resume().wait_until_running()
    assert clone.shell("cat /root/seed.txt").result.standard_output == "seed\n"
    clone.files.upload("/root/fork-only.txt", b"fork\n")
    base.resume().wait_until_running()
    missing = base.run_command(
        RunCommandRequest(command="test", arguments=["!", "-e", "/root/fork-only.txt"])
    )
    assert missing.result.exit_code == 0
    clone.destroy()
    base.destroy()


def test_resize_ssh_keys_egress_and_bandwidth(createos_sdk: Any) -> None:
    sandbox = _create(createos_sdk, egress_rules=["pypi.org"])
    assert sandbox.resize(20480).disk_mib == 20480
    assert sandbox.data.disk_mib == 20480
    with pytest.raises(APIError, match="disk_mib: must be larger than the current 20480"):
        sandbox.resize(1024)
    assert sandbox.add_ssh_public_keys([KEY]) == 1
    assert sandbox.add_ssh_public_keys([KEY]) == 1  # the same key once
    with pytest.raises(APIError, match="keys: must be OpenSSH public keys"):
        sandbox.add_ssh_public_keys(["not a key"])
    assert sandbox.egress().egress_rules == ["pypi.org"]
    assert sandbox.set_egress(["github.com:443", "*.example.com"]).egress_rules == [
        "github.com:443",
        "*.example.com",
    ]
    with pytest.raises(APIError) as refused:
        sandbox.set_egress(["no spaces allowed"])
    assert str(refused.value).endswith(
        "HTTP 400: egress: rules must be *, host, *.domain, CIDR, optionally :port"
    )
    curl = RunCommandRequest(command="curl", arguments=["-sS", "https://pypi.org/simple/"])
    unresolved = (6, "curl: (6) Could not resolve host: pypi.org\n")  # allowed: no internet
    named = sandbox.run_command(curl).result  # host names alone are not enforced
    assert (named.exit_code, named.standard_error) == unresolved
    assert sandbox.set_egress(["203.0.113.0/24:443"]).egress_rules == ["203.0.113.0/24:443"]
    blocked = sandbox.run_command(curl).result  # an address rule is: pypi.org is cut off
    assert (blocked.exit_code, blocked.standard_error) == (
        35,
        "curl: (35) Recv failure: Connection reset by peer\n",
    )
    assert sandbox.set_egress(["*"]).egress_rules == ["*"]  # allows all, as no rules do
    allowed = sandbox.run_command(curl).result
    assert (allowed.exit_code, allowed.standard_error) == unresolved
    sandbox.files.upload("/tmp/in.bin", b"x" * 1000)
    with sandbox.files.download("/tmp/in.bin") as download:
        assert len(download.read()) == 1000
    view = sandbox.bandwidth()
    assert (view.ingress_bytes, view.used_bytes, view.capped) == (1000, 1000, False)
    assert view.remaining_bytes == view.quota_bytes - 1000
    assert sandbox.recharge_bandwidth(500).quota_bytes == view.quota_bytes + 500
    with pytest.raises(APIError, match="add_bytes: must be a positive integer"):
        sandbox.recharge_bandwidth(0)
    sandbox.destroy()


def test_lookup_by_ip_and_hosts(createos_sdk: Any) -> None:
    sandbox = _create(createos_sdk)
    assert createos_sdk.get_sandbox_by_ip(sandbox.ip_address).id == sandbox.id
    with pytest.raises(APIError) as missing:
        createos_sdk.get_sandbox_by_ip("192.0.2.1")
    assert missing.value.status_code == 404
    hosts = createos_sdk.list_hosts()
    assert [h.id for h in hosts] == ["host-eu-1", "host-us-1"]
    assert hosts[0].sandbox_count == 1
    assert "devbox:1" in hosts[0].root_file_systems
    sandbox.destroy()


def test_access_tokens_are_scoped_to_their_sandbox(createos_sdk: Any) -> None:
    sandbox = _create(createos_sdk)
    other = _create(createos_sdk)
    assert sandbox.get_access_token().enabled is False
    created = sandbox.create_access_token()
    assert created.enabled is True
    assert created.token.startswith("sbx_")
    meta = sandbox.get_access_token()
    assert meta.enabled is True
    assert meta.token_hint == created.token[:4] + "…" + created.token[-4:]
    delegated = sandbox.with_access_token(created.token)
    assert delegated.shell("echo hi").result.standard_output == "hi\n"
    scoped = other.with_access_token(created.token)
    with pytest.raises(APIError) as forbidden:
        scoped.refresh()
    assert forbidden.value.status_code == 403
    with pytest.raises(APIError) as denied:
        delegated.rotate_access_token()
    assert denied.value.status_code == 403
    rotated = sandbox.rotate_access_token()
    assert rotated.token != created.token
    assert rotated.rotated_at is not None
    with pytest.raises(APIError) as revoked:
        delegated.refresh()
    assert revoked.value.status_code == 401
    assert sandbox.disable_access_token().enabled is False
    assert sandbox.get_access_token().enabled is False
    other.destroy()
    sandbox.destroy()


def test_pty_resize(createos_sdk: Any, createos_fake: FakeCreateOS) -> None:
    sandbox = _create(createos_sdk)
    pty = sandbox.processes.create(ManagedProcessCreateRequest(pty=PTYSize(rows=24, cols=80)))
    sandbox.processes.resize(pty.process_id, PTYSize(rows=40, cols=120))
    assert createos_fake.sandbox(sandbox.id).processes[pty.process_id].pty_size == (40, 120)
    with pytest.raises(APIError, match="rows: must be between 1 and 1000"):
        sandbox.processes.resize(pty.process_id, PTYSize(rows=5000, cols=80))
    plain = sandbox.processes.create(ManagedProcessCreateRequest(command="cat"))
    with pytest.raises(APIError) as not_pty:
        sandbox.processes.resize(plain.process_id, PTYSize(rows=10, cols=10))
    assert not_pty.value.status_code == 409
    sandbox.destroy()
