"""pytest-xdist: every worker has its own fake on its own port; nothing is shared."""

from __future__ import annotations

import pytest

#: Slow (subprocesses, real programs): in the reliability step, keeping the main suite fast.
pytestmark = pytest.mark.reliability


def test_two_workers_each_get_their_own_fake(inner: pytest.Pytester) -> None:
    """Leases on two workers at once never see each other's sandboxes."""
    inner.makepyfile(
        """
        import os
        import pytest

        @pytest.mark.parametrize("n", range(6))
        def test_lease(n, createos_lease, createos_fake):
            assert os.environ["PYTEST_XDIST_WORKER"] in ("gw0", "gw1")
            ids = [s.id for s in createos_fake.sandboxes()]
            assert ids == [createos_lease.provider_lease_id]
        """
    )
    result = inner.runpytest_subprocess("-n", "2")
    result.assert_outcomes(passed=6)
