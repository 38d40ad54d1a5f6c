"""A first fault: the API answers 503 to sandbox creation, once."""

import pytest

from pytest_createos import HttpError
from pytest_createos.provider import CreateosApiError


@pytest.mark.createos_fault("create_sandbox", HttpError(503))
@pytest.mark.asyncio
async def test_create_fails_with_a_fixed_message(createos_provider, createos_env):
    with pytest.raises(CreateosApiError) as caught:
        await createos_provider.acquire_lease(createos_env)
    assert str(caught.value) == "CreateOS request failed (HTTP 503) during sandbox lifecycle."
