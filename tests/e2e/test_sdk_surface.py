"""Every public method of the official Python SDK is called by a test in tests/e2e (none is
left answering 501)."""

from __future__ import annotations

import re
from pathlib import Path

from sdk_surface import public_methods

#: Local helpers, context-manager plumbing and iteration: no request of their own.
NO_REQUEST = frozenset(
    {
        "Client.close",
        "BinaryStream.close",
        "NDJSONStream.close",
        "NDJSONStream.decode",
        "ProcessStream.decode",
    }
)


def test_the_surface_is_the_sdk_version_the_tests_were_written_for() -> None:
    assert len(public_methods()) == 114


def test_every_public_method_is_called_in_an_e2e_test() -> None:
    here = Path(__file__).parent
    text = "\n".join(p.read_text() for p in here.glob("test_*.py") if p.name != Path(__file__).name)
    called = set(re.findall(r"\.([a-z_]+)\(", text))
    uncovered = [
        m for m in public_methods() if m not in NO_REQUEST and m.split(".")[1] not in called
    ]
    assert uncovered == []
