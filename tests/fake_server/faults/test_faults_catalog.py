"""The fault actions have one list (``fake_server/faults/catalog.py``): everything that names
them (the exports, the control API's parser, the chaos mix, the reference page) follows it."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import ClassVar

import pytest

import fake_server.faults as faults
import pytest_createos
from benchmarks import chaos
from fake_server.faults.actions import ResponseAction
from fake_server.faults.catalog import (
    ACTION_NAMES,
    ACTION_TYPES,
    collect,
    reference_table,
    with_reference_table,
)
from fake_server.faults.spec import FaultSpecError, action_from_json

ROOT = Path(__file__).resolve().parents[3]
PAGE = ROOT / "docs" / "reference" / "fault-actions.md"


def test_the_reference_page_holds_the_generated_table() -> None:
    """Regenerate with ``rewrite_reference("docs/reference/fault-actions.md")``."""
    page = PAGE.read_text(encoding="utf-8")
    assert with_reference_table(page) == page
    for kind, cls in ACTION_TYPES.items():
        assert f"| `{cls.__name__}(" in page
        assert f"`{kind}`" in page


def test_exports_and_parser_follow_the_catalog() -> None:
    for kind, cls in ACTION_TYPES.items():
        assert getattr(faults, cls.__name__) is cls
        assert getattr(pytest_createos, cls.__name__) is cls
        assert cls.__name__ in faults.__all__
        assert cls.__name__ in pytest_createos.__all__
        with pytest.raises(FaultSpecError) as info:
            action_from_json({"type": kind, "no_such_field": 1})
        assert info.value.field == "action.no_such_field"
    assert pytest_createos.FAULT_ACTIONS == ACTION_NAMES
    assert len(ACTION_NAMES) == len(ACTION_TYPES) == 22


def test_the_chaos_mix_covers_every_action_or_says_why_not() -> None:
    mixed = {type(action) for op in chaos.OPERATIONS for action in chaos.chaos_mix(op)}
    assert mixed | set(chaos.LEFT_OUT) == set(ACTION_TYPES.values())
    assert not mixed & set(chaos.LEFT_OUT)


def test_two_actions_with_one_kind_are_refused() -> None:
    class One(ResponseAction):
        kind: ClassVar[str] = "same"

    class Two(ResponseAction):
        kind: ClassVar[str] = "same"

    module = ModuleType("twice")
    for cls in (One, Two):
        cls.__module__ = module.__name__
        setattr(module, cls.__name__, cls)
    with pytest.raises(
        TypeError, match=r"^fault action kind 'same' is defined twice: One and Two$"
    ):
        collect((module,))
    assert "One" not in reference_table()
