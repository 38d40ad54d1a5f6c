"""``createos-fake --version`` and ``python -m pytest_createos --version`` print the version."""

from __future__ import annotations

from importlib import metadata

import pytest

import fake_server.__main__
import pytest_createos.__main__


@pytest.mark.parametrize(
    ("main", "name"),
    [
        (fake_server.__main__.main, "createos-fake"),
        (pytest_createos.__main__.main, "pytest-createos"),
    ],
)
def test_version_flag_prints_the_installed_version(
    main: object, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert callable(main)
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out == f"{name} {metadata.version('pytest-createos')}\n"


def test_version_without_an_installed_distribution_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def missing(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", missing)
    assert pytest_createos.__main__.installed_version() == "unknown (not installed)"
