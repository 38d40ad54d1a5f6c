"""No silent caps: ``seq`` and ``yes`` give their whole output, bashkit's fixed limits say so.

bashkit's own ``seq`` stops at 100,000 lines and ``yes`` at 10,000, both with status 0; the
runtime replaces them (``fake_server.runtime.endless``). An expansion past bashkit's 100,000
words fails with status 1 and, now, a message on stderr.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from _runtime_box import Box

pytestmark = pytest.mark.asyncio


@pytest.mark.parametrize(
    ("script", "output"),
    [
        ("seq 200000 | tail -1", "200000\n"),
        ("x=$(seq 150000); echo ${#x}", f"{sum(len(str(i)) + 1 for i in range(1, 150001)) - 1}\n"),
        ("yes | head -n 20000 | wc -l", "20000\n"),
        ("yes hello world | head -c 300000 | tail -c 12", "hello world\n"),
        ("yes | head -n 2; echo ${PIPESTATUS[@]}", "y\ny\n141 0\n"),
    ],
)
async def test_seq_and_yes_are_not_truncated(box: Box, script: str, output: str) -> None:
    result = await box.sh(script)
    assert (result.code, result.stdout, result.stderr) == (0, output, "")


@pytest.mark.parametrize(
    ("args", "output"),
    [
        ("5", "1\n2\n3\n4\n5\n"),
        ("-s, 3", "1,2,3\n"),
        ("-w 8 10", "08\n09\n10\n"),
        ("1.5 0.5 3", "1.5\n2.0\n2.5\n3.0\n"),
        ("5 -2 1", "5\n3\n1\n"),
        ("-f %03g 3", "001\n002\n003\n"),
        ("-w -2 1", "-2\n-1\n00\n01\n"),
        ("0", ""),
    ],
)
async def test_seq_follows_gnu(box: Box, args: str, output: str) -> None:
    result = await box.sh(f"seq {args}")
    assert (result.code, result.stdout, result.stderr) == (0, output, "")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ("", "seq: missing operand"),
        ("1 0 3", "seq: invalid Zero increment value: '0'"),
        ("x", "seq: invalid floating point argument: 'x'"),
        ("-q 3", "seq: invalid option -- 'q'"),
        ("1 2 3 4", "seq: extra operand '4'"),
    ],
)
async def test_seq_usage_errors(box: Box, args: str, message: str) -> None:
    result = await box.sh(f"seq {args}")
    assert (result.code, result.stdout) == (1, "")
    assert result.stderr == f"{message}\nTry 'seq --help' for more information.\n"


async def test_an_expansion_past_bashkits_word_limit_fails_with_a_message(box: Box) -> None:
    result = await box.sh("set -- $(seq 100001); echo $#")
    assert (result.code, result.stdout) == (1, "")
    assert result.stderr == "bash: word split field limit (100000) exceeded\n"
    fits = await box.sh("set -- $(seq 100000); echo $#")
    assert (fits.code, fits.stdout) == (0, "100000\n")
