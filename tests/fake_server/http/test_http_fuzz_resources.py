"""Hypothesis throws malformed input at the account-resource routes (networks, disks,
templates, computer use) with real and odd ids: never a 5xx (but the documented 503 of an
unconfigured disks API), never an unhandled exception inside the fake.

Every route of ``RESOURCE_ROUTES`` is its own test case (a random draw of routes left most of
them untried in a run), and a sandbox create is fuzzed with the resource fields it accepts
(``networks``, ``disks``, ``host_id``, ``node_selector``, a template as ``rootfs``)."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fake_server import FakeCreateOS, TransitionPolicy
from fake_server.http import ROUTES
from fake_server.http.resources_routes import RESOURCE_ROUTES

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.reliability

ODD = st.sampled_from(["x", "..", "%2e%2e", "%00", "a" * 300, "%ff", "screen-9", "screen-x"])
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5000) | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)
FIELDS = (
    "name", "cidr", "id", "kind", "config", "credentials", "disk_id", "mount_path", "sub_path",
    "dockerfile", "base", "x", "y", "width", "height", "button", "count", "direction", "amount",
    "from", "to", "text", "keys", "target", "application", "uri",
)  # fmt: skip
BODIES = st.dictionaries(st.sampled_from(FIELDS), VALUES, max_size=5)
QUERY = st.dictionaries(
    st.sampled_from(
        ["limit", "offset", "include", "follow", "attempt", "mount_path", "screen_id", "x",
         "y", "width", "height", "window_id", "application"]
    ),
    st.sampled_from(["-1", "0", "1", "5000", "true", "dockerfile", "screen-1", "/mnt", "%", ""]),
    max_size=4,
)  # fmt: skip


@pytest.fixture(name="fake", scope="module")
def _fake() -> Iterator[FakeCreateOS]:
    fake = FakeCreateOS(transitions=TransitionPolicy.immediate()).start()
    fake.world.ctx.resources.template_pending_seconds = 0.0
    fake.world.ctx.resources.template_step_seconds = 0.0
    yield fake
    fake.close()


@pytest.fixture(name="ids", scope="module")
def _ids(fake: FakeCreateOS) -> dict[str, str]:
    with httpx.Client(base_url=fake.url, headers={"X-Api-Key": fake.api_key}) as http:
        sandbox = http.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb", "rootfs": "desktop:1"})
        sandbox_id = sandbox.json()["data"]["id"]
        http.get(f"/v1/sandboxes/{sandbox_id}")
        network = http.post("/v1/networks", json={"name": "fuzz"}).json()["data"]["id"]
        disk = http.post(
            "/v1/disks",
            json={
                "name": "fuzz",
                "config": {"bucket": "b", "endpoint": "https://s3.test"},
                "credentials": {"access_key": "a", "secret_key": "s"},
            },
        ).json()["data"]["id"]
        template = http.post(
            "/v1/templates", json={"name": "fuzz", "dockerfile": "FROM devbox:1\nRUN true\n"}
        ).json()["data"]["id"]
        window = http.post(
            f"/v1/sandboxes/{sandbox_id}/computer/launch", json={"application": "xterm"}
        ).json()["data"]["window"]["id"]
    return {
        "sandbox_id": sandbox_id,
        "network_id": network,
        "disk_id": disk,
        "template_id": template,
        "window_id": window,
        "screen_id": "screen-0",
    }


@pytest.fixture(name="http", scope="module")
def _http(fake: FakeCreateOS) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=fake.url, headers={"X-Api-Key": fake.api_key}, timeout=20) as c:
        yield c


_RESOURCE_PATH = re.compile(r"/(networks|disks|templates|computer)(/|$)")


def test_every_resource_route_is_fuzzed() -> None:
    """A resource route added outside ``RESOURCE_ROUTES`` would escape this fuzz."""
    served = {(r[0], r[1]) for r in ROUTES if _RESOURCE_PATH.search(r[1])}
    assert served == {(r[0], r[1]) for r in RESOURCE_ROUTES}


def _check(fake: FakeCreateOS, response: httpx.Response) -> None:
    assert fake.errors == []
    if response.status_code == 501:  # an odd id such as ".." made it another, unknown path
        assert response.json()["data"]["code"] == "not_implemented_by_fake"
        return
    assert response.status_code < 500 or response.status_code == 503, response.text[:300]
    if response.status_code >= 400:
        assert response.json()["status"] in ("fail", "error")


@pytest.mark.parametrize("route", RESOURCE_ROUTES, ids=[r[2] for r in RESOURCE_ROUTES])
@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    real=st.booleans(),
    odd=ODD,
    query=QUERY,
    body=st.one_of(st.none(), st.binary(max_size=32), BODIES.map(lambda b: json.dumps(b).encode())),
)
def test_resource_routes_survive_garbage(
    route: tuple[str, str, str, Any],
    fake: FakeCreateOS,
    http: httpx.Client,
    ids: dict[str, str],
    real: bool,
    odd: str,
    query: dict[str, str],
    body: bytes | None,
) -> None:
    path = route[1]
    for name, value in ids.items():
        path = path.replace("{" + name + "}", value if real else odd)
    response = http.request(
        route[0], path, params=query, content=body, headers={"Content-Type": "application/json"}
    )
    _check(fake, response)


def _real_or(placeholder: str) -> st.SearchStrategy[object]:
    return st.one_of(st.just(placeholder), VALUES)


CREATE = st.fixed_dictionaries(
    {"shape": st.sampled_from(["s-1vcpu-1gb", "nope"])},
    optional={
        "networks": st.lists(
            st.one_of(st.fixed_dictionaries({"id": _real_or("@network_id")}), VALUES),
            max_size=3,
        )
        | VALUES,
        "disks": st.lists(
            st.one_of(
                st.fixed_dictionaries(
                    {"disk_id": _real_or("@disk_id"), "mount_path": _real_or("/mnt/d")},
                    optional={"sub_path": st.sampled_from(["", "a", "a/b", "../x", "/abs", "."])},
                ),
                VALUES,
            ),
            max_size=3,
        )
        | VALUES,
        "host_id": st.one_of(st.sampled_from(["host-eu-1", "host-x", ""]), VALUES),
        "node_selector": st.one_of(st.just({"arch": "amd64"}), st.just({"arch": "arm"}), VALUES),
        "rootfs": st.one_of(st.sampled_from(["@template_id", "desktop:1", "zz"]), VALUES),
        "region": st.sampled_from(["eu", "us", "mars"]),
    },
)


def _fill(value: object, ids: dict[str, str]) -> object:
    if isinstance(value, dict):
        return {key: _fill(item, ids) for key, item in value.items()}
    if isinstance(value, list):
        return [_fill(item, ids) for item in value]
    if isinstance(value, str) and value.startswith("@"):
        return ids.get(value[1:], value)
    return value


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(body=CREATE)
def test_a_create_naming_resources_survives_garbage(
    fake: FakeCreateOS, http: httpx.Client, ids: dict[str, str], body: dict[str, object]
) -> None:
    response = http.post("/v1/sandboxes", json=_fill(body, ids))
    _check(fake, response)
    if response.status_code < 300:
        http.delete(f"/v1/sandboxes/{response.json()['data']['id']}")
