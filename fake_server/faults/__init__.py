"""Deterministic fault injection for the fake: a fault is matcher + action + schedule.

```python
from fake_server.faults import Fault, HttpError, LostReply, CutStream
fake.faults.add(Fault("resume_sandbox", HttpError(503)))                 # once
fake.faults.add(Fault("get_sandbox", HttpError(429, retry_after=2), times=3))
fake.faults.add(Fault("create_process", LostReply()))
fake.faults.add(Fault("connect_process", CutStream(after_frames=2), after=1))
fake.faults.add(Fault("*", HttpError(503), probability=0.05))           # seeded, every call
assert not fake.faults.unfired()
```

Every action: ``docs/reference/fault-actions.md``; the JSON control API:
``docs/reference/control-api.md``; how they work: ``docs/faults.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fake_server.faults.actions import (
    STREAM_OPERATIONS,
    Action,
    OutOfBandAction,
    ResponseAction,
    StreamAction,
)
from fake_server.faults.aim import (
    Aim,
    TargetConflictError,
    TargetError,
    UnknownTargetError,
)
from fake_server.faults.catalog import ACTION_NAMES, ACTION_TYPES
from fake_server.faults.fault import DEFAULT, OPERATIONS, Call, Fault, FaultFiring
from fake_server.faults.handle import Faults
from fake_server.faults.registry import FaultRegistry, Plan
from fake_server.faults.spec import (
    FaultSpecError,
    action_from_json,
    action_to_json,
    fault_from_json,
)

if TYPE_CHECKING:
    # The action classes, for type checkers; at run time they come from the catalog below.
    from fake_server.faults.actions import *  # noqa: F403
    from fake_server.faults.resource_actions import *  # noqa: F403
else:
    globals().update({cls.__name__: cls for cls in ACTION_TYPES.values()})

__all__ = [
    "DEFAULT",
    "OPERATIONS",
    "STREAM_OPERATIONS",
    "Action",
    "Aim",
    "Call",
    "Fault",
    "FaultFiring",
    "FaultRegistry",
    "FaultSpecError",
    "Faults",
    "OutOfBandAction",
    "Plan",
    "ResponseAction",
    "StreamAction",
    "TargetConflictError",
    "TargetError",
    "UnknownTargetError",
    "action_from_json",
    "action_to_json",
    "fault_from_json",
    *ACTION_NAMES,
]
