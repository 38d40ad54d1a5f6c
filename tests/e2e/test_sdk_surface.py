"""Every public SDK method the fake serves is called by a test in tests/e2e; the rest (account
resources, computer use) is the known 501 list."""

from __future__ import annotations

import re
from pathlib import Path

from sdk_surface import public_methods, reaching_501

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


def test_the_501_list_is_account_resources_and_computer_use_only() -> None:
    assert len(public_methods()) == 114
    assert len(reaching_501()) == 54


def test_every_served_method_is_called_in_an_e2e_test() -> None:
    here = Path(__file__).parent
    text = "\n".join(p.read_text() for p in here.glob("test_*.py") if p.name != Path(__file__).name)
    called = set(re.findall(r"\.([a-z_]+)\(", text))
    served = [m for m in public_methods() if m not in reaching_501() and m not in NO_REQUEST]
    uncovered = [m for m in served if m.split(".")[1] not in called]
    assert uncovered == []
