"""A failing test on purpose: it arms a 503 for a resume it never asks for.

Not collected with the examples (its name does not end in ``_example.py``); the docs run
checks the error its teardown reports.
"""

import pytest

from pytest_createos import HttpError


@pytest.mark.createos_fault("resume_sandbox", HttpError(503))
def test_never_resumes(createos_lease):
    assert createos_lease.provider_lease_id.startswith("sb-")
