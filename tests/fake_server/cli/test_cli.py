"""``python -m fake_server serve``: prints what to paste, logs, guards Host, exits 0 on SIGINT."""

from __future__ import annotations

import json
import os
import platform
import re
import signal
import socket
import subprocess
import sys
from typing import TYPE_CHECKING

import httpx
import pytest

from fake_server import tls_context
from fake_server.__main__ import build_parser, main, serve_fake
from fake_server.runtime.process.containment import procview
from fake_server.runtime.process.images import debian, desktop_image, image
from fake_server.server import FakeCreateOS
from tests.fake_server._process_runtime import needs_nft

#: Slow (subprocesses, real programs): in the reliability step, keeping the main suite fast.
pytestmark = pytest.mark.reliability

if TYPE_CHECKING:
    from pathlib import Path

HOST_OS = platform.freedesktop_os_release()["PRETTY_NAME"]
#: What devbox:1 boots here: the Debian 13 tree where ``createos-fake image`` built it (CI),
#: the host's own programs otherwise (a fresh machine).
DEVBOX_BOOTS = (
    debian.NAME
    if debian.built(image.cache_dir()) is not None
    else f"this host's {HOST_OS} programs (no {debian.NAME} image yet: createos-fake image "
    "builds it)"
)
#: What desktop:1 adds where its tree is built too.
DESKTOP_ADDS = (
    "; desktop:1 adds an X desktop (Xvfb, evilwm, xdotool)"
    if debian.built(image.cache_dir()) is not None
    and desktop_image.built(image.cache_dir()) is not None
    else ""
)
STOPPED = (
    "createos-fake: {signal}: stopping (killing the sandboxes' processes; a second signal exits "
    "at once)\ncreateos-fake: stopped\n"
)


@needs_nft  # it prints the runtime line of a host with nftables
def test_serve_prints_what_to_paste_logs_requests_and_stops_on_sigint() -> None:
    command = [sys.executable, "-m", "fake_server", "serve", "--port", "0"]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as process:
        try:
            _exercise(process)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        assert process.stderr is not None
        assert process.stderr.read() == ""


def _read_help(process: subprocess.Popen[str]) -> list[str]:
    assert process.stdout is not None
    lines = []
    while line := process.stdout.readline():
        lines.append(line.rstrip("\n"))
        if line.startswith("control key: "):
            break
    return lines


def _exercise(process: subprocess.Popen[str]) -> None:
    lines = _read_help(process)
    assert lines[0].startswith("createos-fake serving http://127.0.0.1:")
    origin = lines[0].split()[2]
    (key,) = (
        line.removeprefix("export CREATEOS_API_KEY=")
        for line in lines
        if line.startswith("export CREATEOS_API_KEY=")
    )
    # The random key: not the seeded one every install shares.
    assert re.fullmatch(r"cos_live_[0-9a-f]{32}", key)
    assert key != FakeCreateOS(seed=0).api_key
    control_key = lines[-1].removeprefix("control key: ")
    (previews,) = (
        line.removeprefix("preview URLs: ") for line in lines if line.startswith("preview URLs: ")
    )
    preview_origin = previews.removesuffix("/_ingress/<sandbox id>/<port>/")
    preview_port = preview_origin.rsplit(":", 1)[1]
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+", preview_origin)
    assert preview_origin != origin
    assert re.fullmatch(r"cos_fake_[0-9a-f]{32}", control_key)
    assert lines[1:] == [
        # --runtime auto: bubblewrap runs here, as root with nftables
        "runtime: process (sandboxes: eth0, DNS, NAT to the host's uplink)",
        "limits: the shape's memory and vCPUs, 1024 processes per sandbox (cgroup v1: memory, "
        "cpu, pids)",
        "containment: root inside is host id 983040000 (ids up to 983105535), /proc masked, a "
        "seccomp filter",
        procview.describe(),
        "images: rootfs devbox:1, desktop:1, ubuntu:24.04, node:22, python:3.12 boot devbox:1: "
        f"{DEVBOX_BOOTS} on a copy-on-write root per sandbox (user root; apt-get, pip, npm -g; "
        f"bun){DESKTOP_ADDS}",
        "state: in memory only, lost at stop (--state-dir DIR keeps it)",
        "",
        "# the official SDKs (they add /v1 themselves; Python reads CREATEOS_API_KEY,"
        " TypeScript CREATEOS_SANDBOX_API_KEY):",
        f"export CREATEOS_SANDBOX_BASE_URL={origin}",
        f"export CREATEOS_API_KEY={key}",
        f"export CREATEOS_SANDBOX_API_KEY={key}",
        "# the pytest-createos provider's environment config:",
        json.dumps({"apiUrl": origin, "apiKey": key, "shape": "s-1vcpu-1gb"}),
        "# curl and other HTTP clients send the key in the X-Api-Key header:",
        f"curl -H 'X-Api-Key: {key}' {origin}/v1/sandboxes",
        "# preview URLs (a sandbox's ingress_url_template) have a port of their own; a browser"
        " is sent on to a host per sandbox and port, http://<id after sb->-<port>.localhost:"
        f"{preview_port}/",
        f"preview URLs: {preview_origin}/_ingress/<sandbox id>/<port>/",
        "# the fake's control API (/_fake/...) takes its own key in X-Fake-Control-Key,",
        f"# and so does the web dashboard's login: {origin}/_fake/ui/",
        f"control key: {control_key}",
    ]
    assert control_key != key
    assert process.stdout is not None
    assert process.stdout.readline() == "\n"
    port = origin.rsplit(":", 1)[1]
    with httpx.Client(verify=tls_context(), base_url=origin, headers={"X-Api-Key": key}) as client:
        assert client.get("/healthz").json() == {"status": "success", "data": {"up": True}}
        # The dashboard: served, behind the Host check too, and never in the log.
        assert client.get("/_fake/ui/").status_code == 200
        assert client.get("/_fake/ui/api/overview").status_code == 401
        evil = {"Host": f"evil.example:{port}"}
        assert client.get("/_fake/ui/", headers=evil).status_code == 403
        assert client.get("/v1/whoami", params={"token": "s3cret"}).status_code == 200
        # DNS rebinding: a page on another name that resolves here sends that name as Host.
        rebound = client.get("/v1/whoami", headers={"Host": f"evil.example:{port}"})
        assert client.get("/v1/whoami", headers={"Host": f"localhost:{port}"}).status_code == 200
        fault = {"operation": "whoami", "action": {"type": "http_error", "status": 503}}
        control = {"X-Fake-Control-Key": control_key}
        assert client.post("/_fake/faults", json=fault, headers=control).status_code == 201
        assert client.get("/v1/whoami").status_code == 503
        # Preview URLs: their own port, behind the Host check, which lets preview hostnames in.
        moved = client.get("/_ingress/sb-none/8080/x?y=1")
        assert (moved.status_code, moved.headers["Location"]) == (
            307,
            f"{preview_origin}/_ingress/sb-none/8080/x?y=1",
        )
        named = {"Host": f"{'0' * 26}-8080.localhost:{preview_port}"}
        assert client.get(f"{preview_origin}/", headers=named).status_code == 404
        assert client.get(f"{preview_origin}/", headers=evil).status_code == 403
    assert (rebound.status_code, rebound.json()) == (
        403,
        {
            "status": "fail",
            "data": {
                "code": "host_not_allowed",
                "message": "this Host is not served (a guard against DNS rebinding); "
                "start createos-fake serve with --allow-host NAME to accept another name",
            },
        },
    )
    log = [process.stdout.readline() for _ in range(9)]
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=10) == 0
    pattern = [
        r"GET /healthz 200 \d+\.\dms",
        r"GET /v1/whoami 200 \d+\.\dms",  # no query values: they may hold secrets
        r"GET /v1/whoami 403 \d+\.\dms",
        r"GET /v1/whoami 200 \d+\.\dms",
        r"POST /_fake/faults 201 \d+\.\dms",
        r"GET /v1/whoami 503 \d+\.\dms fault #1 HttpError 503",
        r"GET /_ingress/sb-none/8080/x 307 \d+\.\dms",
        r"GET / 404 \d+\.\dms",
        r"GET / 403 \d+\.\dms",
    ]
    for expected, line in zip(pattern, log, strict=True):
        assert re.fullmatch(expected, line.rstrip("\n")), line
    assert process.stdout.read() == STOPPED.format(signal="SIGINT")


def test_idle_and_half_sent_connections_are_closed_after_the_idle_timeout() -> None:
    command = [sys.executable, "-m", "fake_server", "serve", "--port", "0", "--quiet"]
    command += ["--idle-timeout", "0.2"]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as process:
        try:
            port = int(_read_help(process)[0].split()[2].rsplit(":", 1)[1])
            with (
                socket.create_connection(("127.0.0.1", port), timeout=10) as silent,
                socket.create_connection(("127.0.0.1", port), timeout=10) as half,
            ):
                half.sendall(b"GET /v1/whoami HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Api")
                # The server closes both (b"" is end of stream) well before the 10 s guard.
                assert silent.recv(1024) == b""
                assert half.recv(1024) == b""
            process.send_signal(signal.SIGINT)
            assert process.wait(timeout=10) == 0
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        assert process.stdout is not None
        # The help's last line; --quiet: no request lines.
        assert process.stdout.read() == "\n" + STOPPED.format(signal="SIGINT")


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--rate-limit", "fast"], "argument --rate-limit: must be a positive integer or 'off'"),
        (["--port", "70000"], "argument --port: must be an integer 0-65535"),
        (["--api-key", ""], "argument --api-key: must be 1-512 printable characters"),
        (["--transitions", "slow"], "argument --transitions: invalid choice: 'slow'"),
        (["--bogus"], "unrecognized arguments: --bogus"),
        (
            ["--host", ""],
            "argument --host: must be a host name or an address "
            "(0.0.0.0 or :: for every interface)",
        ),
        (["--seed", "-3"], "argument --seed: must be an integer >= 0"),
        (["--seed", "x"], "argument --seed: must be an integer >= 0"),
    ],
)
def test_bad_flags_are_usage_errors(
    flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["serve", *flags])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_bad_flag_in_a_subprocess_exits_2_without_traceback() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "fake_server", "serve", "--rate-limit", "fast"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2
    assert result.stderr.endswith(
        "error: argument --rate-limit: must be a positive integer or 'off'\n"
    )


def test_port_in_use_is_one_line_and_exit_1() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "fake_server", "serve", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert result.returncode == 1
    assert result.stderr == (
        f"createos-fake: cannot listen on 127.0.0.1:{port}: address already in use\n"
    )
    assert result.stdout == ""


def test_serve_asking_for_an_unavailable_process_runtime_says_why_and_what_to_do(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from fake_server.runtime.process.containment import bwrap

    monkeypatch.setattr(bwrap, "bwrap_path", lambda: "/nonexistent/bwrap")
    assert main(["serve", "--port", "0", "--runtime", "process"]) == 1
    assert capsys.readouterr().err == (
        "createos-fake: the process runtime cannot run here: bwrap cannot start: "
        f"No such file or directory. {bwrap.HELP}\n"
    )


def test_serve_auto_falls_back_to_bashkit_and_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    from fake_server.__main__ import _runtime
    from fake_server.runtime.process.containment import bwrap

    monkeypatch.setattr(bwrap, "bwrap_path", lambda: "/nonexistent/bwrap")
    assert _runtime("auto") == (
        "bashkit",
        "runtime: bashkit (the process runtime cannot run here: bwrap cannot start: "
        "No such file or directory)",
    )
    assert _runtime("bashkit") == ("bashkit", "runtime: bashkit")


@needs_nft  # and, undone, says what root with nftables gets
def test_serve_auto_picks_the_process_runtime_without_root_and_says_what_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Not root: bubblewrap runs, so ``auto`` serves it, with a network per process and the
    host's programs instead of the image."""
    from fake_server.__main__ import _runtime
    from fake_server.runtime.process.containment import cgroups, idmap
    from fake_server.runtime.process.images import system
    from fake_server.runtime.process.net import netmode

    own = idmap.OwnId(5000, 5000, "uid 5000 has no /etc/passwd entry, which newuidmap needs")
    monkeypatch.setattr(idmap, "layout_map", lambda image: None if image else own)
    monkeypatch.setattr(netmode, "detect", lambda: netmode.NetworkMode("not root"))
    monkeypatch.setattr(system, "_no_mounts", lambda: "not root")
    monkeypatch.setattr(cgroups.os, "access", lambda path, mode: False)
    monkeypatch.setattr(cgroups, "hierarchy", cgroups.hierarchy.__wrapped__)
    line = (
        "runtime: process (no shared sandbox network: not root)\n"
        "limits: none per sandbox (/sys/fs/cgroup/pids is not writable (not root); a "
        "sandbox can exhaust the host's memory and processes)\n"
        "containment: user sandbox (uid 1000) is your own id 5000 on the host and the only id "
        "mapped (no subordinate ids: uid 5000 has no /etc/passwd entry, which newuidmap "
        "needs); /proc masked, a seccomp filter; no disk size per sandbox (the "
        "host-directory layout)\n"
        "images: rootfs devbox:1, desktop:1, ubuntu:24.04, node:22, python:3.12 boot the "
        "host's programs on a read-only /usr as user sandbox (no devbox:1 image: not root)"
    )
    assert _runtime("auto") == ("process", line)
    assert _runtime("process") == ("process", line)
    monkeypatch.undo()
    assert _runtime("auto")[1].startswith(
        "runtime: process (sandboxes: eth0, DNS, NAT to the host's uplink)\n"
        "limits: the shape's memory and vCPUs, 1024 processes per sandbox (cgroup v1: memory, "
        "cpu, pids)\n"
        "containment: root inside is host id 983040000 (ids up to 983105535), /proc masked, a "
        "seccomp filter\n"
        f"{procview.describe()}\n"
        "images: rootfs devbox:1, "
    )


def test_serve_says_sandboxes_have_no_way_out_without_nft(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from fake_server.__main__ import _runtime
    from fake_server.runtime.process.net import hostcheck, netmode, nft

    monkeypatch.setattr(nft, "nft_path", lambda: None)
    mode = netmode.detect.__wrapped__()
    assert mode == netmode.NetworkMode(uplink_missing=hostcheck.NFT_MISSING)
    monkeypatch.setattr(netmode, "detect", lambda: mode)
    assert _runtime("process")[1].startswith(
        "runtime: process (sandboxes reach nothing past the fake: no NAT and no egress rules, "
        "since nftables' nft is not installed (apt-get install nftables); eth0, preview URLs "
        "and account networks work)\nlimits: the shape's memory and vCPUs, 1024 processes"
    )


@needs_nft  # without nft, that is said first
def test_serve_says_sandboxes_have_no_way_out_where_forwarding_cannot_be_turned_on(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A container's read-only ``/proc/sys`` with forwarding off: said, never worked around."""
    from fake_server.__main__ import _runtime
    from fake_server.runtime.process.net import hostcheck, netmode

    switch = tmp_path / "ip_forward"
    switch.write_text("0\n")
    monkeypatch.setattr(hostcheck, "FORWARDING", str(switch))
    real_access = os.access
    monkeypatch.setattr(
        hostcheck.os, "access", lambda path, mode: path != str(switch) and real_access(path, mode)
    )
    mode = netmode.detect.__wrapped__()
    assert mode == netmode.NetworkMode(uplink_missing=hostcheck.FORWARDING_OFF)
    monkeypatch.setattr(netmode, "detect", lambda: mode)
    assert _runtime("process")[1].split("\n")[0] == (
        "runtime: process (sandboxes reach nothing past the fake: no NAT and no egress rules, "
        "since the host's IPv4 forwarding is off and cannot be turned on here (sysctl -w "
        "net.ipv4.ip_forward=1 on the host); eth0, preview URLs and account networks work)"
    )
    switch.write_text("1\n")
    assert hostcheck.uplink_missing() is None  # on already: nothing to turn on


@pytest.mark.asyncio
@pytest.mark.parametrize(("flag", "kept"), [([], True), (["--journal-messages", "off"], False)])
async def test_journal_messages_flag_keeps_or_drops_headers_and_bodies(
    flag: list[str], kept: bool
) -> None:
    """A server running for days with ``off`` keeps method, path and status, no bodies."""
    args = build_parser().parse_args(["serve", "--port", "0", "--runtime", "bashkit", *flag])
    fake = serve_fake(args, "bashkit")
    async with fake:
        async with httpx.AsyncClient(base_url=fake.url, verify=tls_context()) as client:
            reply = await client.post(
                "/v1/sandboxes", json={"shape": "s-1vcpu-1gb"}, headers={"X-Api-Key": fake.api_key}
            )
        assert reply.status_code == 200
    call = fake.calls.filter(operation="create_sandbox").last
    assert call.status == 200
    if kept:
        assert call.request.json() == {"shape": "s-1vcpu-1gb"}
        assert call.response.header("content-type") == "application/json; charset=utf-8"
    else:
        assert (call.request.body, call.response.body, call.request.headers) == (None, None, ())


def test_bad_journal_messages_value_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["serve", "--journal-messages", "maybe"])
    assert exit_info.value.code == 2
    assert "argument --journal-messages: invalid choice: 'maybe'" in capsys.readouterr().err
