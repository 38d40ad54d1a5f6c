"""The signals the API names: one table of names and numbers (Linux's, as in the service's
sandboxes) that the models, the process runtime and bashkit's ``timeout`` read."""

from __future__ import annotations

import signal
from typing import Final

__all__ = ["KNOWN", "NUMBERS", "TERMINATING"]

#: Signals that end a process (``POST …/signal``, ``DELETE`` with a signal, ``timeout -s``).
TERMINATING: Final = ("SIGHUP", "SIGINT", "SIGQUIT", "SIGKILL", "SIGUSR1", "SIGUSR2", "SIGTERM")
#: Signals a process accepts by name: the terminating ones and ``SIGWINCH`` (a resize, ignored).
KNOWN: Final = (*TERMINATING, "SIGWINCH")
#: Each signal's number, the stop and continue signals the runtime sends its trees included.
NUMBERS: Final = {name: int(getattr(signal, name)) for name in (*KNOWN, "SIGSTOP", "SIGCONT")}
