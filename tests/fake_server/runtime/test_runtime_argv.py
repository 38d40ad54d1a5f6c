"""The argv and environment checks both runtimes make before running a command."""

from __future__ import annotations

import pytest

from fake_server.runtime.argv import check_argv, check_env, utf8


def test_lone_surrogates_become_the_replacement_character() -> None:
    assert utf8("a\ud800b") == "a\ufffdb"
    assert utf8("plain é") == "plain é"
    assert check_argv(["echo", "x\udcff"]) == ["echo", "x\ufffd"]
    assert check_env({"K\ud800": "v\udfff"}) == {"K\ufffd": "v\ufffd"}


@pytest.mark.parametrize(
    ("argv", "error", "message"),
    [
        ("echo hi", TypeError, "argv must be a sequence of strings, not a string"),
        (b"echo", TypeError, "argv must be a sequence of strings, not a string"),
        ([], ValueError, "argv must name a command"),
        ([""], ValueError, "argv must name a command"),
        (["echo", 1], TypeError, "argv items must be strings"),
        (["echo", "a\0b"], ValueError, "argv must not contain NUL"),
    ],
)
def test_bad_argv_is_refused_with_the_reason(
    argv: object, error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as caught:
        check_argv(argv)  # type: ignore[arg-type]
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("env", "error"),
    [
        ({"": "v"}, ValueError),
        ({"A=B": "v"}, ValueError),
        ({"A": "v\0"}, ValueError),
        ({"A": 1}, TypeError),
    ],
)
def test_bad_environment_is_refused(env: dict[str, object], error: type[Exception]) -> None:
    with pytest.raises(error):
        check_env(env)  # type: ignore[arg-type]
