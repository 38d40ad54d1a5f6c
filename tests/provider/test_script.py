"""The wrapper script: hostile values stay data, invalid input is refused before any request."""

from __future__ import annotations

import pytest

from pytest_createos.provider._errors import CreateosError
from pytest_createos.provider._script import build_wrapper_script, quote


def test_quote_wraps_and_escapes_single_quotes() -> None:
    assert quote("a'; touch /bad; echo '") == "'a'\"'\"'; touch /bad; echo '\"'\"''"
    assert quote("") == "''"
    assert quote("$(touch /bad)") == "'$(touch /bad)'"


def test_quote_rejects_nul() -> None:
    with pytest.raises(CreateosError) as info:
        quote("a\x00b")
    assert str(info.value) == "Sandbox command values cannot contain NUL."


def test_script_shape_with_cwd_env_and_stdin() -> None:
    script = build_wrapper_script(
        "/bin/echo",
        ["a'; touch /bad; echo '", "x y"],
        cwd="/paperclip-workspace/sub dir",
        env={"MESSAGE": "$(touch /bad)", "_B2": ""},
        stdin_path="/tmp/paperclip-stdin-1",
    )
    assert script == (
        "cd -- '/paperclip-workspace/sub dir' || exit\n"
        "exec env MESSAGE='$(touch /bad)' _B2='' '/bin/echo' "
        "'a'\"'\"'; touch /bad; echo '\"'\"'' 'x y' < '/tmp/paperclip-stdin-1'"
    )


def test_script_without_env_has_two_spaces_and_no_cd() -> None:
    assert build_wrapper_script("ls") == "exec env  'ls'"
    assert build_wrapper_script("ls", cwd="") == "exec env  'ls'"


@pytest.mark.parametrize("command", ["", None])
def test_command_is_required(command: object) -> None:
    with pytest.raises(CreateosError) as info:
        build_wrapper_script(command)  # type: ignore[arg-type]
    assert str(info.value) == "A sandbox command is required."


@pytest.mark.parametrize(
    ("key", "value"),
    [("1BAD", "v"), ("A-B", "v"), ("", "v"), ("A B", "v"), ("A\x00", "v"), ("OK", 3), ("OK", None)],
)
def test_invalid_env_entries(key: str, value: object) -> None:
    with pytest.raises(CreateosError) as info:
        build_wrapper_script("ls", env={key: value})  # type: ignore[dict-item]
    assert str(info.value) == "Invalid sandbox environment variable."


@pytest.mark.parametrize(
    "kwargs",
    [
        {"args": ["a\x00"]},
        {"cwd": "/w\x00"},
        {"env": {"A": "x\x00y"}},
        {"stdin_path": "/tmp/\x00"},
    ],
)
def test_nul_anywhere_is_rejected(kwargs: dict[str, object]) -> None:
    with pytest.raises(CreateosError) as info:
        build_wrapper_script("ls", **kwargs)  # type: ignore[arg-type]
    assert str(info.value) == "Sandbox command values cannot contain NUL."


def test_non_string_argument_is_rejected() -> None:
    with pytest.raises(CreateosError) as info:
        build_wrapper_script("ls", [1])  # type: ignore[list-item]
    assert str(info.value) == "Sandbox command values must be strings."


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"args": "rm -rf /"}, "Sandbox command args must be a list of strings, one per argument."),
        ({"args": b"ls"}, "Sandbox command args must be a list of strings, one per argument."),
        ({"args": None}, "Sandbox command args must be a list of strings, one per argument."),
        ({"env": ["A=1"]}, "Invalid sandbox environment variable."),
    ],
)
def test_wrong_container_types_are_refused(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(CreateosError) as info:
        build_wrapper_script("ls", **kwargs)  # type: ignore[arg-type]
    assert str(info.value) == message
