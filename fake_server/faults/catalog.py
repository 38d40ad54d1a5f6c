"""The one list of fault actions: every concrete action class the action modules define.

An action is added by defining it in one of ``ACTION_MODULES`` (a frozen dataclass deriving
from ``Action`` with its own ``kind``); nothing else lists it. ``fake_server.faults`` and
``pytest_createos`` export ``ACTION_NAMES``, the control API's spec parser looks kinds up in
``ACTION_TYPES``, the chaos harness mixes in every action it does not tune by hand, and the
index table of ``docs/reference/fault-actions.md`` is ``reference_table()``
(``rewrite_reference("docs/reference/fault-actions.md")`` rewrites it).
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import TYPE_CHECKING, Final

from fake_server.faults import actions, resource_actions
from fake_server.faults.actions import Action

if TYPE_CHECKING:
    from types import ModuleType

__all__ = [
    "ACTION_MODULES",
    "ACTION_NAMES",
    "ACTION_TYPES",
    "TABLE_BEGIN",
    "TABLE_END",
    "collect",
    "reference_table",
    "rewrite_reference",
    "with_reference_table",
]

#: The modules whose concrete ``Action`` classes are the fault actions.
ACTION_MODULES: Final[tuple[ModuleType, ...]] = (actions, resource_actions)

TABLE_BEGIN: Final = "<!-- fault actions: generated from fake_server/faults/catalog.py -->"
TABLE_END: Final = "<!-- end of the generated table -->"


def collect(modules: tuple[ModuleType, ...]) -> dict[str, type[Action]]:
    """Kind -> class of the actions ``modules`` define, in definition order.

    A concrete action is a class defined in the module (not imported), deriving from
    ``Action`` and setting its own ``kind``; two actions with one kind are refused.
    """
    found: dict[str, type[Action]] = {}
    for module in modules:
        for value in vars(module).values():
            if not (
                isinstance(value, type)
                and issubclass(value, Action)
                and value.__module__ == module.__name__
                and vars(value).get("kind")
            ):
                continue
            if value.kind in found:
                raise TypeError(
                    f"fault action kind {value.kind!r} is defined twice: "
                    f"{found[value.kind].__name__} and {value.__name__}"
                )
            found[value.kind] = value
    return found


#: Every fault action by its JSON ``type``.
ACTION_TYPES: Final[dict[str, type[Action]]] = collect(ACTION_MODULES)
#: Their class names, sorted: what ``fake_server.faults`` and ``pytest_createos`` export.
ACTION_NAMES: Final[tuple[str, ...]] = tuple(sorted(cls.__name__ for cls in ACTION_TYPES.values()))


def _signature(cls: type[Action]) -> str:
    parts = []
    for item in dataclasses.fields(cls):  # type: ignore[arg-type]
        if item.default is not dataclasses.MISSING:
            parts.append(f"{item.name}={item.default!r}")
        elif item.default_factory is not dataclasses.MISSING:
            parts.append(f"{item.name}={item.default_factory()!r}")
        else:
            parts.append(item.name)
    return f"{cls.__name__}({', '.join(parts)})"


def _summary(cls: type[Action]) -> str:
    text = " ".join((cls.__doc__ or "").split())
    return re.split(r"\.\s+(?=[A-Z])", text, maxsplit=1)[0].rstrip(".").replace("|", "\\|")


def reference_table(types: dict[str, type[Action]] | None = None) -> str:
    """The markdown index of every action: constructor, JSON kind, family, one line."""
    rows = [
        "| action | kind | family | what it does |",
        "|---|---|---|---|",
    ]
    for kind, cls in sorted((types or ACTION_TYPES).items(), key=lambda item: item[1].__name__):
        family = next(
            base.__name__
            for base in cls.__mro__
            if base.__module__ == actions.__name__
            and not vars(base).get("kind")
            and not base.__name__.startswith("_")
        )
        rows.append(f"| `{_signature(cls)}` | `{kind}` | {family} | {_summary(cls)} |")
    return "\n".join(rows)


def with_reference_table(page: str, types: dict[str, type[Action]] | None = None) -> str:
    """``page`` with the text between the table's markers replaced by ``reference_table()``."""
    head, begin, rest = page.partition(TABLE_BEGIN)
    _, end, tail = rest.partition(TABLE_END)
    if not begin or not end:
        raise ValueError(f"the page has no {TABLE_BEGIN!r} ... {TABLE_END!r} block")
    return f"{head}{TABLE_BEGIN}\n{reference_table(types)}\n{TABLE_END}{tail}"


def rewrite_reference(path: str | Path) -> None:
    """Regenerate the table in the page at ``path`` (after adding or changing an action)."""
    page = Path(path)
    page.write_text(with_reference_table(page.read_text(encoding="utf-8")), encoding="utf-8")
