"""The provider's list of sandbox statuses is its own (it never imports the fake); this holds
it to the fake's one list, so a status the fake reports is one the provider knows."""

from __future__ import annotations

from typing import get_args

from fake_server.models.transitions import STATUSES
from pytest_createos.provider import SandboxStatus


def test_the_provider_knows_every_status_the_fake_reports() -> None:
    assert sorted(get_args(SandboxStatus)) == sorted(STATUSES)
