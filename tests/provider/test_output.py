"""NDJSON frame parsing and per-stream capture: exact messages, UTF-8 splits, the capture cap."""

from __future__ import annotations

import base64
import json

import pytest

from pytest_createos.provider._errors import CreateosError
from pytest_createos.provider._output import (
    MAX_FRAME_CHARS,
    DataFrame,
    ErrorFrame,
    ExitFrame,
    Heartbeat,
    LineSplitter,
    ProcessOutput,
    decode_data,
    error_for,
    parse_frame,
)


def _message(exc: pytest.ExceptionInfo[CreateosError]) -> str:
    return str(exc.value)


# -- lines ---------------------------------------------------------------------------------------


def test_lines_split_across_chunks_and_blank_lines_ignored() -> None:
    splitter = LineSplitter()
    assert splitter.feed('{"a":') == []
    assert splitter.feed('1}\n  \n\n{"b"') == ['{"a":1}']
    assert splitter.feed(":2}\n{") == ['{"b":2}']
    assert splitter.finish() == ["{"]
    assert splitter.finish() == []


def test_final_unterminated_line_counts_but_whitespace_does_not() -> None:
    splitter = LineSplitter()
    assert splitter.feed('{"type":"heartbeat"}') == []
    assert splitter.finish() == ['{"type":"heartbeat"}']
    splitter.feed("   ")
    assert splitter.finish() == []


def test_line_at_the_limit_is_fine_one_more_char_is_too_large() -> None:
    splitter = LineSplitter(max_chars=8)
    assert splitter.feed("12345678\n") == ["12345678"]
    with pytest.raises(CreateosError) as info:
        splitter.feed("123456789\n")
    assert _message(info) == "CreateOS process frame is too large."


def test_pending_partial_line_is_bounded_before_a_newline_arrives() -> None:
    splitter = LineSplitter(max_chars=8)
    splitter.feed("1234")
    with pytest.raises(CreateosError) as info:
        splitter.feed("56789")
    assert _message(info) == "CreateOS process frame is too large."


def test_default_frame_limit_is_one_mebi_char() -> None:
    assert MAX_FRAME_CHARS == 1_048_576
    splitter = LineSplitter()
    assert splitter.feed("x" * MAX_FRAME_CHARS) == []
    with pytest.raises(CreateosError):
        splitter.feed("x")


# -- frames --------------------------------------------------------------------------------------


def test_frames_parse_into_types() -> None:
    assert parse_frame('{"type":"heartbeat"}') == Heartbeat()
    assert parse_frame('{"type":"data","seq":2,"stream":"stdout","data_base64":"YQ=="}') == (
        DataFrame(seq=2, stream="stdout", data_base64="YQ==")
    )
    assert parse_frame('{"type":"data","seq":3.0,"stream":"x"}').seq == 3
    assert parse_frame('{"type":"exit","exit_code":7}') == ExitFrame(7, None)
    assert parse_frame('{"type":"exit","signal":"SIGKILL"}') == ExitFrame(None, "SIGKILL")
    assert parse_frame('{"type":"exit","exit_code":null,"signal":"SIGTERM"}') == ExitFrame(
        None, "SIGTERM"
    )
    assert parse_frame('{"type":"error","error":"x"}') == ErrorFrame("x")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("not json", "CreateOS returned an invalid process frame."),
        ("[1]", "CreateOS returned an invalid process frame."),
        ('"data"', "CreateOS returned an invalid process frame."),
        ('{"type":"data","seq":NaN}', "CreateOS returned an invalid process frame."),
        ('{"type":"nope"}', "CreateOS returned an unknown process event."),
        ("{}", "CreateOS returned an unknown process event."),
        ('{"type":"data","seq":0}', "CreateOS process sequence is invalid."),
        ('{"type":"data","seq":-1}', "CreateOS process sequence is invalid."),
        ('{"type":"data","seq":1.5}', "CreateOS process sequence is invalid."),
        ('{"type":"data","seq":"1"}', "CreateOS process sequence is invalid."),
        ('{"type":"data","seq":true}', "CreateOS process sequence is invalid."),
        ('{"type":"data","seq":9007199254740992}', "CreateOS process sequence is invalid."),
        ('{"type":"data"}', "CreateOS process sequence is invalid."),
        ('{"type":"exit"}', "CreateOS process exit status is missing."),
        ('{"type":"exit","exit_code":"0"}', "CreateOS process exit status is missing."),
        ('{"type":"exit","exit_code":1.5}', "CreateOS process exit status is missing."),
        ('{"type":"exit","signal":"KILL"}', "CreateOS process exit status is missing."),
        ('{"type":"exit","signal":"SIGkill"}', "CreateOS process exit status is missing."),
        ('{"type":"exit","signal":"SIGKILL\\n"}', "CreateOS process exit status is missing."),
    ],
)
def test_bad_frames_have_fixed_messages(line: str, message: str) -> None:
    with pytest.raises(CreateosError) as info:
        parse_frame(line)
    assert _message(info) == message


def test_deeply_nested_json_is_an_invalid_frame_not_a_crash() -> None:
    with pytest.raises(CreateosError) as info:
        parse_frame("[" * 100_000 + "]" * 100_000)
    assert _message(info) == "CreateOS returned an invalid process frame."


def test_data_payload_must_be_canonical_base64_on_a_known_stream() -> None:
    ok = DataFrame(seq=1, stream="stderr", data_base64=base64.b64encode(b"hi!").decode())
    assert decode_data(ok) == ("stderr", b"hi!")
    assert decode_data(DataFrame(1, "stdout", "")) == ("stdout", b"")
    for stream, payload in [
        ("pty", "YQ=="),
        ("stdout", "YQ"),
        ("stdout", "YQ=\n"),
        ("stdout", "Y Q=="),
        ("stdout", "YQ==\n"),
        ("stdout", None),
        (None, "YQ=="),
    ]:
        with pytest.raises(CreateosError) as info:
            decode_data(DataFrame(1, stream, payload))
        assert _message(info) == "CreateOS process output is invalid."


def test_error_frames_map_to_fixed_messages() -> None:
    assert str(error_for(ErrorFrame("output_offset_expired"))) == (
        "CreateOS process output was evicted before it could be read."
    )
    assert str(error_for(ErrorFrame({"secret": "x"}))) == (
        "CreateOS process stream reported an error."
    )


# -- capture -------------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_split_euro_sign_is_logged_once_whole() -> None:
    calls: list[tuple[str, str]] = []
    output = ProcessOutput(lambda stream, text: calls.append((stream, text)))
    euro = "€".encode()
    await output.append("stdout", euro[:1])
    await output.append("stderr", b"e")
    await output.append("stdout", euro[1:])
    await output.flush()
    assert calls == [("stderr", "e"), ("stdout", "€")]
    assert output.stdout.text == "€"
    assert output.stderr.text == "e"
    assert output.truncated is False


@pytest.mark.asyncio
async def test_incomplete_tail_becomes_replacement_char_on_flush() -> None:
    seen: list[str] = []

    async def log(stream: str, text: str) -> None:
        seen.append(text)

    output = ProcessOutput(log)
    await output.append("stdout", b"ok" + "€".encode()[:2])
    await output.flush()
    assert seen == ["ok", "\ufffd"]
    assert output.stdout.text == "ok\ufffd"


@pytest.mark.asyncio
async def test_cap_keeps_the_last_chars_and_flags_truncation() -> None:
    logged: list[str] = []
    output = ProcessOutput(lambda s, t: logged.append(t), cap=5)
    await output.append("stdout", b"abc")
    await output.append("stdout", b"de")
    assert output.truncated is False
    assert output.stdout.text == "abcde"
    await output.append("stdout", b"fgh")
    assert output.truncated is True
    assert output.stdout.text == "defgh"
    assert output.stderr.truncated is False
    await output.append("stdout", b"0123456789")
    assert output.stdout.text == "56789"
    # The log sink sees everything, before truncation.
    assert "".join(logged) == "abcdefgh0123456789"


@pytest.mark.asyncio
async def test_default_cap_is_four_mebi_chars() -> None:
    output = ProcessOutput()
    block = b"x" * 1_048_576
    for _ in range(4):
        await output.append("stderr", block)
    assert output.truncated is False
    await output.append("stderr", "é".encode())
    assert output.truncated is True
    text = output.stderr.text
    assert len(text) == 4_194_304
    assert text.endswith("xé")


def test_fake_shaped_data_frame_is_accepted() -> None:
    line = json.dumps({"type": "data", "seq": 1, "stream": "stdout", "data_base64": "AA=="})
    assert isinstance(parse_frame(line), DataFrame)
