"""Dockerfile parsing for template builds: logical lines, instructions, the static rules.

The service takes a single ``FROM`` of an allowlisted base and refuses ``COPY``/``ADD``
("bring content in via RUN", TypeScript SDK how-to); those are 400s at create. Everything
else parses; which instructions the fake honours is the builder's business.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from fake_server.models.errors import BadRequest

__all__ = ["BASE_IMAGES", "MAX_DOCKERFILE", "Instruction", "parse", "parse_env"]

MAX_DOCKERFILE = 64 * 1024
#: The allowlisted ``nodeops/sandbox`` images and the catalog rootfs each one is.
BASE_IMAGES = {
    "nodeops/sandbox:debian": "devbox:1",
    "nodeops/sandbox:devbox": "devbox:1",
    "nodeops/sandbox:ubuntu": "ubuntu:24.04",
    "nodeops/sandbox:node": "node:22",
    "nodeops/sandbox:python": "python:3.12",
    "nodeops/sandbox:desktop": "desktop:1",
}


@dataclass(frozen=True, slots=True)
class Instruction:
    line: int
    keyword: str
    argument: str

    @property
    def text(self) -> str:
        return f"{self.keyword} {self.argument}".strip()


def parse(source: object) -> list[Instruction]:
    if not isinstance(source, str) or not source.strip():
        raise BadRequest("is required", field="dockerfile")
    if len(source.encode(errors="surrogatepass")) > MAX_DOCKERFILE or "\x00" in source:
        raise BadRequest(f"must be at most {MAX_DOCKERFILE} bytes of text", field="dockerfile")
    steps: list[Instruction] = []
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(source.splitlines(), 1):
        stripped = raw.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if not pending:
            start = number
        if stripped.endswith("\\"):
            pending.append(stripped[:-1].strip())
            continue
        pending.append(stripped)
        steps.append(_instruction(start, " ".join(p for p in pending if p)))
        pending = []
    if pending:
        steps.append(_instruction(start, " ".join(p for p in pending if p)))
    froms = [s for s in steps if s.keyword == "FROM"]
    if not steps or steps[0].keyword != "FROM" or len(froms) != 1:
        raise BadRequest("must start with a single FROM line", field="dockerfile")
    refused = [s for s in steps if s.keyword in ("COPY", "ADD")]
    if refused:
        raise BadRequest(
            f"line {refused[0].line}: COPY and ADD are not permitted; bring content in with RUN",
            field="dockerfile",
        )
    return steps


def _instruction(line: int, text: str) -> Instruction:
    keyword, _, argument = text.partition(" ")
    return Instruction(line, keyword.upper(), argument.strip())


def parse_env(argument: str) -> dict[str, str]:
    """``ENV A=1 B="two words"`` or the legacy ``ENV A one value``."""
    try:
        words = shlex.split(argument)
    except ValueError:
        raise ValueError("unbalanced quotes") from None
    if not words:
        raise ValueError("needs a name")
    if "=" not in words[0]:
        return {words[0]: argument.split(None, 1)[1] if len(words) > 1 else ""}
    env = {}
    for word in words:
        name, sep, value = word.partition("=")
        if not sep or not name:
            raise ValueError(f"{word!r} is not NAME=value")
        env[name] = value
    return env
