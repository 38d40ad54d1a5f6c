"""The docs run's comparison of shown output with real output (``.ci/docs/shown.py``): what it
blanks, and that a changed line still fails."""

from __future__ import annotations

import importlib.util
import pathlib
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _shown() -> Any:
    spec = importlib.util.spec_from_file_location("shown", ROOT / ".ci" / "docs" / "shown.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


shown = _shown()

REAL = """\
createos-fake serving http://127.0.0.1:41234 (API under http://127.0.0.1:41234/v1); Ctrl-C stops it
runtime: process (sandboxes: eth0, DNS, NAT to the host's uplink)
state: /tmp/docs-project-x1/.local/state/createos-fake (new)
export CREATEOS_API_KEY=cos_live_3d03e0e63b90926a71e6122120e93f5b
createos_provider = <pytest_createos._bridge.BridgedProvider object at 0x7f9777824050>
metadata={'tag': '13610a36-49d0-4ef7-b22c-18f663ea6c51'}
POST /v1/sandboxes 200 6.1ms
========================== 1 passed, 1 error in 0.24s ==========================
""".splitlines()


def test_what_varies_between_runs_is_blanked() -> None:
    """Ports, keys, addresses, UUIDs, durations and the project directory differ from run to
    run; the page shows its own and still matches."""
    page = [
        "createos-fake serving http://127.0.0.1:8080 (API under http://127.0.0.1:8080/v1); "
        "Ctrl-C stops it",
        "state: ./.local/state/createos-fake (new)",
        "export CREATEOS_API_KEY=cos_live_5f0c…",
        "createos_provider = <pytest_createos._bridge.BridgedProvider object at 0x7f00000000>",
        "metadata={'tag': '00000000-0000-0000-0000-000000000000'}",
        "POST /v1/sandboxes 200 0.4ms",
        "…1 passed, 1 error in 9.99s…",
    ]
    assert shown.compare(page, REAL, "/tmp/docs-project-x1") is None


def test_an_ellipsis_stands_for_any_text_and_lines_keep_their_order() -> None:
    assert shown.compare(["runtime: process (…)", "export …"], REAL) is None
    assert shown.compare(["export …", "runtime: process (…)"], REAL) is not None


def test_a_changed_word_fails_and_shows_the_real_output() -> None:
    problem = shown.compare(["runtime: bashkit"], REAL)
    assert problem is not None
    assert problem.startswith(
        "shown output line not in the real output (in order, normalised): 'runtime: bashkit'"
    )
    assert "runtime: process (sandboxes: eth0, DNS, NAT to the host's uplink)" in problem


def test_a_shown_line_matches_a_whole_real_line_only() -> None:
    """A shown line that is only the start of a real line does not pass for it."""
    assert shown.compare(["runtime: process"], REAL) is not None
