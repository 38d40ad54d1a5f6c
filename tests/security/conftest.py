"""The security suite: each attack class on a sandbox (escape, limits, origins, exhaustion,
bad input, the files serve writes) repeated against ``createos-fake serve`` as CI runs it.

Every module here is marked ``reliability`` in its ``pytestmark`` (a ``serve`` subprocess and
real programs are slow by nature): CI runs them in the reliability step. Each module starts
one ``serve`` of its own (``serve`` below) so one attack's damage cannot hide another's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.security._attack import Target, serving

if TYPE_CHECKING:
    from collections.abc import Iterator


@pytest.fixture(name="serve", scope="module")
def _serve() -> Iterator[Target]:
    """``createos-fake serve`` on its default runtime (the process runtime, as root here),
    with immediate transitions; checked to still answer ``/readyz`` at the end."""
    with serving("--transitions", "immediate") as target:
        yield target
