"""The fake's import graph: no circle, and no import from a lower layer to a higher one.

Read from the source with ``ast`` (imports under ``TYPE_CHECKING`` count too: a circle there
is still a circle for whoever reads the code), so the check needs nothing imported.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests._source_facts import source_facts

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "fake_server"

#: Layers that must not reach up: the pure models, the runtime and the clock never import the
#: HTTP layer, the server or the fault layer's HTTP adapter.
LOWER = ("fake_server.models", "fake_server.runtime", "fake_server.clock", "fake_server.faults")
HIGHER = ("fake_server.http", "fake_server.server", "fake_server.__main__")
#: Pairs (lower, higher): the first never imports the second. The HTTP layer never imports
#: the dashboard, which registers its routes and middlewares on the app from above.
RULES = ((LOWER, HIGHER), (("fake_server.http",), ("fake_server.dashboard",)))

#: The two runtimes: rooms of ``fake_server.runtime`` that never import each other.
RUNTIMES = ("fake_server.runtime.bashkit", "fake_server.runtime.process")
#: The interface room (the rest of ``fake_server.runtime``) imports neither runtime, except the
#: module that composes them.
COMPOSER = "fake_server.runtime.choice"


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules ``name`` imports (``from pkg import mod`` names the module)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for statement in source_facts(path).imports:
        if not statement.is_from:
            targets.update(statement.names)
        else:
            base = statement.module or ""
            if statement.level:
                anchor = package.split(".")[: len(package.split(".")) - statement.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in statement.names:
                full = f"{base}.{alias}"
                targets.add(full if full in modules else base)
    return {t for t in targets if t in modules and t != name}


@functools.cache
def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _under(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_fake_has_no_import_circle() -> None:
    assert _circles(_graph()) == []


def _upward(graph: dict[str, set[str]]) -> list[str]:
    return [
        f"{source} -> {target}"
        for lower, higher in RULES
        for source, targets in sorted(graph.items())
        if _under(source, lower)
        for target in sorted(targets)
        if _under(target, higher)
    ]


def test_lower_layers_never_import_higher_ones() -> None:
    assert _upward(_graph()) == []


def _crossings(graph: dict[str, set[str]]) -> list[str]:
    """Imports from one runtime into the other, or from the interface into either."""
    found = []
    for source, targets in sorted(graph.items()):
        if not _under(source, ("fake_server.runtime",)) or source == COMPOSER:
            continue
        home = next((room for room in RUNTIMES if _under(source, (room,))), None)
        found += [
            f"{source} -> {target}"
            for target in sorted(targets)
            for room in RUNTIMES
            if room != home and _under(target, (room,))
        ]
    return found


def test_the_runtimes_never_import_each_other_nor_does_the_interface() -> None:
    assert _crossings(_graph()) == []


def test_the_check_sees_a_runtime_importing_the_other() -> None:
    graph = {
        "fake_server.runtime.process.sandbox.runner": {"fake_server.runtime.bashkit.shell"},
        "fake_server.runtime.bashkit.shell": {"fake_server.runtime.environment"},
        "fake_server.runtime.api": {"fake_server.runtime.process"},
        "fake_server.runtime.choice": {"fake_server.runtime.process"},
    }
    assert _crossings(graph) == [
        "fake_server.runtime.api -> fake_server.runtime.process",
        "fake_server.runtime.process.sandbox.runner -> fake_server.runtime.bashkit.shell",
    ]
    assert "fake_server.runtime.bashkit.machine" in _graph()[COMPOSER]
    assert "fake_server.runtime.process" in _graph()[COMPOSER]


#: Rooms that reach a runtime only through its interface (``runtime/api.py``, composed by
#: ``runtime/choice.py``): what a runtime builds and keeps is its own business.
THROUGH_THE_DOOR = ("fake_server.models", "fake_server.persist")


def _past_the_door(graph: dict[str, set[str]]) -> list[str]:
    """Imports from the models or persistence into either runtime's room."""
    return [
        f"{source} -> {target}"
        for source, targets in sorted(graph.items())
        if _under(source, THROUGH_THE_DOOR)
        for target in sorted(targets)
        if _under(target, RUNTIMES)
    ]


def test_models_and_persistence_see_only_the_runtime_interface() -> None:
    assert _past_the_door(_graph()) == []


def test_the_door_check_sees_every_import_form(tmp_path: Path) -> None:
    """``from pkg.mod import x``, ``import pkg.mod``, ``from pkg import mod`` and relative
    forms, under ``TYPE_CHECKING`` or in a function, all count."""
    forms = {
        "a.py": "from fake_server.runtime.bashkit.mounts import Bucket\n",
        "b.py": "import fake_server.runtime.process.sandbox.pty\n",
        "c.py": "from fake_server.runtime import bashkit\n",
        "d.py": "def f():\n    from ..runtime.process import ProcessRuntime\n",
        "e.py": "if TYPE_CHECKING:\n    from fake_server.runtime.bashkit import vfs\n",
    }
    modules = _modules()
    graph = {}
    for name, text in forms.items():
        path = tmp_path / "models" / name
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
        module = f"fake_server.models.{name[:-3]}"
        graph[module] = _imports(module, path, modules)
    assert len(_past_the_door(graph)) == len(forms)


def test_the_check_sees_a_circle_and_an_upward_import() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}
    assert _circles(graph) == [["a", "b", "c"]]
    assert _under("fake_server.models.account.world", LOWER)
    assert _under("fake_server.http.app", HIGHER)
    assert "fake_server.http.keys" in _graph()["fake_server.http.app"]
    upward = {"fake_server.http.serve_guards": {"fake_server.dashboard", "fake_server.clock"}}
    assert _upward(upward) == ["fake_server.http.serve_guards -> fake_server.dashboard"]


@pytest.mark.parametrize("module", ["fake_server.models", "fake_server.runtime"])
def test_pure_layers_do_not_import_aiohttp(module: str) -> None:
    for name, path in _modules().items():
        if _under(name, (module,)):
            imports = source_facts(path).imports
            roots = {alias.split(".")[0] for i in imports if not i.is_from for alias in i.names}
            roots |= {(i.module or "").split(".")[0] for i in imports if i.is_from}
            assert "aiohttp" not in roots, name


def test_serialisers_live_in_the_wire_package() -> None:
    """A model's JSON is written in ``http/wire/`` (one module per resource family), so a
    handler or the dashboard reuses it instead of spelling the fields again."""
    outside = [
        f"{name}.{function}"
        for name, path in _modules().items()
        if _under(name, ("fake_server.http", "fake_server.dashboard"))
        and not _under(name, ("fake_server.http.wire",))
        for function in source_facts(path).top_functions
        if function.endswith("_json")
    ]
    assert outside == []


def test_each_runtime_is_a_folder_and_a_line_in_the_choice() -> None:
    from fake_server.runtime import choice
    from fake_server.runtime.api import RUNTIMES

    assert sorted(choice._MAKERS) == sorted(RUNTIMES)
    assert [name for name in RUNTIMES if not (PACKAGE / "runtime" / name).is_dir()] == []


PROCESS = "fake_server.runtime.process"
#: The process runtime's rooms, from the top down: a room imports only rooms below it, never
#: the runtime's own modules above them all (``process/__init__.py``, ``layers.py``).
PROCESS_ROOMS = tuple(
    f"{PROCESS}.{room}"
    for room in ("sandbox", "desktop", "storage", "images", "net", "containment")
)
#: What imports the process runtime's rooms from outside it: only the CLI, whose host checks
#: (``serve``'s start-up lines, ``createos-fake image``) ask the rooms themselves.
PROCESS_INSIDERS = ("fake_server.__main__",)


def _room_of(name: str) -> int | None:
    return next((i for i, room in enumerate(PROCESS_ROOMS) if _under(name, (room,))), None)


def _process_breaches(graph: dict[str, set[str]]) -> list[str]:
    """Imports up the process runtime's rooms, and into them from outside the runtime."""
    found = []
    for source, targets in sorted(graph.items()):
        home = _room_of(source)
        for target in sorted(targets):
            if not _under(target, (PROCESS,)):
                continue
            room = _room_of(target)
            if (home is not None and (room is None or room < home)) or (
                not _under(source, (PROCESS,))
                and room is not None
                and not _under(source, PROCESS_INSIDERS)
            ):
                found.append(f"{source} -> {target}")
    return found


def test_the_process_runtime_rooms_import_only_downwards_and_are_private() -> None:
    graph = _graph()
    assert _process_breaches(graph) == []
    rooms = {room for room in PROCESS_ROOMS for name in graph if _under(name, (room,))}
    assert rooms == set(PROCESS_ROOMS)  # every room is there: the check reads them all


def test_the_process_room_check_sees_an_upward_and_an_outside_import() -> None:
    graph = {
        f"{PROCESS}.net.router": {f"{PROCESS}.sandbox.tree", f"{PROCESS}.containment.caps"},
        f"{PROCESS}.containment.caps": {PROCESS},
        f"{PROCESS}.sandbox.machine": {f"{PROCESS}.storage.rootfs"},
        "fake_server.models.sandbox": {f"{PROCESS}.net.netns", PROCESS},
        "fake_server.__main__": {f"{PROCESS}.images.system"},
    }
    assert _process_breaches(graph) == [
        "fake_server.models.sandbox -> fake_server.runtime.process.net.netns",
        f"{PROCESS}.containment.caps -> {PROCESS}",
        f"{PROCESS}.net.router -> {PROCESS}.sandbox.tree",
    ]


def _loaded_after(statement: str, modules: tuple[str, ...]) -> list[str]:
    """Which of ``modules`` a fresh interpreter has loaded once it ran ``statement``."""
    code = (
        f"import json, sys\n{statement}\n"
        f"print(json.dumps(sorted(m for m in {modules!r} if m in sys.modules)))"
    )
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    loaded: list[str] = json.loads(done.stdout)
    return loaded


def test_the_fake_loads_no_http_client_until_one_is_asked_for() -> None:
    """``createos-fake serve``, and a fake whose clients are the caller's own, never load
    httpx, httpcore or trio (about 80 ms of a process's start): ``clock_transport``,
    ``tls_context`` and the first preview request import them."""
    assert _loaded_after("import fake_server.__main__", ("httpx", "httpcore", "trio")) == []


def test_loading_the_plugin_loads_no_fake() -> None:
    """A pytest run in a project with pytest-createos installed that uses none of its
    fixtures (``--collect-only``, or a suite of other tests) never imports the fake: about
    200 ms of every start and of every xdist worker's. The plugin keeps its own copies of the
    few facts it needs before a fixture runs (``tests/plugin/test_plugin_report.py``)."""
    assert _loaded_after("import pytest_createos.plugin", ("fake_server", "aiohttp")) == []
