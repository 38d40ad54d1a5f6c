"""The control API's fault listing on the wire: armed faults with counters, firings."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fake_server.faults import Fault, FaultFiring, action_to_json

if TYPE_CHECKING:
    from fake_server.faults import Faults

__all__ = ["fault_to_json", "firing_to_json"]


def fault_to_json(faults: Faults, fault: Fault) -> dict[str, object]:
    """One armed fault as the control API lists it, with its counters."""
    shown = {
        key: action_to_json(fault.action) if key == "action" else getattr(fault, key)
        for key in Fault.settable()
        if key != "when"  # code, or a body matcher: not JSON
    }
    return {
        "id": faults.fault_id(fault),
        **shown,
        "fired": faults.fire_count(fault),
        "seen": faults.match_count(fault),
    }


def firing_to_json(firing: FaultFiring) -> dict[str, object]:
    return {
        "fault_id": firing.fault_id,
        "operation": firing.operation,
        "method": firing.method,
        "path": firing.path,
        "sandbox_id": firing.sandbox_id,
        "process_id": firing.process_id,
        "account": firing.account,
        "at": firing.at,
        "action": action_to_json(firing.fault.action),
    }
