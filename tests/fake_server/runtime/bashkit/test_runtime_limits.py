"""No silent caps: ``seq`` and ``yes`` give their whole output, bashkit's fixed limits say so.

bashkit's own ``seq`` stops at 100,000 lines and ``yes`` at 10,000, both with status 0; the
runtime replaces them (``fake_server.runtime.bashkit.gnu.endless``). An expansion past
bashkit's 100,000 words fails with status 1 and, now, a message on stderr.
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


@pytest.mark.parametrize(
    ("script", "shown", "words", "limit"),
    [
        ("echo {1..200000} | wc -w", "{1..200000}", 200000, 10000),
        ("echo x; echo {1..20001..2}", "{1..20001..2}", 10001, 10000),
        ("for i in {1..100}{1..1000}; do :; done", "{1..100}{1..1000}", 100000, 50000),
    ],
)
async def test_brace_expansions_bashkit_would_cut_fail_with_a_message(
    box: Box, script: str, shown: str, words: int, limit: int
) -> None:
    """Before: a range past 10,000 items stayed one word and one word's expansions stopped at
    50,000, both with status 0. Now nothing runs (not even ``echo x``) and bash says why."""
    result = await box.sh(script)
    assert (result.code, result.stdout) == (1, "")
    assert result.stderr == (
        f"bash: {shown}: brace expansion of {words} words is beyond the fake's bashkit runtime "
        f"(at most {limit}); use seq, or the process runtime\n"
    )


@pytest.mark.parametrize(
    ("script", "output"),
    [
        ("echo {1..10000} | wc -w", "10000\n"),
        ("echo {a..e}{1..10000} | wc -w", "50000\n"),
        ("echo '{1..20001}' \"{1..20001}\" \\{1..20001}", "{1..20001} {1..20001} {1..20001}\n"),
        ("# {1..200000}\necho ${#PATH} >/dev/null; echo ok", "ok\n"),
    ],
)
async def test_brace_expansions_within_bashkits_limits_or_quoted_run(
    box: Box, script: str, output: str
) -> None:
    result = await box.sh(script)
    assert (result.code, result.stdout, result.stderr) == (0, output, "")


async def test_an_interactive_shell_refuses_the_line_and_reads_on(box: Box) -> None:
    from fake_server.runtime import StdinPipe

    stdin = StdinPipe()
    stdin.write(b"echo {1..20000}\necho next $?\nfalse\necho then $?\n")
    stdin.close()
    result = await box.run(["bash"], stdin=stdin)
    assert (result.code, result.stdout) == (0, "next 1\nthen 1\n")
    assert result.stderr.startswith("bash: {1..20000}: brace expansion of 20000 words")
