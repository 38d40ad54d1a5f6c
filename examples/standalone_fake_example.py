"""The fake on its own, without the plugin: any HTTP client can call it, the test closes it."""

import httpx
import pytest

from fake_server import FakeCreateOS, TransitionPolicy


def test_thread_mode_fake_serves_the_api():
    fake = FakeCreateOS(seed=0, transitions=TransitionPolicy.immediate()).start()  # thread mode
    try:
        headers = {"X-Api-Key": fake.api_key}  # the API lives at fake.url + "/v1"
        created = httpx.post(
            f"{fake.api_url}/sandboxes", json={"shape": "s-1vcpu-1gb"}, headers=headers
        )
        assert created.status_code == 200  # create answers once the sandbox is running
        sandbox = created.json()["data"]
        assert sandbox["status"] == "running"

        fetched = httpx.get(f"{fake.api_url}/sandboxes/{sandbox['id']}", headers=headers)
        assert fetched.json()["status"] == "success"  # JSend envelope
        assert fetched.json()["data"]["status"] == "running"
        assert fake.journal.operations() == ["create_sandbox", "get_sandbox"]
    finally:
        fake.close()


@pytest.mark.asyncio
async def test_in_loop_fake_answers_401_without_a_key():
    async with FakeCreateOS() as fake, httpx.AsyncClient() as client:
        answer = await client.get(f"{fake.api_url}/whoami")
        assert answer.status_code == 401
        assert answer.json() == {
            "status": "fail",
            "data": {
                "code": "unauthorized",
                "message": "missing or invalid API key; send it in the X-Api-Key header "
                "(X-Auth-Token and X-Access-Token work too; Authorization: Bearer does not)",
            },
        }
