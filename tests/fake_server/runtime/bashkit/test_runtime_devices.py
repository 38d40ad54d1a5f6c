"""The endless devices in bashkit sandboxes: ``cat`` streams them, capped reads fail loudly.

Before, bashkit's ``cat /dev/zero | head -c 5000000`` printed 1 MiB (8 KiB of ``/dev/urandom``)
and ``tr -dc a-z </dev/urandom | head -c 10000`` 812 bytes, all with status 0. Now ``cat``
(``fake_server.runtime.bashkit.gnu.cat``) streams the devices, and a read nothing of the fake
can stream (a redirect, another command's device operand) fails before the script runs
(``fake_server.runtime.bashkit.devices``). The ``cat`` outputs below are GNU cat 9.1's.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from _runtime_box import Box

pytestmark = pytest.mark.asyncio

SETUP = (
    "mkdir -p /tmp/c/d && cd /tmp/c && printf 'a\\tb\\n\\n\\n\\nc\\001\\177\\n\\n x \\ny' > f && "
    "printf '\\n\\nz\\n' > g; "
)
TRY = "Try 'cat --help' for more information.\n"


@pytest.mark.parametrize(
    ("script", "output"),
    [
        ("cat /dev/zero | head -c 1100000 | wc -c", "1100000\n"),
        ("cat /dev/urandom | tr -dc a-z | head -c 10000 | wc -c", "10000\n"),
        ("cat /dev/random | head -c 20000 | wc -c", "20000\n"),
        ("cat /dev/zero | head -c 1 >/dev/null; echo ${PIPESTATUS[@]}", "141 0\n"),
        ("cat /dev/null; echo x | cat - /dev/stdin", "x\n"),
    ],
)
async def test_cat_streams_the_devices_in_full(box: Box, script: str, output: str) -> None:
    result = await box.sh(script)
    assert (result.code, result.stdout, result.stderr) == (0, output, "")


@pytest.mark.parametrize(
    ("script", "output"),
    [
        (
            "cat -n f g",
            "     1\ta\tb\n     2\t\n     3\t\n     4\t\n     5\tc\x01\x7f\n     6\t\n"
            "     7\t x \n     8\ty\n     9\t\n    10\tz\n",
        ),
        (
            "cat -b f g",
            "     1\ta\tb\n\n\n\n     2\tc\x01\x7f\n\n     3\t x \n     4\ty\n\n     5\tz\n",
        ),
        ("cat -s f g", "a\tb\n\nc\x01\x7f\n\n x \ny\n\nz\n"),
        (
            "printf 'in\\n\\n\\nput' | cat -sn g - g",
            "     1\t\n     2\tz\n     3\tin\n     4\t\n     5\tput\n     6\t\n     7\tz\n",
        ),
        ("printf 'a\\tb\\001\\177\\200\\377\\n x' | cat -A", "a^Ib^A^?M-^@M-^?$\n x"),
        ("cat -T -E f", "a^Ib$\n$\n$\n$\nc\x01\x7f$\n$\n x $\ny"),
        (
            "cat --number-nonblank --squeeze-blank g f",
            "\n     1\tz\n     2\ta\tb\n\n     3\tc\x01\x7f\n\n     4\t x \n     5\ty",
        ),
        ("cat -u -- g", "\n\nz\n"),
    ],
)
async def test_cat_options_as_gnu(box: Box, script: str, output: str) -> None:
    result = await box.sh(SETUP + script)
    assert (result.code, result.stdout, result.stderr) == (0, output, "")


@pytest.mark.parametrize(
    ("script", "output", "message"),
    [
        ("cat g missing g", "\n\nz\n\n\nz\n", "cat: missing: No such file or directory\n"),
        ("cat d", "", "cat: d: Is a directory\n"),
        ("cat -- -n", "", "cat: -n: No such file or directory\n"),
        ("cat -x", "", "cat: invalid option -- 'x'\n" + TRY),
        ("cat --nope", "", "cat: unrecognized option '--nope'\n" + TRY),
    ],
)
async def test_cat_errors_as_gnu(box: Box, script: str, output: str, message: str) -> None:
    result = await box.sh(SETUP + script)
    assert (result.code, result.stdout, result.stderr) == (1, output, message)


def _redirect(device: str, cap: str) -> str:
    return (
        f"bash: {device}: a redirect reads at most {cap} of it in the fake's bashkit runtime; "
        f"use cat {device} | ..., or the process runtime\n"
    )


def _operand(command: str, device: str, cap: str) -> str:
    return (
        f"{command}: {device}: the fake's bashkit runtime reads at most {cap} of it here; "
        f"use cat {device} | {command} ..., or the process runtime\n"
    )


@pytest.mark.parametrize(
    ("script", "message"),
    [
        ("echo x; tr -dc a-z </dev/urandom | head -c 10000", _redirect("/dev/urandom", "8 KiB")),
        ("exec 3</dev/zero; head -c 2000000 <&3", _redirect("/dev/zero", "1 MiB")),
        ("while read -r l; do :; done < /dev//random", _redirect("/dev/random", "8 KiB")),
        ("echo x; od -An -N 20000 /dev/urandom", _operand("od", "/dev/urandom", "8 KiB")),
        ("x=$(base64 /dev/zero | head -c 9)", _operand("base64", "/dev/zero", "1 MiB")),
        ("bash -c 'wc -c /dev/zero'", _operand("wc", "/dev/zero", "1 MiB")),
    ],
)
async def test_a_device_read_bashkit_would_cut_fails_before_running(
    box: Box, script: str, message: str
) -> None:
    """Before: 8 KiB or 1 MiB read with status 0. Now nothing runs (not even ``echo x``)."""
    result = await box.sh(script)
    assert (result.code, result.stdout, result.stderr) == (1, "", message)


async def test_a_process_naming_a_device_fails_and_other_device_uses_run(box: Box) -> None:
    direct = await box.run(["/usr/bin/xxd", "-l", "16", "/dev/urandom"])
    assert (direct.code, direct.stdout) == (1, "")
    assert direct.stderr == _operand("xxd", "/dev/urandom", "8 KiB")
    fine = await box.sh("echo /dev/zero; grep -c x </dev/null; echo ok")
    assert (fine.code, fine.stdout, fine.stderr) == (0, "/dev/zero\n0\nok\n", "")


async def test_an_interactive_shell_refuses_a_capped_device_line_and_reads_on(box: Box) -> None:
    from fake_server.runtime import StdinPipe

    stdin = StdinPipe()
    stdin.write(b"wc -c </dev/zero\necho next $?\n")
    stdin.close()
    result = await box.run(["bash"], stdin=stdin)
    assert (result.code, result.stdout) == (0, "next 1\n")
    assert result.stderr == _redirect("/dev/zero", "1 MiB")


async def test_an_endless_cat_is_killed_at_once(box: Box) -> None:
    """``cat /dev/zero >/dev/null`` never ends by itself; cancelling its task ends it."""
    streamed = asyncio.Event()
    received = 0

    async def count(data: bytes) -> None:
        nonlocal received
        received += len(data)
        if received > 1100000:
            streamed.set()

    async def ignore(data: bytes) -> None:
        pass

    task = asyncio.create_task(
        box.shell.run(["cat", "/dev/zero"], on_stdout=count, on_stderr=ignore)
    )
    waiting = asyncio.create_task(streamed.wait())
    try:
        await asyncio.wait({task, waiting}, return_when=asyncio.FIRST_COMPLETED)
        assert not task.done()  # bashkit's cat ended after 1 MiB
    finally:
        waiting.cancel()
        task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert received > 1100000


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("cat /dev/zero", "cat: write error: File too large\n"),
        ("head -c 100 /dev/zero", "head: write error: File too large\n"),
        ("yes", "yes: standard output: File too large\n"),
        ("seq 100000", "seq: write error: File too large\n"),
    ],
)
async def test_a_refused_write_fails_as_gnu(box: Box, command: str, message: str) -> None:
    """Before: ``cat: RuntimeError: io error: File too large``, no line end."""
    box.disk.write_file("/f", bytes(9_999_990))  # 10 bytes short of bashkit's file limit
    result = await box.sh(f"{command} >> /f; echo $?")
    assert (result.code, result.stdout, result.stderr) == (0, "1\n", message)
    assert len(box.disk.fs.read_file("/f")) <= 10_000_000
