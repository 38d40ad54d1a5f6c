"""Runs the code blocks of README.md and docs/ as a project that installed the wheel would.

A pytest plugin (``pytest -p docs_plugin``) built on Sybil: each page gets an empty project
directory of its own, and its blocks run there in order, through the installed
``pytest-createos`` (never the checkout):

- ``python`` blocks holding tests are saved as ``tests/test_<page>_<line>.py`` (or where
  ``<!-- save: PATH -->`` says) and run with ``pytest`` (the way the tutorial says to),
  warnings as errors; the run must pass. Other ``python`` blocks run as scripts
  (``python block.py``).
- ``bash``/``sh`` blocks run with ``bash -e`` (``pip`` finds the built wheel through
  ``PIP_FIND_LINKS``).
- ``ini`` blocks are the project's ``pytest.ini``; ``toml`` blocks its ``pyproject.toml``.
- Every block that shows rather than runs (``text``, ``console``, ``json``, ``yaml``) is
  marked: ``<!-- output -->`` before it says it is the output of the block before it, and
  it is compared with that output as ``shown.py`` says (in order, normalised);
  ``<!-- illustrative: "why" -->`` says it is no block's output here (a diagram, a listing,
  a sample from a terminal CI has not). An unmarked one fails.
  ``<!-- output: createos-fake serve -->`` compares it with what the page's server (started
  ``until Ctrl-C``) printed so far: its start-up lines and request log.
- ``<!-- exit: N -->``: the next block must exit with status N (a failing test, a usage
  error) instead of 0.
- ``<!-- until Ctrl-C -->``: the next shell block serves until interrupted; it runs in the
  background beside the page's later blocks and gets SIGINT at the page's end (``served.py``).
- ``<!-- with: createos-fake serve -->``: the next shell block runs beside the page's
  server (the one started ``until Ctrl-C``, else one of its own), with ``FAKE``,
  ``CREATEOS_FAKE_CONTROL_KEY`` and the variables it prints set.
- ``<!-- save: PATH -->``: the next block is a file the reader saves at ``PATH``.
- ``<!-- skip: next "why" -->`` (Sybil's skip) marks a block not meant to run here, with why.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from served import Served, start
from shown import SHOWN_LANGUAGES, compare
from sybil import Example, Sybil
from sybil.parsers.markdown import CodeBlockParser, SkipParser

ROOT = Path(os.environ.get("DOCS_ROOT", Path(__file__).resolve().parents[2]))
TIMEOUT = 120


def _project(example: Example) -> Path:
    project = example.namespace["project"]
    assert isinstance(project, Path)
    return project


def _env() -> dict[str, str]:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTHONPATH", None)  # the installed package, never the checkout
    return env


def _run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command,
        cwd=cwd,
        env=_env(),
        stdin=subprocess.DEVNULL,  # as in CI: no terminal
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )


def _record(example: Example, done: subprocess.CompletedProcess[str], what: str) -> None:
    example.namespace["last"] = done.stdout + done.stderr
    expected = example.namespace.pop("exit", 0)
    if done.returncode != expected:
        raise AssertionError(
            f"{what} exited {done.returncode}, not {expected}\n--- stdout\n{done.stdout}"
            f"\n--- stderr\n{done.stderr}"
        )


def _save_path(example: Example) -> Path | None:
    """``<!-- save: PATH -->`` before a block: the page tells the reader to save it there."""
    target = example.namespace.pop("save_as", None)
    if target is None:
        return None
    path = _project(example) / target
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(example.parsed)
    return path


def run_python(example: Example) -> None:
    saved = _save_path(example)
    source = example.parsed
    project = _project(example)
    stem = re.sub(r"\W", "_", Path(example.path).stem)
    if re.search(r"^(async )?def test_", source, re.MULTILINE):
        path = saved or project / "tests" / f"test_{stem}_{example.line}.py"
        path.parent.mkdir(exist_ok=True)
        path.write_text(source)
        done = _run(
            # As the page says to run it (a plain ``pytest``: its header is shown output).
            [
                sys.executable,
                "-m",
                "pytest",
                "-p",
                "no:cacheprovider",
                "-W",
                "error",
                str(path.relative_to(project)),
            ],
            project,
        )
        _record(example, done, f"pytest {path.name}")
        assert "warnings summary" not in done.stdout, done.stdout
        assert "Warning" not in done.stderr, done.stderr
        return
    if saved is not None:
        return
    path = project / f"block_{stem}_{example.line}.py"
    path.write_text(source)
    _record(example, _run([sys.executable, "-W", "error", path.name], project), path.name)


def _servers(example: Example) -> list[Served]:
    servers: list[Served] = example.namespace.setdefault("servers", [])
    return servers


def _serve(example: Example) -> dict[str, str]:
    """The page's ``createos-fake serve``: the one it started, else one of its own."""
    if _servers(example):
        return _servers(example)[-1].exports
    exports = example.namespace.get("served")
    if exports is None:
        command = ["createos-fake", "serve", "--port", "0", "--quiet", "--transitions", "immediate"]
        server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=_env())
        example.namespace["server"] = server
        exports = {}
        assert server.stdout is not None
        while not exports.get("CREATEOS_FAKE_CONTROL_KEY"):  # the last start-up line
            line = server.stdout.readline()
            assert line, "createos-fake serve exited"
            if line.startswith("export "):
                name, _, value = line.removeprefix("export ").strip().partition("=")
                exports[name] = value
            elif line.startswith("control key: "):
                exports["CREATEOS_FAKE_CONTROL_KEY"] = line.split()[-1]
        exports["FAKE"] = exports["CREATEOS_SANDBOX_BASE_URL"]
        example.namespace["served"] = exports
    return exports


def run_shell(example: Example) -> None:
    if _save_path(example) is not None:
        return
    project = _project(example)
    script = example.parsed
    if example.namespace.pop("until_interrupted", False):
        served = start(script, project, _env(), len(_servers(example)))
        _servers(example).append(served)
        example.namespace["last"] = served.text()
        return
    for served in _servers(example):
        script = served.localise(script)
    if example.namespace.pop("with_serve", False):
        exports = _serve(example)
        script = "".join(f"export {k}={v}\n" for k, v in exports.items()) + script
    done = _run(["bash", "-e", "-c", script], project)
    _record(example, done, "the shell block")


def write_file(name: str) -> Any:
    def write(example: Example) -> None:
        (_project(example) / name).write_text(example.parsed)

    return write


def check_shown(example: Example) -> None:
    """An output block is compared with the real output; an illustrative one is left alone."""
    if example.namespace.pop("illustrative", False):
        return
    expected = example.namespace.pop("expect_output", False)
    if not expected:
        raise AssertionError(
            "a block that shows output needs <!-- output --> (compared with the block before "
            'it) or <!-- illustrative: "why" --> before it'
        )
    if expected == "server":  # what the page's server printed so far (its request log)
        servers = _servers(example)
        assert servers, "<!-- output: createos-fake serve --> on a page that started none"
        real = servers[-1].text().splitlines()
    else:
        real = example.namespace.get("last", "").splitlines()
    problem = compare(example.parsed.splitlines(), real, str(_project(example)))
    if problem is not None:
        raise AssertionError(problem)


class Markers:
    """The page's instructions to the runner, as HTML comments (see the module's docstring)."""

    PATTERN = (
        r"^[ \t]*<!-- (output|output: createos-fake serve|illustrative: .+|exit: (\d+)"
        r"|until Ctrl-C|save: (\S+)|with: createos-fake serve) -->$"
    )

    def __call__(self, document: Any) -> Any:
        from sybil import Region

        for match in re.finditer(self.PATTERN, document.text, re.M):
            yield Region(match.start(), match.end(), match.group(1), self._mark)

    @staticmethod
    def _mark(example: Example) -> None:
        marker = str(example.parsed)
        if marker == "output":
            example.namespace["expect_output"] = True
        elif marker == "output: createos-fake serve":
            example.namespace["expect_output"] = "server"
        elif marker.startswith("illustrative: "):
            example.namespace["illustrative"] = True
        elif marker.startswith("exit: "):
            example.namespace["exit"] = int(marker.removeprefix("exit: "))
        elif marker == "until Ctrl-C":
            example.namespace["until_interrupted"] = True
        elif marker.startswith("save: "):
            example.namespace["save_as"] = marker.removeprefix("save: ")
        else:
            example.namespace["with_serve"] = True


def _setup(namespace: dict[str, Any]) -> None:
    import tempfile

    directory = tempfile.mkdtemp(prefix="docs-project-")
    namespace["project"] = Path(directory)


def _teardown(namespace: dict[str, Any]) -> None:
    import shutil

    problems = []
    for served in reversed(namespace.get("servers", [])):
        problem = served.stop()
        if problem is not None:
            problems.append(f"the page's `createos-fake serve` {problem}")
    server = namespace.get("server")
    if server is not None:
        server.terminate()
        server.wait(timeout=10)
        server.stdout.close()
    shutil.rmtree(namespace["project"], ignore_errors=True)
    if problems:
        raise AssertionError("\n".join(problems))


pytest_collect_file = Sybil(
    parsers=[
        SkipParser(),
        Markers(),
        CodeBlockParser("python", run_python),
        CodeBlockParser("bash", run_shell),
        CodeBlockParser("sh", run_shell),
        CodeBlockParser("ini", write_file("pytest.ini")),
        CodeBlockParser("toml", write_file("pyproject.toml")),
        *(CodeBlockParser(language, check_shown) for language in SHOWN_LANGUAGES if language),
    ],
    path=str(ROOT),
    patterns=os.environ.get("DOCS_PATTERNS", "README.md docs/*.md docs/*/*.md").split(),
    setup=_setup,
    teardown=_teardown,
).pytest()
