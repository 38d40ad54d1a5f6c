"""When asynchronous sandbox transitions complete: a frozen, per-fake policy."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Self

__all__ = [
    "ENDING",
    "GONE",
    "MOVING",
    "STATUSES",
    "TARGET",
    "TRANSITIONAL",
    "Step",
    "TransitionPolicy",
]

#: Every status the API reports (docs/fake-server.md#state-machine): the one list the fake's
#: layers read (``tests/provider/test_statuses.py`` holds the provider's own copy to it).
STATUSES = (
    "creating",
    "running",
    "pausing",
    "paused",
    "resuming",
    "forking",
    "error",
    "destroying",
    "destroyed",
    "failed",
)
#: Where each moving status lands once its transition completes (a fork's own target may be
#: ``paused``: ``Sandbox`` keeps it).
TARGET = {
    "creating": "running",
    "pausing": "paused",
    "resuming": "running",
    "destroying": "destroyed",
    "forking": "running",
}
#: The statuses a transition may still leave.
MOVING = frozenset(TARGET)
#: A sandbox on its way out or gone: no longer holding its name, tokens or settings.
ENDING = frozenset({"destroying", "destroyed"})
#: A sandbox that no longer holds resources (networks, disks) attached to it.
GONE = frozenset({"destroyed", "failed"})
#: The transitional statuses a policy governs (a fork takes create's step).
TRANSITIONAL = tuple(status for status in TARGET if status != "forking")


@dataclass(frozen=True, slots=True)
class Step:
    """A transition completes once ``seconds`` of fake time have passed *and* ``reads`` GETs
    of the sandbox have seen the transitional status."""

    seconds: float = 0.0
    reads: int = 0

    def __post_init__(self) -> None:
        if not self.seconds >= 0 or self.reads < 0:
            raise ValueError("a transition step needs seconds >= 0 and reads >= 0")


@dataclass(frozen=True, slots=True)
class TransitionPolicy:
    """Per-transition steps plus how long a destroyed sandbox stays visible before 404."""

    creating: Step = Step(seconds=0.05)
    pausing: Step = Step(seconds=2.0)
    resuming: Step = Step(seconds=3.0)
    destroying: Step = Step(seconds=0.05)
    destroyed_visible_for: float = 30.0

    @classmethod
    def realistic(cls) -> Self:
        """The default: creating 0.05 s, pausing 2 s, resuming 3 s, destroying 0.05 s."""
        return cls()

    @classmethod
    def immediate(cls) -> Self:
        """Every transition has completed by the next request."""
        return cls(Step(), Step(), Step(), Step())

    @classmethod
    def after_reads(cls, n: int) -> Self:
        """``n`` GETs see the transitional status; the next one sees the target."""
        step = Step(reads=n)
        return cls(step, step, step, step)

    @classmethod
    def after(cls, seconds: float) -> Self:
        """Every transition takes ``seconds`` on the fake clock."""
        step = Step(seconds=seconds)
        return cls(step, step, step, step)

    def override(self, **steps: Step | float | int) -> Self:
        """Replace some steps: a float means seconds, an int means reads, or pass a ``Step``."""
        changes: dict[str, Step] = {}
        for name, value in steps.items():
            if name not in TRANSITIONAL:
                raise ValueError(f"unknown transition {name!r}; expected one of {TRANSITIONAL}")
            if isinstance(value, Step):
                changes[name] = value
            elif isinstance(value, bool):
                raise TypeError("a transition step is a Step, seconds (float) or reads (int)")
            elif isinstance(value, int):
                changes[name] = Step(reads=value)
            else:
                changes[name] = Step(seconds=float(value))
        pick = {name: changes.get(name, self.step(name)) for name in TRANSITIONAL}
        return type(self)(
            creating=pick["creating"],
            pausing=pick["pausing"],
            resuming=pick["resuming"],
            destroying=pick["destroying"],
            destroyed_visible_for=self.destroyed_visible_for,
        )

    def step(self, status: str) -> Step:
        step: Step = getattr(self, status)
        return step

    def to_dict(self) -> dict[str, object]:
        return {
            **{
                s: {"seconds": self.step(s).seconds, "reads": self.step(s).reads}
                for s in TRANSITIONAL
            },
            "destroyed_visible_for": self.destroyed_visible_for,
        }
