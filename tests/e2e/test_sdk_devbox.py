"""The devbox VM's system through the official Python SDK, on the process runtime: root, a
writable system, package installs that survive pause/resume and fork, the disk size."""

from __future__ import annotations

import io
import zipfile
from typing import TYPE_CHECKING

import pytest
from createos.errors import APIError
from createos.models import CreateSandboxRequest, ForkSandboxRequest, RunCommandRequest

#: Slow (subprocesses, real programs): in the reliability step, keeping the main suite fast.
pytestmark = pytest.mark.reliability

if TYPE_CHECKING:
    from createos import Client
    from createos.instance import SandboxInstance

#: A package for dpkg, built inside the sandbox (no registry needed).
DEB = (
    "set -e; mkdir -p /tmp/pkg/DEBIAN /tmp/pkg/usr/bin; "
    "printf 'Package: createos-hello\\nVersion: 1.0\\nArchitecture: all\\n"
    "Maintainer: t <t@example.invalid>\\nDescription: hello\\n' > /tmp/pkg/DEBIAN/control; "
    "printf '#!/bin/sh\\necho hello from a package\\n' > /tmp/pkg/usr/bin/createos-hello; "
    "chmod 755 /tmp/pkg/usr/bin/createos-hello; dpkg-deb -b /tmp/pkg /tmp/hello.deb >/dev/null; "
    "dpkg -i /tmp/hello.deb >/dev/null"
)
WHEEL_NAME = "createos_hello-1.0-py3-none-any.whl"


def wheel() -> bytes:
    """A pure-Python wheel (``import createos_hello``) made in memory."""
    files = {
        "createos_hello/__init__.py": "GREETING = 'hello from a wheel'\n",
        "createos_hello-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: createos-hello\n"
        "Version: 1.0\n",
        "createos_hello-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\n"
        "Root-Is-Purelib: true\nTag: py3-none-any\n",
    }
    files["createos_hello-1.0.dist-info/RECORD"] = "".join(f"{name},,\n" for name in files) + (
        "createos_hello-1.0.dist-info/RECORD,,\n"
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return buffer.getvalue()


#: Every test here runs on the process runtime (the conftest's fake reads this).
FAKE_RUNTIME = "process"


def create(sdk: Client, **fields: object) -> SandboxInstance:
    request = CreateSandboxRequest(**{"shape": "s-1vcpu-1gb", **fields})  # type: ignore[arg-type]
    sandbox = sdk.create_sandbox(request)
    sandbox.wait_until_running()
    return sandbox


def sh(sandbox: SandboxInstance, script: str) -> tuple[int, str]:
    """Exit status and output (stdout, then stderr) of a bash script in the sandbox."""
    request = RunCommandRequest(command="bash", arguments=["-c", script])
    result = sandbox.run_command(request).result
    return result.exit_code, result.standard_output + result.standard_error


def test_commands_run_as_root_in_roots_home_on_a_writable_system_with_the_devbox_tools(
    sdk: Client,
) -> None:
    sandbox = create(sdk)
    script = (
        "id -u; whoami; pwd; echo $HOME; echo x > /usr/local/bin/tool && "
        "echo 'nameserver 10.0.0.1' >> /etc/resolv.conf && mkdir -p /opt/app && echo written"
    )
    assert sh(sandbox, script) == (0, "0\nroot\n/root\n/root\nwritten\n")
    programs = "python3 pip node npm bun git curl gcc make apt-get dpkg"
    missing = f"for p in {programs}; do command -v $p >/dev/null || echo missing $p; done"
    assert sh(sandbox, missing) == (0, "")
    sandbox.destroy()


def test_installed_packages_survive_pause_resume_and_are_copied_by_fork(sdk: Client) -> None:
    sandbox = create(sdk)
    assert sh(sandbox, DEB) == (0, "")
    sandbox.files.upload(f"/tmp/{WHEEL_NAME}", wheel())
    pip = sh(sandbox, f"pip install --no-index --no-deps -q /tmp/{WHEEL_NAME} 2>&1 | grep -v root")
    assert pip == (1, "")  # no refusal ("externally-managed-environment"), only root's warning
    check = (
        "createos-hello; python3 -c 'import createos_hello as m; print(m.GREETING, m.__file__)'; "
        "dpkg-query -W -f '${Status}\\n' createos-hello"
    )
    minor = sh(sandbox, "python3 -c 'import sys; print(sys.version_info[1])'")[1].strip()
    expected = (
        0,
        "hello from a package\nhello from a wheel "
        f"/usr/local/lib/python3.{minor}/dist-packages/createos_hello/__init__.py\n"
        "install ok installed\n",
    )
    assert sh(sandbox, check) == expected
    sandbox.pause().wait_until_paused()
    sandbox.resume().wait_until_running()
    assert sh(sandbox, check) == expected
    sandbox.pause().wait_until_paused()
    clone = sdk.get_sandbox(sandbox.fork(ForkSandboxRequest()).id)
    clone.wait_until_running()
    assert sh(clone, check) == expected
    assert sh(clone, "dpkg -r createos-hello >/dev/null; command -v createos-hello") == (1, "")
    sandbox.resume().wait_until_running()
    assert sh(sandbox, check) == expected  # the fork's changes are its own
    clone.destroy()
    sandbox.destroy()


def test_a_full_disk_is_enospc_at_the_sandboxs_disk_size_and_resize_grows_it(
    sdk: Client,
) -> None:
    sandbox = create(sdk, disk_mib=16)
    fill = "head -c 20971520 /dev/zero > /root/big 2>/dev/null; echo $?; du -m /root/big | cut -f1"
    code, out = sh(sandbox, fill)
    status, written = out.split()
    assert (code, status) == (0, "1")  # ENOSPC
    assert 12 <= int(written) <= 16  # the disk's 16 MiB, less ext4's own share
    # df's Used and Avail are the disk's (its Size column may show a disk's room to grow)
    code, out = sh(sandbox, "df -m --output=avail / | tail -1")
    assert (code, out.strip()) == (0, "0")
    with pytest.raises(APIError) as full:  # the files API meets the same disk
        sandbox.files.upload("/root/more", b"x" * 1_048_576)
    assert full.value.status_code == 507
    assert str(full.value) == (
        f"PUT /v1/sandboxes/{sandbox.id}/files: HTTP 507: the sandbox's 16 MiB disk is full"
    )
    assert sandbox.resize(64).disk_mib == 64
    assert sh(sandbox, "head -c 20971520 /dev/zero > /root/big && echo fits") == (0, "fits\n")
    sandbox.destroy()


def test_the_hosts_files_work_and_other_sandboxes_stay_invisible(sdk: Client) -> None:
    first, second = create(sdk), create(sdk)
    first.files.upload("/root/mine.txt", b"first's\n")
    script = "ls /work /home/* /root/mine.txt /tmp/createos-fake-process 2>&1 | sed 's/.*s //'"
    assert sh(second, script) == (
        0,
        "'/work': No such file or directory\n'/home/*': No such file or directory\n"
        "'/root/mine.txt': No such file or directory\n"
        "'/tmp/createos-fake-process': No such file or directory\n",
    )
    first.destroy()
    second.destroy()
