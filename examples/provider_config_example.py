"""Config is checked before any request, with fixed messages that never echo the key."""

import pytest

from pytest_createos.provider import CreateosError, CreateosProvider, Environment


def test_validate_config_normalizes_or_names_the_first_problem():
    provider = CreateosProvider(environ={})
    checked = provider.validate_config(
        {"apiUrl": "https://api.test/v1/", "apiKey": "k", "shape": " s-1vcpu-1gb "}
    )
    assert checked.ok
    assert checked.normalized_config["apiUrl"] == "https://api.test"  # stored as the origin
    assert checked.normalized_config["shape"] == "s-1vcpu-1gb"  # trimmed
    assert checked.normalized_config["timeoutMs"] == 300_000

    refused = provider.validate_config({"apiUrl": "https://api.test", "shape": "s", "timeoutMs": 0})
    assert refused.errors == ["timeoutMs must be an integer between 1 and 86400000."]


@pytest.mark.asyncio
async def test_the_environment_key_is_only_for_the_public_endpoint(createos_fake):
    provider = CreateosProvider(clock=createos_fake.clock, environ={"CREATEOS_API_KEY": "k"})
    env = Environment("company-a", "env-a", {"apiUrl": createos_fake.url, "shape": "s-1vcpu-1gb"})
    try:
        with pytest.raises(CreateosError) as caught:
            await provider.acquire_lease(env)
        assert str(caught.value) == (
            "Custom CreateOS API endpoints require an explicit environment API key; "
            "the host fallback is only available for https://api.sb.createos.sh."
        )
        assert createos_fake.journal.requests() == []  # refused before any request
    finally:
        await provider.shutdown()
