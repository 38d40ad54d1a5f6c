"""What the source checks read from a module, parsed and walked once per test session.

The import-graph checks (``tests/test_imports.py``) and the docs checks
(``tests/plugin/test_plugin_docs.py``) read the same files; parsing and walking them is most of
their cost, and the facts kept here are small (the trees themselves are not kept).
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path


@dataclass(frozen=True)
class ImportStatement:
    """``import a.b`` (``module`` None, ``names`` ("a.b",)) or ``from .m import x, y``."""

    module: str | None
    level: int
    names: tuple[str, ...]
    is_from: bool


@dataclass(frozen=True)
class SourceFacts:
    imports: tuple[ImportStatement, ...]
    #: Names of the module-level ``def`` functions (not ``async def``).
    top_functions: tuple[str, ...]
    #: (line, text) of every string constant that is not a docstring.
    strings: tuple[tuple[int, str], ...]


@functools.cache
def source_facts(path: Path) -> SourceFacts:
    """The facts of one source file (every import, including those under TYPE_CHECKING)."""
    tree = ast.parse(path.read_text(), str(path))
    nodes = list(ast.walk(tree))
    docstrings = {
        id(node.body[0].value)
        for node in nodes
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    imports = []
    strings = []
    for node in nodes:
        if isinstance(node, ast.Import):
            names = tuple(alias.name for alias in node.names)
            imports.append(ImportStatement(None, 0, names, is_from=False))
        elif isinstance(node, ast.ImportFrom):
            names = tuple(alias.name for alias in node.names)
            imports.append(ImportStatement(node.module, node.level, names, is_from=True))
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
        ):
            strings.append((node.lineno, node.value))
    functions = tuple(node.name for node in tree.body if isinstance(node, ast.FunctionDef))
    return SourceFacts(tuple(imports), functions, tuple(strings))
