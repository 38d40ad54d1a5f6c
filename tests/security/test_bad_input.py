"""Bad input: no request answers 500.

An exec argument over 128 KiB (the kernel's ``MAX_ARG_STRLEN``) answered 500: ``execve``
failed with ``E2BIG`` inside the fake. So did an environment entry over the same size, and a
command line past Linux's 2 MiB; a managed process was accepted (201) and then failed. Each
is a 400 naming the field now, with the service's error envelope, like other validation
errors; a seeded corpus of odd values around them (sizes at the limits, odd paths, odd
characters) must never answer 5xx.
"""

from __future__ import annotations

import json
import random
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from tests.security._attack import Target

pytestmark = pytest.mark.reliability

#: ``MAX_ARG_STRLEN`` less the string's NUL: the longest argument Linux passes.
MAX_ARG = 131_071
_STRLEN = (
    "longer than 131071 bytes, the most Linux passes to a program (MAX_ARG_STRLEN); pass "
    "large data as stdin or in a file"
)
_ENV = (
    "has an entry (KEY=VALUE) longer than 131071 bytes, the most Linux passes to a program "
    "(MAX_ARG_STRLEN); pass large data in a file"
)
_TOTAL = (
    "arguments and environment take more than 1966080 bytes together; pass large data as "
    "stdin or in a file"
)
ROUTES = ["exec", "exec?stream=true", "processes"]


@pytest.fixture(name="sandbox", scope="module")
def _sandbox(serve: Target) -> str:
    return serve.create(envs={"A": "1"})


def _post(serve: Target, sandbox: str, route: str, body: dict[str, Any]) -> Any:
    # Sent as escaped JSON: a lone surrogate is valid JSON text, not valid UTF-8.
    return serve.api.post(
        f"/v1/sandboxes/{sandbox}/{route}",
        content=json.dumps(body),
        headers={"Content-Type": "application/json"},
        timeout=60,
    )


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"cmd": "echo", "args": ["a" * (MAX_ARG + 1)]}, "args", f"has an argument {_STRLEN}"),
        ({"cmd": "/bin/" + "a" * MAX_ARG}, "cmd", f"is {_STRLEN}"),
        ({"cmd": "true", "env": {"A": "v" * MAX_ARG}}, "env", _ENV),
        ({"cmd": "true", "args": ["a" * 130_000] * 17}, "args", _TOTAL),
    ],
    ids=["argument", "cmd", "env", "total"],
)
@pytest.mark.parametrize("route", ROUTES)
def test_a_command_linux_cannot_start_is_a_400_naming_the_field(
    serve: Target, sandbox: str, route: str, body: dict[str, Any], field: str, message: str
) -> None:
    reply = _post(serve, sandbox, route, body)
    assert (reply.status_code, reply.json()) == (400, {"status": "fail", "data": {field: message}})
    assert serve.ready()


def _corpus(seed: int, count: int) -> list[tuple[str, dict[str, Any]]]:
    """Requests with values at and around the limits and odd values elsewhere."""
    rng = random.Random(seed)
    sizes = [0, 1, 4095, 4096, MAX_ARG - 1, MAX_ARG, MAX_ARG + 1, 200_000]
    odd = ["", "/", "//", "/root/..", "relative", "/root/\udc80", "/\x01", "/root/" + "b" * 300]
    odd += ["-", "--", "/dev/null", "/proc/self/exe", "é" * 70_000]
    corpus = []
    for _ in range(count):
        route = rng.choice(ROUTES)
        body: dict[str, Any] = {"cmd": rng.choice(["true", "echo", "/nonexistent", *odd])}
        body["args"] = [rng.choice(["x", *odd]) * 1 for _ in range(rng.randrange(3))]
        body["args"].append("a" * rng.choice(sizes))
        if rng.random() < 0.5:
            body["cwd"] = rng.choice(["/root", "/tmp", *odd])
        if rng.random() < 0.3:
            body["env"] = {"A": "v" * rng.choice(sizes)}
        corpus.append((route, body))
    return corpus


def test_odd_commands_never_answer_5xx(serve: Target, sandbox: str) -> None:
    failures = []
    for route, body in _corpus(seed=2806, count=60):
        reply = _post(serve, sandbox, route, body)
        if reply.status_code >= 500 or "internal error" in reply.text:
            failures.append((route, {k: str(v)[:40] for k, v in body.items()}, reply.text[:200]))
    assert failures == []
    assert serve.ready()
