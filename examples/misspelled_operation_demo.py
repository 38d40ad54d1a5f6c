"""A usage error on purpose: a fault marker names an operation that does not exist.

Not collected with the examples (its name does not end in ``_example.py``); the docs run
checks that the run stops before any test, naming the closest operation.
"""

import pytest

from pytest_createos import HttpError


@pytest.mark.createos_fault("resme_sandbox", HttpError(503))
def test_resume(createos_lease):
    pass
