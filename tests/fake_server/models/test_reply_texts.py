"""A reply body sent again unchanged is redacted once: the journal's text stays the same as
``body_text``'s, for the secrets of the moment, and the memory it keeps is bounded."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from fake_server.models.journal import recording
from fake_server.models.journal.recording import REDACTED, BodyTexts, body_text

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    import httpx

    from fake_server import FakeCreateOS

BODIES = [
    b'{"data": {"id": "sb-1", "status": "running"}}',
    b'{"data": {"api_key": "k-123", "env": {"GITHUB_TOKEN": "ghp_x"}}}',
    b"plain text naming cos_secret_key twice: cos_secret_key",
    b"\xff\xfe binary",
    json.dumps({"log": "x" * (recording.BODY_LIMIT + 10)}).encode(),
]


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """Every body ``body_text`` works out, in order."""
    seen: list[bytes] = []

    def counting(data: bytes, limit: int = recording.BODY_LIMIT, secrets: object = ()) -> str:
        seen.append(data)
        return body_text(data, limit, secrets=secrets)  # type: ignore[arg-type]

    monkeypatch.setattr(recording, "body_text", counting)
    return seen


@pytest.mark.parametrize("data", BODIES)
def test_the_text_is_body_texts_and_worked_out_once(data: bytes, counted: list[bytes]) -> None:
    texts = BodyTexts()
    secrets = ("cos_secret_key",)
    first = texts.text(data, secrets)
    assert first == body_text(data, secrets=secrets)
    assert texts.text(bytes(data), secrets) is first  # equal bytes, another object
    assert counted == [data]


def test_new_secrets_are_masked_in_a_body_seen_before(counted: list[bytes]) -> None:
    texts = BodyTexts()
    data = b'{"note": "cos_new_account_key"}'
    assert texts.text(data, ("control",)) == '{"note": "cos_new_account_key"}'
    assert texts.text(data, ("control", "cos_new_account_key")) == f'{{"note": "{REDACTED}"}}'
    assert len(counted) == 2


def test_it_keeps_the_latest_bodies_only_and_no_large_one(counted: list[bytes]) -> None:
    texts = BodyTexts(size=2, largest=64)
    one, two, three = b'"one"', b'"two"', b'"three"'
    for data in (one, two, three, three, two):
        texts.text(data, ())
    assert counted == [one, two, three]  # three and two were still kept
    texts.text(one, ())  # the oldest went when three came
    large = b"y" * 65
    assert texts.text(large, ()) == texts.text(large, ()) == "y" * 65
    assert counted == [one, two, three, one, large, large]


@pytest.mark.asyncio
async def test_a_polled_sandbox_journals_each_reply_as_sent(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: Callable[..., Awaitable[str]]
) -> None:
    sandbox_id = await make_sandbox(env={"GITHUB_TOKEN": "ghp_user_secret"})
    path = f"/v1/sandboxes/{sandbox_id}"
    fake.journal.clear()  # make_sandbox polled it too
    replies = [(await client.get(path)).json()]
    replies.append((await client.get(path)).json())
    await client.post(f"{path}/pause")
    replies.append((await client.get(path)).json())
    calls = fake.calls.filter(operation="get_sandbox")
    assert [call.response.json() for call in calls] == replies
    assert replies[0] == replies[1] != replies[2]
    assert all("ghp_user_secret" not in (call.response.text or "") for call in calls)
