"""The bashkit runtime: a sandbox's filesystem in memory and a real shell (bashkit) over it.

The default runtime, needing nothing from the host. Only this room imports ``bashkit``; what
both runtimes share (the interface, the environment, stdin pipes) is ``fake_server.runtime``.
``gnu/`` holds the GNU tools that replace bashkit builtins (each names the bashkit limit it
exists for); ``braces.py`` and ``devices.py`` refuse, before a script runs, what bashkit would
silently cut short.

Public API
----------
``SandboxDisk``
    One sandbox's filesystem. It survives every process and every pause/resume; ``wipe()`` on
    destroy. Preloaded with a small image: ``/bin`` and ``/usr/bin`` commands, ``/tmp``,
    ``/root`` (``$HOME``: commands run as root), ``/home``, ``/etc/os-release``.
``Shell(disk, clock, commands).run(argv, cwd=, env=, stdin=, on_stdout=, on_stderr=)``
    Runs one process in a fresh interpreter and returns its exit status. ``argv[0]`` may be
    an absolute path (``/bin/bash``); scripts get GNU behaviour for ``realpath``, ``tar`` and a
    ``sleep`` that runs on the fake's clock.
``CommandRegistry`` / ``CommandIO`` / ``CommandFunc``
    Commands a test adds to the image (``node``, ``git``…) as Python callables.

Every bashkit object holds 3 file descriptors: a disk for its sandbox's life (until ``wipe()``
or until it is dropped), an interpreter for one run (dropped when the run ends). Creating
either goes through ``fake_server.runtime.capacity`` (``CapacityError`` past the budget).

GNU overrides of bashkit builtins: ``realpath`` (symlinks resolved; ``-e``/``-m``), ``tar``
(links kept as links, modes, ``--exclude``, ``-h``, ``-z``), ``sleep`` and ``timeout`` (on the
fake's clock, interruptible), ``seq`` and ``yes`` (whole output, streamed: bashkit's stop
silently at 100,000 and 10,000 lines; a writer whose reader went away ends with 141), ``cat``
and ``head`` (the endless devices in full).

Killing and signals
-------------------
The owner runs ``shell.run(...)`` in an asyncio task. SIGKILL (and the end of a DELETE grace
period) is ``task.cancel()``: ``CancelledError`` propagates out of ``run()`` at once, whatever the
script is doing, and the disk keeps every write made so far. SIGTERM is
``shell.deliver_sigterm(task)``: it cancels the task and returns True, or returns False without
doing anything while the process is inside a registered command registered with
``ignores_sigterm=True`` -- the owner then waits the grace period and cancels (SIGKILL).
``ProcessSignal`` is for owners that want to raise a "killed by signal" outcome of their own;
``run()`` itself reports a script's own ``kill -9 $$`` as exit status 137, as bashkit does.

Standard input
--------------
``stdin=None``: empty. ``bytes``: the whole input. ``StdinPipe``: live. A shell that reads its
commands from stdin (``bash``, ``sh``, ``bash -i``/``-l``/``-s``: no ``-c``, no script file --
what a PTY runs) executes each complete command as its line arrives and ends at ``exit`` or end
of input. Otherwise the input is fed through a pipeline stage; bashkit hands it to builtins and
to ``bash -c`` as one string, so a script that may read stdin (``cat``, ``read``…) and was
started with an open pipe begins once the pipe is closed (the provider closes stdin right after
creating a process). A process whose every command provably ignores stdin (``echo``,
``sleep``, ``trap``, ``wait``, ``mkdir``…) starts at once, looking through ``exec``, ``env``
(options and assignments) and nested ``bash -c``/``sh -c``: the TypeScript provider's
``exec env A=1 '/bin/bash' '-c' 'echo hi; sleep 1'`` starts at once, as a real process does. A
registered command counts as reading stdin. A registered command run
directly as ``argv`` receives it chunk by chunk instead, and the process ends when that command
returns even if stdin is still open.

Time
----
The interpreter holds a ``clock.busy()`` token while it works; ``sleep``, waiting for stdin and
registered commands give it back, so a ``VirtualClock`` jumps while a script sleeps. Output
written before a ``sleep`` reaches ``on_stdout`` before time may jump.

Known bashkit limits
--------------------
* bashkit delivers output in bursts, stdout before stderr within one burst, so the exact
  interleaving of the two streams between two waits is not kept (each stream's order is).
* One file may hold at most 10,000,000 bytes and a disk 100,000,000 bytes (bashkit's fixed
  in-memory limits); writes beyond raise ``OSError`` ``EFBIG``/``ENOSPC``.
* ``kill -9 $$`` inside a script ends it with exit status 137, not a signal.
* One expansion yields at most 100,000 words (``set -- $(seq 200000)``): the command fails
  with status 1 and ``bash: word split field limit (100000) exceeded`` on stderr.
* bashkit's devices give at most 1 MiB (``/dev/zero``) or 8 KiB (``/dev/urandom``,
  ``/dev/random``) per read. ``cat`` (``gnu/cat.py``), ``head`` (``gnu/head.py``) and ``dd``
  read them in full (``cat /dev/zero | head -c 5M``, ``dd if=/dev/urandom bs=1M count=2``). A script
  reading one where bashkit would cut it -- a redirect (``tr -dc a-z </dev/urandom``, read by
  bashkit itself) or a device operand of another reader (``od``, ``base64``, ``wc``…) -- fails
  with status 1 and a message before it runs (``devices.py``); a device path computed at run
  time (``od $dev``) is not caught.
* An endless writer (``yes``, ``cat /dev/zero``) into a reader that never stops runs until it is
  killed; the virtual clock does not move while it works (``timeout 1 yes >/dev/null`` on a
  ``VirtualClock`` never times out).
* bashkit leaves a brace range of more than 10,000 items unexpanded and stops one word's brace
  expansions at 50,000; a script (``bash -c``, or a line read by an interactive shell) holding
  such an unquoted brace expression fails with status 1 and a message before it runs
  (``braces.py``); one built at run time (``eval``, a nested ``bash -c``) is not caught.
* A script waits for its background jobs (``sleep 100 &``) before it ends.
"""

from __future__ import annotations

from fake_server.runtime.bashkit.commands import CommandFunc, CommandIO, CommandRegistry
from fake_server.runtime.bashkit.disk import SandboxDisk
from fake_server.runtime.bashkit.shell import Shell

__all__ = ["CommandFunc", "CommandIO", "CommandRegistry", "SandboxDisk", "Shell"]
