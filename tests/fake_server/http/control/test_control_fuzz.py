"""Hypothesis throws malformed input at the control API (``/_fake/...``): never a 5xx, never
an unhandled exception inside the fake (``fake.errors`` stays empty), never a hang."""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fake_server.faults.spec import ACTION_TYPES
from tests.fake_server.http._fuzzing import fuzzed_fake, keyed_client  # noqa: F401 (fixtures)

if TYPE_CHECKING:
    from fake_server import FakeCreateOS

pytestmark = pytest.mark.reliability


TEXT = st.text(max_size=30)  # lone surrogates included: JSON can carry them
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    TEXT,
    st.sampled_from(
        ["/", "/tmp", "/etc/hostname", "/a\x00b", "rel", "SIGKILL", "SIGxyz", "\ud800"]
    ),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=6,
)


#: Resource id fields get the real ids (placeholders filled in by the test) or any value.
_RESOURCE_FIELDS = ("network_id", "disk_id", "template_id")
RESOURCE_IDS = st.one_of(SCALARS, st.sampled_from(["@network", "@disk", "@template"]))


def _action(kind: str) -> st.SearchStrategy[dict[str, object]]:
    """An action of ``kind`` with any subset of its own fields, each any value."""
    names = [item.name for item in dataclasses.fields(ACTION_TYPES[kind])]  # type: ignore[arg-type]
    if kind == "tamper_file":
        names += ["data_base64"]
    fields = st.fixed_dictionaries(
        {}, optional={name: RESOURCE_IDS if name in _RESOURCE_FIELDS else SCALARS for name in names}
    )
    return fields.map(lambda chosen: {"type": kind, **chosen})


ACTIONS = st.one_of(
    st.sampled_from(sorted(ACTION_TYPES)).flatmap(_action),
    st.builds(lambda kind: {"type": kind}, SCALARS),
)
SPEC_FIELDS = ("times", "after", "probability", "account", "query", "name", "expected")
ROUTES = (  # the two routes that parse actions are drawn three times as often
    *[("POST", "/_fake/faults"), ("POST", "/_fake/faults/now")] * 3,
    ("DELETE", "/_fake/faults/1"),
    ("DELETE", "/_fake/faults/x"),
    ("GET", "/_fake/faults"),
    ("PUT", "/_fake/transitions"),
    ("POST", "/_fake/clock/advance"),
    ("GET", "/_fake/state"),
    ("GET", "/_fake/journal"),
)


@pytest.fixture(name="targets", scope="module")
def _targets(http: httpx.Client) -> dict[str, str]:
    """A running sandbox with a finished process, and a destroyed sandbox."""
    live = http.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"}).json()["data"]["id"]
    process = http.post(
        f"/v1/sandboxes/{live}/processes", json={"cmd": "echo", "args": ["hi"]}
    ).json()["data"]["process_id"]
    gone = http.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"}).json()["data"]["id"]
    http.delete(f"/v1/sandboxes/{gone}")
    network = http.post("/v1/networks", json={"name": "fuzz"}).json()["data"]["id"]
    disk = http.post(
        "/v1/disks",
        json={
            "name": "fuzz",
            "config": {"bucket": "b", "endpoint": "https://s3.test"},
            "credentials": {"access_key": "a", "secret_key": "s"},
        },
    ).json()["data"]["id"]
    http.post(f"/v1/sandboxes/{live}/disks", json={"disk_id": disk, "mount_path": "/mnt/d"})
    http.post(f"/v1/sandboxes/{live}/networks", json={"id": network})
    template = http.post(
        "/v1/templates", json={"name": "fuzz", "dockerfile": "FROM devbox:1\nRUN true\n"}
    ).json()["data"]["id"]
    return {
        "live": live,
        "process": process,
        "gone": gone,
        "@network": network,
        "@disk": disk,
        "@template": template,
    }


def _check(fake: FakeCreateOS, response: httpx.Response) -> None:
    assert fake.errors == []
    assert response.status_code < 500, response.text[:300]
    if response.status_code >= 400:
        body = response.json()
        assert body["status"] == "fail"
        assert isinstance(body["data"], dict)


def _dumps(value: object) -> bytes:
    return json.dumps(value).encode()  # ensure_ascii: lone surrogates travel as \ud800


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    route=st.sampled_from(ROUTES),
    action=ACTIONS,
    target=st.sampled_from(["live", "gone", "odd"]),
    odd=st.one_of(TEXT, SCALARS),
    operation=st.one_of(st.sampled_from(["exec", "*", "get_sandbox", "connect_process"]), SCALARS),
    extra=st.dictionaries(st.sampled_from(SPEC_FIELDS), VALUES, max_size=2),
    raw=st.one_of(st.none(), st.binary(max_size=40), VALUES.map(_dumps)),
)
def test_the_control_api_survives_garbage(
    fake: FakeCreateOS,
    http: httpx.Client,
    targets: dict[str, str],
    route: tuple[str, str],
    action: dict[str, object],
    target: str,
    odd: object,
    operation: object,
    extra: dict[str, object],
    raw: bytes | None,
) -> None:
    sandbox_id = targets.get(target, odd)
    action = {key: targets.get(v, v) if isinstance(v, str) else v for key, v in action.items()}
    method, path = route
    if path == "/_fake/faults/now":
        body = {"action": action, "sandbox_id": sandbox_id, "process_id": targets["process"]}
        content = raw if raw is not None and odd is None else _dumps(body)
    elif path == "/_fake/faults":
        spec = {"operation": operation, "action": action, "sandbox_id": sandbox_id, **extra}
        content = raw if raw is not None and odd is None else _dumps(spec)
    else:
        content = raw
    response = http.request(method, path, content=content)
    _check(fake, response)
    if path == "/_fake/faults" and response.status_code == 201:
        # An armed fault must not turn the API into 500s either.
        for call in (
            lambda: http.post(f"/v1/sandboxes/{targets['live']}/exec", json={"cmd": "true"}),
            lambda: http.get(f"/v1/sandboxes/{targets['live']}"),
        ):
            try:
                answer = call()
            except httpx.TransportError:
                continue  # a transport fault: the connection was dropped on purpose
            if answer.status_code >= 500:
                assert answer.json()["code"] != "internal_error", answer.text[:300]
            assert fake.errors == []
        http.delete("/_fake/faults")
