"""Docs samples are the example files CI runs, character for character."""

from __future__ import annotations

import pathlib
import re

import pytest

from tests._source_facts import source_facts

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
#: Every page: each sample in it must be an example file (other blocks are ```text/```bash).
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
BLOCK = re.compile(r"```(python|sh)\n(.*?)```", re.DOTALL)
CONTRIBUTING = """\
## Work on this repository

Install the checkout, then run the fake CreateOS API locally (it prints the URL and the API
key, and serves until Ctrl-C):

<!-- skip: next "a checkout command; .ci/run runs it" -->
```bash
pip install -e .
```

<!-- until Ctrl-C -->
```bash
createos-fake serve
```

Install and run the tests:

<!-- skip: next "a checkout command; .ci/run runs it" -->
```bash
pip install -e '.[test]' && pytest
```

That is all a fresh machine needs for the main suite to pass. A few tests need what the
`test` extra cannot install; without it they are skipped, each skip naming the line that
installs it (`pytest -rs` lists them), and under `CI=true` they fail instead, so CI never
passes by skipping. `.ci/run` installs them all (and first runs the two commands above in a
fresh clone with none of them):

- the `langflow-sandbox-createos` client, without its dependencies:
  `pip install --no-deps 'langflow-sandbox-createos==0.2.0'`;
- the official TypeScript SDK (Node.js):
  `npm install --prefix .ci/node @nodeops-createos/sandbox@0.7.1` and
  `export CREATEOS_TS_SDK_NODE_PATH=$PWD/.ci/node/node_modules`;
- for the reliability step (`pytest -m reliability`): Debian's Chromium
  (`apt-get install chromium`), nftables (`apt-get install nftables`) for sandboxes'
  way out to the network, uidmap (`apt-get install uidmap`: `newuidmap`, which maps an
  unprivileged `serve`'s sandboxes onto the caller's subordinate ids), passt
  (`apt-get install passt`: `pasta`, an unprivileged `serve`'s sandboxes' route out), lxcfs
  (`apt-get install lxcfs`: `free` and `top` in a sandbox show its shape), and devbox:1's
  Debian 13 tree with its X desktop (`apt-get install mmdebstrap && createos-fake image`,
  once per machine).
"""


def _examples() -> dict[str, str]:
    return {
        path.name: path.read_text().rstrip("\n") + "\n"
        for path in sorted(EXAMPLES.iterdir())
        if path.suffix in (".py", ".sh")
    }


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_sample_is_an_example_file(doc: pathlib.Path) -> None:
    """Each ```python/```sh block equals a whole file under examples/ and names it."""
    text = doc.read_text()
    examples = _examples()
    for _lang, body in BLOCK.findall(text):
        matches = [name for name, content in examples.items() if content == body]
        assert matches, f"{doc.name}: a sample is not the body of any file in examples/"
        assert f"examples/{matches[0]}" in text, f"{doc.name}: name examples/{matches[0]}"


def test_readme_starts_with_the_install_lines_then_the_checkout_commands() -> None:
    """Downstream projects read one install line per use first; the contributors' two
    commands (the ones .ci/run runs) follow, unchanged."""
    text = (ROOT / "README.md").read_text()
    sections = text.split("\n## ")
    assert sections[1].startswith("Install in your project\n")
    for extra in ("", "[asyncio]", "[sdk]", "[trio]"):
        name = f"'pytest-createos{extra}'" if extra else "pytest-createos "
        assert f"pip install {name}" in sections[1]
    assert "## " + sections[2].rstrip("\n") + "\n" == CONTRIBUTING
    ci = (ROOT / ".ci" / "run").read_text()
    assert "pip install -e '.[test]'\n" in ci
    # First, in a fresh clone, the README's very command, before anything else is installed.
    assert "\n    pip install -e '.[test]' && pytest\n" in ci
    assert ci.index("pip install -e '.[test]' && pytest") < ci.index("apt-get install")


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_docs_link_only_to_existing_pages(doc: pathlib.Path) -> None:
    """Relative links point at files that exist."""
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", doc.read_text()):
        assert (doc.parent / target).resolve().exists(), f"{doc.name} links to {target}"


#: What the docs run (.ci/docs) does with a shown block: compare it, or leave it alone.
SHOWN_MARKERS = re.compile(
    r'^[ \t]*<!-- (output|output: createos-fake serve|illustrative: "[^"]+") -->$', re.MULTILINE
)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_shown_block_is_compared_or_marked_illustrative(doc: pathlib.Path) -> None:
    """A block showing output is compared with the real output of the block before it
    (``<!-- output -->``) or says why it is not (``<!-- illustrative: "why" -->``)."""
    text = doc.read_text()
    unmarked = []
    inside = False
    for match in re.finditer(r"^[ \t]*```(\S*)$", text, re.MULTILINE):
        opening, inside = not inside, not inside
        if not opening or match.group(1) not in ("", "text", "console", "json", "yaml"):
            continue
        above = text[: match.start()].rstrip("\n").splitlines()[-1:]
        if not (above and SHOWN_MARKERS.match(above[0])):
            unmarked.append(text.count("\n", 0, match.start()) + 1)
    assert unmarked == [], f"{doc.name}: shown blocks without a marker at lines {unmarked}"


def _linked_pages(text: str, prefix: str = "") -> list[str]:
    """The docs pages a text links to, in order, relative to docs/."""
    links = re.findall(r"\]\(([^)#]+\.md)[^)]*\)", text)
    return [link.removeprefix(prefix) for link in links if link.startswith(prefix)]


def test_the_readme_map_is_the_index_and_lists_every_page() -> None:
    index = _linked_pages((ROOT / "docs" / "index.md").read_text())
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Documentation", 1)[1].split("\n## ", 1)[0]
    pages = sorted(str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md"))
    assert _linked_pages(section, "docs/")[1:] == index  # [0] is docs/index.md itself
    assert sorted(index) == [page for page in pages if page != "index.md"]


def test_code_and_docs_cite_only_what_this_repository_holds() -> None:
    """References point at pages of these docs, never at a specification a reader lacks."""
    sources = [*ROOT.glob("pytest_createos/**/*.py"), *ROOT.glob("fake_server/**/*.py"), *DOCS]
    citing = [str(path.relative_to(ROOT)) for path in sources if "spec §" in path.read_text()]
    assert citing == []


def test_messages_point_to_no_file_an_installed_package_lacks() -> None:
    """The wheel holds no docs/ and no examples/: a message naming one sends a user to a
    file they do not have. Docstrings and comments (read in a checkout) may name them."""
    pointing = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in [*ROOT.glob("pytest_createos/**/*.py"), *ROOT.glob("fake_server/**/*.py")]
        for line, text in source_facts(path).strings
        if re.search(r"\b(docs|examples)/", text)
    ]
    assert pointing == []
