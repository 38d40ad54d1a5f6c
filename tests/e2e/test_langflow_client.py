"""langflow-sandbox-createos 0.2.0, a published client of the REST API, against the fake.

Its ``SandboxClient`` accepts only HTTP 200 on every call and reads the transitional status
from the reply of ``resume``; it runs create -> exec -> pause -> resume -> destroy here. The
package imports two ``lfx`` modules (Langflow's runtime, ~100 dependencies) for its error types
and logger; the test stands in for them, so ``.ci/run`` installs the client with ``--no-deps``.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

import pytest

from fake_server import FakeCreateOS, TransitionPolicy
from tests._needs import needs_module

if TYPE_CHECKING:
    from collections.abc import Iterator


#: Installed by ``.ci/run`` without its dependencies (the ``test`` extra cannot say that).
pytestmark = needs_module(
    "langflow_sandbox_createos",
    "langflow-sandbox-createos",
    "pip install --no-deps 'langflow-sandbox-createos==0.2.0'",
)


class SandboxExecutionError(RuntimeError):
    """Stands in for ``lfx.utils.sandbox.base.SandboxExecutionError``."""


class SandboxUnavailableError(RuntimeError):
    """Stands in for ``lfx.utils.sandbox.base.SandboxUnavailableError``."""


def _lfx_modules() -> dict[str, types.ModuleType]:
    base = types.ModuleType("lfx.utils.sandbox.base")
    for name, value in {
        "SandboxExecutionError": SandboxExecutionError,
        "SandboxUnavailableError": SandboxUnavailableError,
        "SandboxResult": dict,
        "Capabilities": dict,
        "_EXIT_CODE_TIMEOUT": 124,
        "_sandbox_settings": lambda: None,
    }.items():
        setattr(base, name, value)
    logger = types.ModuleType("lfx.log.logger")
    logger.logger = types.SimpleNamespace(warning=print)  # type: ignore[attr-defined]
    modules = {name: types.ModuleType(name) for name in ("lfx", "lfx.log", "lfx.utils")}
    modules["lfx.utils.sandbox"] = types.ModuleType("lfx.utils.sandbox")
    return {**modules, "lfx.utils.sandbox.base": base, "lfx.log.logger": logger}


@pytest.fixture(name="langflow")
def _langflow(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The client's ``_client`` module imported over stand-in ``lfx`` modules, then unloaded."""
    for name, module in _lfx_modules().items():
        monkeypatch.setitem(sys.modules, name, module)
    before = set(sys.modules)
    client = importlib.import_module("langflow_sandbox_createos._client")
    # Its resume polls every second of wall time; the fake's transitions are immediate.
    monkeypatch.setattr(client, "RESUME_POLL_SECONDS", 0.0)
    yield client
    for name in set(sys.modules) - before:
        del sys.modules[name]


@pytest.fixture(name="fake", scope="module")
def _fake() -> Iterator[FakeCreateOS]:
    fake = FakeCreateOS(transitions=TransitionPolicy.immediate()).start()
    yield fake
    fake.close()
    assert fake.errors == []


def test_create_exec_pause_resume_destroy(
    langflow: Any, fake: FakeCreateOS, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CREATEOS_SANDBOX_BASE_URL", fake.url)
    monkeypatch.setenv("CREATEOS_SANDBOX_API_KEY", fake.api_key)
    client = langflow.SandboxClient()
    try:
        created = client.create(shape="s-1vcpu-1gb", name="lf-1", egress=[])
        sandbox_id = created["id"]
        assert created["status"] == "running"
        result = client.exec(sandbox_id, "echo", ["hello"], timeout_seconds=30)
        assert (result["exit_code"], result["stdout"]) == (0, "hello\n")
        # The client has no pause method; its callers pause with its own HTTP client and
        # ``unwrap``, which refuses any status but 200.
        paused = langflow.unwrap(client._http.post(f"/v1/sandboxes/{sandbox_id}/pause"))
        assert paused["status"] == "pausing"
        assert client.get(sandbox_id)["status"] == "paused"
        assert client.find_by_name("lf-1")["id"] == sandbox_id
        assert client.resume(sandbox_id)["status"] == "running"
        again = client.exec(sandbox_id, "echo", ["again"], timeout_seconds=30)
        assert again["stdout"] == "again\n"
        client.destroy(sandbox_id)
        assert fake.sandbox(sandbox_id).status in ("destroying", "destroyed")
        resumes = fake.calls.filter(operation="resume_sandbox", sandbox_id=sandbox_id)
        assert [call.status for call in resumes] == [200]
    finally:
        client.close()


def test_resume_of_a_running_sandbox_is_200_running(
    langflow: Any, fake: FakeCreateOS, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CREATEOS_SANDBOX_BASE_URL", fake.url)
    monkeypatch.setenv("CREATEOS_SANDBOX_API_KEY", fake.api_key)
    client = langflow.SandboxClient()
    try:
        sandbox_id = client.create(shape="s-1vcpu-1gb", name="lf-2", egress=[])["id"]
        assert client.resume(sandbox_id)["status"] == "running"
        client.destroy(sandbox_id)
    finally:
        client.close()
