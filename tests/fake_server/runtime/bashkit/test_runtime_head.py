"""``head`` in bashkit sandboxes: the endless devices in full, otherwise as GNU's.

Before, bashkit's ``head -c 5000000 /dev/zero`` printed 1 MiB and ``/dev/urandom`` 8 KiB, with
status 0 (its devices give no more per read); ``fake_server.runtime.bashkit.gnu.head`` streams them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from _runtime_box import Box

pytestmark = pytest.mark.asyncio

TRY = "Try 'head --help' for more information.\n"
FILE = "printf 'a\\nb\\nc\\nd\\n' > /tmp/f; "


@pytest.mark.parametrize(
    ("script", "output"),
    [
        ("head -c 1100000 /dev/zero | wc -c", "1100000\n"),
        ("head -c 100K /dev/urandom | wc -c", "102400\n"),
        ("head -c 20000 /dev/random | wc -c", "20000\n"),
        ("head -c 1100000 /dev/zero | tr -d '\\0' | wc -c", "0\n"),
        (FILE + "head -n 2 /tmp/f; head -1 /tmp/f; head -n -3 /tmp/f", "a\nb\na\na\n"),
        (FILE + "head -c 3 /tmp/f; head -c -6 /tmp/f", "a\nba\n"),
        (FILE + "head -n1 /tmp/f /tmp/f", "==> /tmp/f <==\na\n\n==> /tmp/f <==\na\n"),
        (FILE + "head -q -n1 /tmp/f /tmp/f; head -v -n1 /tmp/f", "a\na\n==> /tmp/f <==\na\n"),
        (FILE + "ln -s f /tmp/l; cd /tmp && head -n1 l", "a\n"),
        ("printf 'x\\ny' | head -n 5; echo; printf 'x\\ny' | head -n -1", "x\ny\nx\n"),
        ("printf 'a\\0b\\0c\\0' | head -z -n 2 | tr '\\0' ,", "a,b,"),
        ("seq 100 | head -n 3 -", "1\n2\n3\n"),
        ("yes | head -n 2; echo ${PIPESTATUS[@]}", "y\ny\n141 0\n"),
    ],
)
async def test_head_reads_devices_in_full_and_files_as_gnu(
    box: Box, script: str, output: str
) -> None:
    result = await box.sh(script)
    assert (result.code, result.stdout, result.stderr) == (0, output, "")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ("/nope", "head: cannot open '/nope' for reading: No such file or directory\n"),
        ("/tmp", "head: error reading '/tmp': Is a directory\n"),
        ("-n abc /tmp", "head: invalid number of lines: 'abc'\n"),
        ("-c 1X /tmp", "head: invalid number of bytes: '1X'\n"),
        ("-x", "head: invalid option -- 'x'\n" + TRY),
        ("-c", "head: option requires an argument -- 'c'\n" + TRY),
    ],
)
async def test_head_errors_as_gnu(box: Box, args: str, message: str) -> None:
    result = await box.sh(f"head {args}")
    assert (result.code, result.stdout, result.stderr) == (1, "", message)
