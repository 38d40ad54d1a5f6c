"""Chaos acceptance: 500 lease lifecycles through the provider under seeded faults.

The harness and its guarantees are in ``benchmarks/chaos.py``. The run takes most of a minute,
so it is marked ``chaos``: deselected from the main suite, run by its own CI step
(``pytest -m chaos``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from benchmarks.chaos import LIFECYCLES, ONLY, SEED, run_chaos

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.reliability


@pytest.mark.chaos
@pytest.mark.asyncio
async def test_lease_lifecycles_keep_their_guarantees_under_chaos(tmp_path: Path) -> None:
    result = await run_chaos(SEED, LIFECYCLES, tmp_path, ONLY)
    print(
        f"chaos seed={SEED}: {result.lifecycles} lifecycles in {result.seconds:.1f} s, "
        f"{result.fired} faults fired; outcomes {dict(result.outcomes)}"
    )
    assert not result.failures, "\n\n".join(result.failures[:3])
    # The schedules really exercised every guarantee, not just the happy path.
    if ONLY:
        return
    assert result.fired > LIFECYCLES
    if LIFECYCLES >= 200:
        for outcome in ("acquire failed", "blocked until destroy", "expired", "resumed"):
            assert result.outcomes[outcome] > 0, (outcome, result.outcomes)
