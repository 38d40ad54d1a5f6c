"""The official TypeScript SDK's client and sandbox methods (``sdk_ts_smoke.mjs``) against a
thread-mode fake; its resource APIs run in ``tests/e2e/test_sdk_typescript_resources.py``
(a second Node process is too slow for the main suite). Together the two scripts call every
public method the installed package declares."""

from __future__ import annotations

import re
from pathlib import Path

from tests.e2e.ts_sdk import HERE, NODE_PATH, needs_node, run_ts_script

SCRIPTS = ("sdk_ts_smoke.mjs", "sdk_ts_resources.mjs")
#: The SDK's classes whose public methods the scripts must call, and the prefix they record.
CLASSES = {
    "CreateosSandboxClient": "",
    "Sandbox": "",
    "SandboxFiles": "files.",
    "TemplatesApi": "templates.",
    "NetworksApi": "networks.",
    "DisksApi": "disks.",
}
_CLASS = re.compile(r"^export declare class (\w+)", re.MULTILINE)
_METHOD = re.compile(r"^    (\w+)(?:<[^>]*>)?\(", re.MULTILINE)
_CHECK = re.compile(r'check\("([\w.]+)"\)')


def sdk_methods(dist: Path) -> set[str]:
    """Every public method the installed package declares on the classes above."""
    names: set[str] = set()
    for declarations in (dist / "client.d.ts", dist / "sandbox.d.ts"):
        text = declarations.read_text()
        starts = list(_CLASS.finditer(text))
        for index, start in enumerate(starts):
            prefix = CLASSES.get(start.group(1))
            end = starts[index + 1].start() if index + 1 < len(starts) else len(text)
            if prefix is not None:
                body = text[start.end() : end]
                names |= {prefix + m for m in _METHOD.findall(body) if m != "constructor"}
    return names


#: Public methods of the SDK by version: 0.7.1 on npm, 0.8.x (repository tags) adds
#: ``prewarm()``, which opens its HTTP/2 session and calls no endpoint.
SURFACES = {60: 36, 61: 37}


def _declared() -> set[str]:
    return sdk_methods(Path(NODE_PATH, "@nodeops-createos/sandbox", "dist"))


@needs_node
def test_typescript_sdk_client_and_sandbox_methods() -> None:
    assert len(run_ts_script("sdk_ts_smoke.mjs")) == SURFACES[len(_declared())]


@needs_node
def test_the_scripts_call_every_declared_method() -> None:
    called = {
        name.removeprefix("sandbox.")
        for script in SCRIPTS
        for name in _CHECK.findall((HERE / script).read_text())
    }
    declared = _declared()
    assert len(declared) in SURFACES  # the 0.7.1 or the 0.8.x surface
    assert sorted(declared - called) == []
