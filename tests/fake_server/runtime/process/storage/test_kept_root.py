"""A kept directory of sandboxes (``serve --state-dir``) as a start finds it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fake_server.runtime.process.storage.rootdir import TRASH, KeptRoot

if TYPE_CHECKING:
    from pathlib import Path


def test_a_start_removes_builds_and_half_removed_sandboxes_and_keeps_the_rest(
    tmp_path: Path,
) -> None:
    """A template build's sandbox and a destroyed sandbox's directory that a killed fake was
    removing go; every sandbox directory stays; nothing is removed at close."""
    kept = tmp_path / "sandboxes"
    for name in ("sb-1", "build-abc", f"{TRASH}sb-2-0a1b"):
        (kept / name / "upper").mkdir(parents=True)
    removed: list[str] = []

    def remove(path: Path) -> None:
        removed.append(path.name)
        (path / "upper").rmdir()
        path.rmdir()

    root = KeptRoot(kept, remove)
    assert sorted(removed) == [f"{TRASH}sb-2-0a1b", "build-abc"]
    assert [p.name for p in kept.iterdir()] == ["sb-1"]
    root.close()
    assert [p.name for p in kept.iterdir()] == ["sb-1"]
