"""What runs inside a fake sandbox, in three rooms: this interface and two runtimes.

``fake_server.runtime.bashkit``
    The default: an in-memory filesystem and bashkit's bash over it (no host programs).
``fake_server.runtime.process``
    Real programs of the host (or the devbox image) under bubblewrap, one sandbox a directory.

This package holds what both implement and share, and nothing of either: the interface
``api`` (``Runtime`` / ``Machine`` / ``Runner``), through which the models start sandboxes and
run commands; ``environment`` (``$HOME``, the base environment, the file and disk limits);
``pipes`` (``StdinPipe``, ``ProcessSignal``); ``startfail`` (``CommandNotStarted``: a
command that could not start, the exec result's ``error``); ``terminal``; ``argv`` (argument
and environment checks); ``egress`` (outbound rules); ``netoptions``; ``capacity`` (the
fake's descriptor budget: creating a descriptor-holding object raises ``CapacityError``,
answered 503 ``fake_at_capacity``, while fewer than 48 descriptors under ``RLIMIT_NOFILE``
would be left).
``choice`` composes the two runtimes: which one a sandbox gets is chosen per fake, per rootfs
and per test. Neither runtime imports the other (``tests/test_imports.py`` checks it).
"""

from __future__ import annotations

from fake_server.runtime.capacity import CapacityError, check_capacity
from fake_server.runtime.environment import BASE_ENV, HOME
from fake_server.runtime.pipes import ProcessSignal, StdinPipe
from fake_server.runtime.startfail import CommandNotStarted

__all__ = [
    "BASE_ENV",
    "HOME",
    "CapacityError",
    "CommandNotStarted",
    "ProcessSignal",
    "StdinPipe",
    "check_capacity",
]
