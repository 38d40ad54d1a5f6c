"""Fault schedules: once, N times, after N calls, with a seeded probability."""

import httpx
import pytest

from fake_server.faults import Fault, HttpError


@pytest.fixture
def api(createos_fake):
    """A plain HTTP client of the fake: faults act on the wire, whoever the client is."""
    headers = {"X-Api-Key": createos_fake.api_key}
    with httpx.Client(base_url=createos_fake.api_url, headers=headers) as client:
        yield client


def statuses(api, path, calls):
    return [api.get(path).status_code for _ in range(calls)]


def test_once_n_times_and_after(api, createos_fake, createos_lease):
    sandbox = f"/sandboxes/{createos_lease.provider_lease_id}"
    faults = createos_fake.faults
    faults.add(Fault("whoami", HttpError(503)))  # once
    faults.add(Fault("get_sandbox", HttpError(429, retry_after=2), times=3))
    faults.add(Fault("list_shapes", HttpError(503), after=1))  # the 2nd call, once

    assert statuses(api, "/whoami", 3) == [503, 200, 200]
    assert api.get(sandbox).headers["Retry-After"] == "2"
    assert statuses(api, sandbox, 3) == [429, 429, 200]
    assert statuses(api, "/shapes", 3) == [200, 503, 200]

    assert faults.unfired() == []  # every fault armed for this test fired
    assert [firing.operation for firing in faults.fired] == [
        "whoami",
        *["get_sandbox"] * 3,
        "list_shapes",
    ]
    faults.clear()  # disarm everything (the fixture's reset does this too)
    assert faults.fired == []


def test_a_probability_draws_from_the_seed(api, createos_fake):
    createos_fake.faults.add(Fault("whoami", HttpError(503), probability=0.5))
    first = statuses(api, "/whoami", 20)
    assert set(first) == {200, 503}  # every call is eligible, about half fail

    createos_fake.reset()  # restarts every fault's random stream
    createos_fake.faults.add(Fault("whoami", HttpError(503), probability=0.5))
    assert statuses(api, "/whoami", 20) == first
