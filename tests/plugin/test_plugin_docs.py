"""Docs samples are the example files CI runs, character for character."""

from __future__ import annotations

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
#: The user docs owned with the plugin; each sample in them must be an example file.
USER_DOCS = [
    ROOT / "README.md",
    ROOT / "docs" / "index.md",
    ROOT / "docs" / "tutorial.md",
    *sorted((ROOT / "docs" / "howto").glob("*.md")),
    *sorted((ROOT / "docs" / "reference").glob("*.md")),
]
BLOCK = re.compile(r"```(python|sh)\n(.*?)```", re.DOTALL)
QUICK_START = """\
## Quick start

Install and run the fake CreateOS API locally (prints the URL and the API key):

```bash
pip install -e . && createos-fake serve
```

Install and run the tests:

```bash
pip install -e '.[test]' && pytest
```
"""


def _examples() -> dict[str, str]:
    return {
        path.name: path.read_text().rstrip("\n") + "\n"
        for path in sorted(EXAMPLES.iterdir())
        if path.suffix in (".py", ".sh")
    }


@pytest.mark.parametrize("doc", USER_DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_sample_is_an_example_file(doc: pathlib.Path) -> None:
    """Each ```python/```sh block equals a whole file under examples/ and names it."""
    text = doc.read_text()
    examples = _examples()
    for _lang, body in BLOCK.findall(text):
        matches = [name for name, content in examples.items() if content == body]
        assert matches, f"{doc.name}: a sample is not the body of any file in examples/"
        assert f"examples/{matches[0]}" in text, f"{doc.name}: name examples/{matches[0]}"


def test_readme_keeps_the_quick_start_first() -> None:
    """The two install commands stay the README's first section, unchanged."""
    text = (ROOT / "README.md").read_text()
    sections = text.split("\n## ")
    assert "## " + sections[1].rstrip("\n") + "\n" == QUICK_START


def test_docs_link_only_to_existing_pages() -> None:
    """Relative links in the user docs point at files that exist (component docs aside)."""
    pending = {"faults.md", "time.md"}  # written by the faults engineer
    for doc in USER_DOCS:
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", doc.read_text()):
            path = (doc.parent / target).resolve()
            assert path.exists() or path.name in pending, f"{doc.name} links to {target}"
