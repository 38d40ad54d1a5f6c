"""Drive a sandbox to ``running`` or ``paused`` by polling (docs/fake-server.md#state-machine).

The loop has no bound of its own: it shares the caller's deadline (acquire, resume, release).
A state change is requested at most once successfully; a 409 means someone else moved the
sandbox, so the state is read again and the request may be sent again. After an accepted
request the source state may still be visible for a while, so it keeps polling rather than
failing. Any state that cannot lead to the target fails fast with a fixed message.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pytest_createos.provider._errors import CreateosApiError, CreateosError

if TYPE_CHECKING:
    from pytest_createos.provider._client import CreateosClient
    from pytest_createos.provider._signal import AbortSignal
    from pytest_createos.provider._types import SandboxStatus

Target = Literal["running", "paused"]

__all__ = ["POLL_INTERVAL", "transition"]

#: Seconds between state reads, on the injected clock.
POLL_INTERVAL = 0.25

_WAITING: frozenset[SandboxStatus] = frozenset({"creating", "pausing", "resuming"})
#: The states from which a request to reach the key state may be sent.
_SUBMITTABLE: dict[Target, frozenset[SandboxStatus]] = {
    "running": frozenset({"paused", "error"}),
    "paused": frozenset({"running"}),
}


async def transition(
    client: CreateosClient,
    sandbox_id: str,
    desired: Target,
    signal: AbortSignal,
) -> None:
    """Return once the sandbox reports ``desired``; raise if it cannot get there."""
    submitted = False
    while True:
        signal.raise_if_aborted()
        status = (await client.get_sandbox(sandbox_id, signal=signal))["status"]
        if status == desired:
            return
        can_submit = status in _SUBMITTABLE[desired]
        if can_submit and not submitted:
            try:
                if desired == "running":
                    await client.resume_sandbox(sandbox_id, signal=signal)
                else:
                    await client.pause_sandbox(sandbox_id, signal=signal)
                submitted = True
            except CreateosApiError as error:
                if error.status != 409:
                    raise
        elif not can_submit and status not in _WAITING:
            raise CreateosError(f"CreateOS sandbox did not reach {desired}.")
        await signal.sleep(client.clock, POLL_INTERVAL)
