"""Adding a fault action is defining its class: in a copy of the tree, a class appended to
``resource_actions.py`` shows up in the exports, the control API's parser, the chaos mix and the
reference table (a fresh interpreter, so it sits here with the slow tests)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.reliability

ROOT = Path(__file__).resolve().parents[3]
PAGE = ROOT / "docs" / "reference" / "fault-actions.md"

NEW_ACTION = '''

@dataclass(frozen=True)
class SpillCoffee(OutOfBandAction):
    """Coffee over the keyboard: the sandbox's next call goes as it would have."""

    kind: ClassVar[str] = "spill_coffee"
    cups: int = 1

    def apply(self, world: World, aim: Aim) -> None:
        pass
'''

PROBE = """
import json, sys
import fake_server.faults as faults
import pytest_createos
from benchmarks.chaos import chaos_mix
from fake_server.faults.catalog import rewrite_reference
from fake_server.faults.spec import action_from_json

rewrite_reference(sys.argv[1])
print(json.dumps({
    "faults_all": "SpillCoffee" in faults.__all__,
    "faults_attr": faults.SpillCoffee.__name__,
    "plugin_all": "SpillCoffee" in pytest_createos.__all__,
    "plugin_attr": pytest_createos.SpillCoffee is faults.SpillCoffee,
    "parsed": repr(action_from_json({"type": "spill_coffee", "cups": 2})),
    "chaos": sorted({type(a).__name__ for a in chaos_mix("get_sandbox")}),
    "page": "| `SpillCoffee(cups=1)` | `spill_coffee` | OutOfBandAction | Coffee over the "
    "keyboard: the sandbox's next call goes as it would have |" in open(sys.argv[1]).read(),
}))
"""


def test_an_action_added_in_its_one_place_appears_everywhere(tmp_path: Path) -> None:
    """Defining a class in ``resource_actions.py`` is all it takes: exports, parser, chaos mix,
    reference table (in a copy of the tree, in a fresh interpreter)."""
    for name in ("fake_server", "pytest_createos", "benchmarks"):
        shutil.copytree(ROOT / name, tmp_path / name)  # with __pycache__: no recompiling
    module = tmp_path / "fake_server" / "faults" / "resource_actions.py"
    module.write_text(module.read_text(encoding="utf-8") + NEW_ACTION, encoding="utf-8")
    page = tmp_path / "fault-actions.md"
    shutil.copy(PAGE, page)
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(page)],
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen == {
        "faults_all": True,
        "faults_attr": "SpillCoffee",
        "plugin_all": True,
        "plugin_attr": True,
        "parsed": "SpillCoffee(cups=2)",
        "chaos": seen["chaos"],
        "page": True,
    }
    assert "SpillCoffee" in seen["chaos"]
