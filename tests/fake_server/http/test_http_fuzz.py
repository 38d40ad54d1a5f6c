"""Hypothesis throws malformed input at every route: never a 5xx (other than the documented
501 for unknown routes), never an unhandled exception inside the fake, never a hang."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fake_server.http import ROUTES
from tests.fake_server.http._fuzzing import fuzzed_fake, keyed_client  # noqa: F401 (fixtures)

if TYPE_CHECKING:
    from fake_server import FakeCreateOS

pytestmark = pytest.mark.reliability


METHODS = ("GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS")
ODD_TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="/?#"),
    max_size=40,
)
ODD_IDS = st.one_of(
    st.sampled_from(["sb-unknown", "..", "%2e%2e", "%00", "proc-x", "a" * 300, "%ff%fe", "~"]),
    ODD_TEXT.filter(bool).map(lambda text: quote(text, safe="")),
)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | ODD_TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(ODD_TEXT, inner, max_size=3),
    max_leaves=8,
)
FIELDS = (
    "cmd",
    "args",
    "stdin",
    "cwd",
    "env",
    "stream",
    "shape",
    "rootfs",
    "region",
    "name",
    "ingress_enabled",
    "envs",
    "egress",
    "data_base64",
    "signal",
    "pty",
    "seconds",
    "disk_mib",
    "auto_pause_after_seconds",
    "disable_auto_pause",
    "start_paused",
    "ssh_pubkeys",
    "keys",
    "add_bytes",
    "rows",
    "cols",
    "bandwidth_quota_bytes",
)
SAFE_CMDS = st.sampled_from(["true", "echo", "/bin/false", "zz-missing", "", "/", "\x00"])
BODY_OBJECTS = st.dictionaries(
    st.sampled_from(FIELDS),
    st.one_of(JSON_VALUES, SAFE_CMDS, st.just({"ROWS": 1})),
    max_size=5,
).map(
    lambda body: {**body, "cmd": body["cmd"]} if "cmd" in body and not _safe(body["cmd"]) else body
)
QUERY = st.dictionaries(
    st.sampled_from(
        ["after", "limit", "offset", "path", "grace_ms", "timeout_ms", "scope", "stream", "status"]
    ),
    st.one_of(
        st.sampled_from(["-1", "0", "1", "99999999999999999999", "1e3", "true", "/tmp", "tree"]),
        ODD_TEXT,
    ),
    max_size=3,
)


def _safe(cmd: object) -> bool:
    return not isinstance(cmd, str) or cmd in ("true", "echo", "/bin/false", "zz-missing", "")


def _prepare(http: httpx.Client) -> tuple[str, str]:
    sandbox_id = http.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"}).json()["data"]["id"]
    http.get(f"/v1/sandboxes/{sandbox_id}")
    process = http.post(
        f"/v1/sandboxes/{sandbox_id}/processes", json={"cmd": "echo", "args": ["hi"]}
    ).json()["data"]
    http.post(f"/v1/sandboxes/{sandbox_id}/processes/{process['process_id']}/stdin/close")
    return sandbox_id, process["process_id"]


def _check(fake: FakeCreateOS, response: httpx.Response) -> None:
    assert fake.errors == []
    if response.status_code == 501:
        assert response.json()["data"]["code"] == "not_implemented_by_fake"
        return
    if response.status_code == 502:  # a preview URL with no server behind it
        assert response.url.path.startswith("/_ingress/")
        assert response.json()["data"]["code"] == "bad_gateway"
        return
    assert response.status_code < 500, response.text[:300]
    if response.status_code >= 400:
        body = response.json()
        assert body["status"] == "fail"
        assert isinstance(body["data"], dict)


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    route=st.sampled_from(ROUTES),
    method=st.one_of(st.none(), st.sampled_from(METHODS)),
    use_real_ids=st.booleans(),
    odd_id=ODD_IDS,
    query=QUERY,
    body=st.one_of(
        st.none(),
        st.binary(max_size=64),
        BODY_OBJECTS.map(lambda b: json.dumps(b).encode()),
        JSON_VALUES.map(lambda v: json.dumps(v).encode()),
    ),
)
def test_known_routes_survive_garbage(
    fake: FakeCreateOS,
    http: httpx.Client,
    route: tuple[str, str, str, Any],
    method: str | None,
    use_real_ids: bool,
    odd_id: str,
    query: dict[str, str],
    body: bytes | None,
) -> None:
    sandbox_id, process_id = _prepare(http) if use_real_ids else (odd_id, odd_id)
    path = (
        route[1]
        .replace("{sandbox_id}", sandbox_id)
        .replace("{process_id}", process_id)
        .replace("{ip}", odd_id)
        .replace("{port}", odd_id if not use_real_ids else "8080")
        .replace("{tail:.*}", odd_id)
    )
    response = http.request(
        method or route[0].replace("*", "GET"),
        path,
        params=query,
        content=body,
        headers={"Content-Type": "application/json"},
    )
    _check(fake, response)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    method=st.sampled_from(METHODS),
    path=st.one_of(
        st.lists(ODD_IDS, min_size=1, max_size=6).map(lambda parts: "/" + "/".join(parts)),
        st.sampled_from(["/v1", "/v1/", "/v1/sandboxes/", "//v1//sandboxes", "/v1/" + "x" * 4000]),
    ),
)
def test_unknown_paths_are_501_or_4xx(
    fake: FakeCreateOS, http: httpx.Client, method: str, path: str
) -> None:
    response = http.request(method, path)
    _check(fake, response)


def test_no_key_and_huge_headers_never_5xx(fake: FakeCreateOS) -> None:
    with httpx.Client(base_url=fake.url) as anonymous:
        for headers in ({}, {"X-Api-Key": "x" * 6000}, {"X-Api-Key": b"\xc3\xa9 k"}):
            response = anonymous.get("/v1/sandboxes", headers=headers)
            assert response.status_code in (400, 401, 431)
    assert fake.errors == []
