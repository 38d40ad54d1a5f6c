"""docs/fake-server.md's route index lists every route the fake serves, in the router's order,
each with a source: the list cannot drift from ``fake_server/operations.py``."""

from __future__ import annotations

import re
from pathlib import Path

from fake_server import operations

DOC = Path(__file__).resolve().parents[2] / "docs" / "fake-server.md"
ROW = re.compile(
    r"^\| `(?P<op>[a-z_]+)` \| (?P<method>[A-Z*]+) \| `(?P<path>[^`]+)` \| (?P<src>.+) \|$"
)


def index_rows() -> list[re.Match[str]]:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("### Every route and its source\n", 1)[1].split("\n### ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("| `")]
    rows = [ROW.match(line) for line in lines]
    assert all(rows), [line for line, row in zip(lines, rows, strict=True) if row is None]
    return [row for row in rows if row is not None]


def test_the_route_index_matches_the_routes_the_fake_serves() -> None:
    listed = [(row["method"], row["path"], row["op"]) for row in index_rows()]
    assert listed == [(op.method, op.path, op.name) for op in operations.ROUTES]


def test_every_listed_route_names_a_source() -> None:
    for row in index_rows():
        assert re.search(r"Python|TS|CLI|fidelity", row["src"]), row["op"]
