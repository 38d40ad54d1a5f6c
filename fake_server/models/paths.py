"""Guest paths as the API accepts them (files, cwd, mount paths)."""

from __future__ import annotations

import posixpath

from fake_server.models.errors import BadRequest

__all__ = ["MAX_PATH", "check_abs_path"]

MAX_PATH = 4096


def check_abs_path(path: object, field: str = "path") -> str:
    """An absolute, NUL-free guest path, normalised (``..`` collapsed)."""
    if not isinstance(path, str) or not path:
        raise BadRequest("is required", field=field)
    if "\x00" in path or len(path) > MAX_PATH or not _encodable(path):
        raise BadRequest("is not a valid path", field=field)
    if not path.startswith("/"):
        raise BadRequest("must be an absolute path", field=field)
    normal = posixpath.normpath(path)
    return "/" + normal.lstrip("/")


def _encodable(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True
