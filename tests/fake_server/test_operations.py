"""Operations carry their facts: ``fake_server.operations`` is the only place that lists
operation names, and the layers act on its records' flags (streamed exec decided once)."""

from __future__ import annotations

import ast
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from fake_server import operations
from fake_server.faults import Fault, HttpError
from fake_server.operations import BY_NAME, OPERATIONS, exec_streamed, named

if TYPE_CHECKING:
    import httpx

    from fake_server import FakeCreateOS

MakeSandbox = Callable[..., Awaitable[str]]

SOURCE = Path(operations.__file__).parent


def _set_literals(tree: ast.AST) -> list[tuple[int, list[str]]]:
    """``(line, strings)`` of each set display and ``frozenset``/``set`` call over literals."""
    found = []
    for node in ast.walk(tree):
        elements: list[ast.expr] = []
        if isinstance(node, ast.Set):
            elements = list(node.elts)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("frozenset", "set")
            and node.args
            and isinstance(node.args[0], ast.Set | ast.List | ast.Tuple)
        ):
            elements = list(node.args[0].elts)
        strings = [e.value for e in elements if isinstance(e, ast.Constant)]
        found.append((getattr(node, "lineno", 0), [s for s in strings if isinstance(s, str)]))
    return found


def test_no_operation_name_is_listed_in_a_set_outside_operations() -> None:
    """A fact about operations (open, denied to tokens, streamed...) is a flag of the record,
    not a side set some other module keeps in step by hand."""
    offenders = []
    for path in sorted(SOURCE.rglob("*.py")):
        if path == Path(operations.__file__) or "runtime" in path.relative_to(SOURCE).parts:
            continue  # the runtimes' sets name shell commands, some of which share a name
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for line, strings in _set_literals(tree):
            named_ops = [s for s in strings if s in OPERATIONS]
            if named_ops:
                offenders.append(f"{path.relative_to(SOURCE)}:{line}: {named_ops}")
    assert offenders == []


def test_the_flags_say_what_the_layers_used_to_list() -> None:
    assert named(open=True) == {
        "health",
        "readiness",
        "list_shapes",
        "list_rootfs",
        "ingress",
        "not_implemented",
        "method_not_allowed",
    }
    assert named(token_denied=True) == {
        "create_access_token",
        "get_access_token",
        "rotate_access_token",
        "disable_access_token",
    }
    assert named(stream="frames") == {"connect_process"}
    assert named(stream="events") == {"exec_stream"}
    assert named(stream="bytes") == {"download_file"}
    assert named(body="file") == {"upload_file"}
    assert named(body="streamed") == {"ingress"}
    assert named(shown_as="execs") == {"exec", "exec_stream"}
    assert BY_NAME["exec_stream"].path == BY_NAME["exec"].path


@pytest.mark.parametrize(
    ("query", "body", "streamed"),
    [
        (None, None, False),
        ("true", None, True),
        ("1", None, True),
        ("TRUE", False, True),
        ("false", True, True),
        (None, True, True),
        (None, "true", False),  # not a boolean: the handler answers 400
        ("yes", None, False),
    ],
)
def test_exec_streamed_is_the_query_or_the_body_flag(
    query: str | None, body: object, streamed: bool
) -> None:
    assert exec_streamed(query, body) is streamed


@pytest.mark.asyncio
async def test_a_body_flag_stream_is_exec_stream_to_the_faults_too(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    """``stream: true`` in the body streams; a fault on ``exec_stream`` fires for it as it
    does for ``?stream=true``, and a buffered exec is left alone."""
    sandbox_id = await make_sandbox()
    fake.faults.add(Fault("exec_stream", HttpError(503), times=2))
    url = f"/v1/sandboxes/{sandbox_id}/exec"
    buffered = await client.post(url, json={"cmd": "echo", "args": ["x"]})
    assert buffered.json()["data"]["result"]["stdout"] == "x\n"
    for response in (
        await client.post(url, json={"cmd": "echo", "args": ["x"], "stream": True}),
        await client.post(url + "?stream=true", json={"cmd": "echo", "args": ["x"]}),
    ):
        assert response.status_code == 503
    streamed = await client.post(url, json={"cmd": "echo", "args": ["y"], "stream": True})
    assert [json.loads(line) for line in streamed.text.splitlines()] == [
        {"stdout": "y\n"},
        {"exit_code": 0},
    ]
    assert fake.journal.operations()[-4:] == ["exec", "exec_stream", "exec_stream", "exec_stream"]


@pytest.mark.asyncio
async def test_a_stream_field_that_is_not_a_boolean_is_400_as_exec(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    sandbox_id = await make_sandbox()
    response = await client.post(
        f"/v1/sandboxes/{sandbox_id}/exec", json={"cmd": "true", "stream": "yes"}
    )
    assert response.status_code == 400
    assert response.json() == {"status": "fail", "data": {"stream": "must be a boolean"}}
    assert fake.journal.operations()[-1] == "exec"
