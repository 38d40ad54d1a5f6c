"""What a sandbox's commands start with and may write, whichever runtime runs them.

``BASE_ENV`` is root's, as on the service's devbox VM: bashkit and the process runtime's devbox
image run commands as root; only the process runtime's host-directory fallback lays its
unprivileged user and ``$HOME`` over it. The size limits are bashkit's fixed in-memory ones;
the HTTP layer applies the file limit to every upload, so a client sees one limit whichever
runtime holds the file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["BASE_ENV", "DISK_LIMIT", "FILE_LIMIT", "HOME"]

#: root's home directory (also ``$HOME`` and the default working directory): commands run as
#: root, as on the service's devbox VM.
HOME = "/root"

#: The environment every process starts with; ``env`` passed to a run is laid over it.
BASE_ENV: Mapping[str, str] = {
    "HOME": HOME,
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "USER": "root",
    "LOGNAME": "root",
    "SHELL": "/bin/bash",
    "LANG": "C.UTF-8",
}

#: Largest file bashkit 0.20's in-memory ``FileSystem`` holds (not configurable there).
FILE_LIMIT = 10_000_000

#: Total bytes of files one bashkit ``FileSystem`` holds (not configurable there either).
DISK_LIMIT = 100_000_000
