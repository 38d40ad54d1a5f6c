"""One process-runtime sandbox: its machine, its init, and the commands that run in it.

The machine (``machine``) holds a sandbox's root, runs, network and disks; every process
enters the namespaces of its long-lived init (``guest``), started and fed through its pipes
(``spawn``), on a PTY where asked (``pty``), by the runner (``runner``); a command's
process tree and signals (``tree``), its real time (``realwait``), why its output is held
open (``heldopen``), what it uses (``usage``); and the in-guest agent a workload reaches
the API through (``agent``, ``selfpipe``). It uses every other room of the runtime; none
uses it.
"""
