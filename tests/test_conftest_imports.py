"""No test module imports ``conftest`` by its bare name: pytest imports every folder's
``conftest.py`` as a module named ``conftest``, so ``from conftest import x`` finds whichever
was collected first and a run that lists another folder's file first fails to collect. Shared
helpers live in an importable module (``tests._helpers``)."""

from __future__ import annotations

import ast
from pathlib import Path

_TESTS = Path(__file__).parent


def _bare_conftest_imports(source: str) -> list[int]:
    """The lines of ``source`` that import the bare ``conftest`` module."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            names = [node.module] if not node.level else []
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        if "conftest" in names:
            found.append(node.lineno)
    return found


def test_no_test_module_imports_a_bare_conftest() -> None:
    offenders = [
        f"{path.relative_to(_TESTS)}:{line}"
        for path in sorted(_TESTS.rglob("*.py"))
        for line in _bare_conftest_imports(path.read_text())
    ]
    assert offenders == []


def test_the_check_sees_both_spellings_and_spares_qualified_ones() -> None:
    source = (
        "from conftest import a\nimport conftest\nfrom .conftest import b\n"
        "from tests.provider.conftest import c\n"
    )
    assert _bare_conftest_imports(source) == [1, 2]
