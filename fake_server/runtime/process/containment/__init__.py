"""The walls of a process-runtime sandbox: its ids, system calls, limits, mounts and view of /proc.

What keeps a sandbox's processes from the host and from each other, each a module: the user
namespace's id range (``idmap``), the seccomp filter (``seccomp``), the cgroup limits
(``cgroups``), mount namespaces (``mountns``; ``nsthread``: the short-lived thread that
namespaces are entered in, network namespaces' too), lxcfs's /proc (``procview``), bubblewrap
(``bwrap``), how they combine for an image sandbox (``confine``), and the bounds on what
sandboxes hold of the fake's own servers (``caps``). Nothing here imports another room of
the runtime.
"""
