"""Runs the code blocks of README.md and docs/ as a project that installed the wheel would.

A pytest plugin (``pytest -p docs_plugin``) built on Sybil: each page gets an empty project
directory of its own, and its blocks run there in order, through the installed
``pytest-createos`` (never the checkout):

- ``python`` blocks holding tests are saved as ``tests/test_<page>_<line>.py`` and run with
  ``pytest`` (the way the tutorial says to), warnings as errors; the run must pass. Other
  ``python`` blocks run as scripts (``python block.py``).
- ``bash``/``sh`` blocks run with ``bash -e`` (``pip`` finds the built wheel through
  ``PIP_FIND_LINKS``).
- ``ini`` blocks are the project's ``pytest.ini``; ``toml`` blocks its ``pyproject.toml``.
- A ``text`` block right after ``<!-- output -->`` must equal the output of the block before it
  (for ``pytest`` runs: the lines it shows, in order, anywhere in the report).
- ``<!-- skip: next "why" -->`` (Sybil's skip) marks a block not meant to run here, with why.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from sybil import Example, Sybil
from sybil.parsers.markdown import CodeBlockParser, SkipParser

ROOT = Path(os.environ.get("DOCS_ROOT", Path(__file__).resolve().parents[2]))
TIMEOUT = 120


def _project(example: Example) -> Path:
    project = example.namespace["project"]
    assert isinstance(project, Path)
    return project


def _run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTHONPATH", None)  # the installed package, never the checkout
    return subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT, check=False
    )


def _record(example: Example, done: subprocess.CompletedProcess[str], what: str) -> None:
    example.namespace["last"] = done.stdout + done.stderr
    if done.returncode != 0:
        raise AssertionError(
            f"{what} exited {done.returncode}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
        )


def _saved(example: Example) -> bool:
    """``<!-- save: PATH -->`` before a block: the page tells the reader to save it there."""
    target = example.namespace.pop("save_as", None)
    if target is None:
        return False
    path = _project(example) / target
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(example.parsed)
    return True


def run_python(example: Example) -> None:
    if _saved(example):
        return
    source = example.parsed
    project = _project(example)
    stem = re.sub(r"\W", "_", Path(example.path).stem)
    if re.search(r"^(async )?def test_", source, re.MULTILINE):
        path = project / "tests" / f"test_{stem}_{example.line}.py"
        path.parent.mkdir(exist_ok=True)
        path.write_text(source)
        done = _run(
            # As the page says to run it (a plain ``pytest``: its header is shown output).
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-W", "error",
             str(path.relative_to(project))],
            project,
        )
        _record(example, done, f"pytest {path.name}")
        assert "warnings summary" not in done.stdout, done.stdout
        assert "Warning" not in done.stderr, done.stderr
        return
    path = project / f"block_{stem}_{example.line}.py"
    path.write_text(source)
    _record(example, _run([sys.executable, "-W", "error", path.name], project), path.name)


def _serve(example: Example) -> dict[str, str]:
    """The page's ``createos-fake serve`` (started on first use): the variables it prints."""
    exports = example.namespace.get("served")
    if exports is None:
        command = ["createos-fake", "serve", "--port", "0", "--quiet", "--transitions", "immediate"]
        server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        example.namespace["server"] = server
        exports = {}
        assert server.stdout is not None
        while not exports.get("CREATEOS_API_KEY"):
            line = server.stdout.readline()
            assert line, "createos-fake serve exited"
            if line.startswith("export "):
                name, _, value = line.removeprefix("export ").strip().partition("=")
                exports[name] = value
        exports["FAKE"] = exports["CREATEOS_SANDBOX_BASE_URL"]
        example.namespace["served"] = exports
    return exports


def run_shell(example: Example) -> None:
    if _saved(example):
        return
    project = _project(example)
    script = example.parsed
    if example.namespace.pop("with_serve", False):
        exports = _serve(example)
        script = "".join(f"export {k}={v}\n" for k, v in exports.items()) + script
    done = _run(["bash", "-e", "-c", script], project)
    _record(example, done, "the shell block")


def write_file(name: str) -> Any:
    def write(example: Example) -> None:
        (_project(example) / name).write_text(example.parsed)

    return write


def compare_output(example: Example) -> None:
    if not example.namespace.get("expect_output"):
        return
    example.namespace["expect_output"] = False
    shown = [line for line in example.parsed.splitlines() if line.strip()]
    real = [line.rstrip() for line in example.namespace.get("last", "").splitlines()]
    position = 0
    for line in shown:
        try:
            position = real.index(line.rstrip(), position) + 1
        except ValueError:
            raise AssertionError(
                f"shown output line not in the real output (in order): {line!r}\n--- real\n"
                + "\n".join(real)
            ) from None


class Markers:
    """``<!-- output -->``: the next ``text`` block is the previous block's output;
    ``<!-- save: PATH -->``: the next block is a file the reader saves at ``PATH``;
    ``<!-- with: createos-fake serve -->``: the next shell block runs beside the page's
    ``createos-fake serve``, with ``FAKE`` and the variables it prints set."""

    def __call__(self, document: Any) -> Any:
        from sybil import Region

        pattern = r"^<!-- (output|save: (\S+)|with: createos-fake serve) -->$"
        for match in re.finditer(pattern, document.text, re.M):
            yield Region(match.start(), match.end(), match.group(1), self._mark)

    @staticmethod
    def _mark(example: Example) -> None:
        marker = str(example.parsed)
        if marker == "output":
            example.namespace["expect_output"] = True
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

    server = namespace.get("server")
    if server is not None:
        server.terminate()
        server.wait(timeout=10)
        server.stdout.close()
    shutil.rmtree(namespace["project"], ignore_errors=True)


pytest_collect_file = Sybil(
    parsers=[
        SkipParser(),
        Markers(),
        CodeBlockParser("python", run_python),
        CodeBlockParser("bash", run_shell),
        CodeBlockParser("sh", run_shell),
        CodeBlockParser("ini", write_file("pytest.ini")),
        CodeBlockParser("toml", write_file("pyproject.toml")),
        CodeBlockParser("text", compare_output),
    ],
    path=str(ROOT),
    patterns=os.environ.get("DOCS_PATTERNS", "README.md docs/*.md docs/*/*.md").split(),
    setup=_setup,
    teardown=_teardown,
).pytest()
