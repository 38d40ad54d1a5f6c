"""The limits on a sandbox's environment variables, checked at create and at fork."""

from __future__ import annotations

import re

from fake_server.models.errors import BadRequest

__all__ = ["MAX_ENVS", "MAX_ENV_TOTAL", "MAX_ENV_VALUE", "check_envs"]

ENV_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
MAX_ENVS = 64
MAX_ENV_VALUE = 4 * 1024
MAX_ENV_TOTAL = 64 * 1024


def check_envs(envs: tuple[tuple[str, str], ...]) -> None:
    if len(envs) > MAX_ENVS:
        raise BadRequest(f"at most {MAX_ENVS} entries", field="envs")
    total = 0
    for key, value in envs:
        if not ENV_KEY.match(key):
            raise BadRequest("keys must match ^[A-Za-z_][A-Za-z0-9_]*$", field="envs")
        if "\x00" in value:
            raise BadRequest("values must not contain NUL", field="envs")
        size = len(value.encode(errors="surrogatepass"))
        if size > MAX_ENV_VALUE:
            raise BadRequest(f"values must be at most {MAX_ENV_VALUE} bytes", field="envs")
        total += size + len(key)
    if total > MAX_ENV_TOTAL:
        raise BadRequest(f"must be at most {MAX_ENV_TOTAL} bytes in total", field="envs")
