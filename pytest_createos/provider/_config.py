"""Environment config parsing, API key resolution, lease metadata and ownership.

The keys are in docs/reference/provider.md#configuration-environmentconfig.

Parsing is pure and checks fields in the spec's order (apiUrl → URL rules → shape → timeoutMs →
reuseLease → apiKey → rootfs → region), then refuses unknown keys, raising ``CreateosError``
with the exact message. The
API key is resolved separately, only when a client or scope key is needed, because
``validate_config`` must not look at the host environment.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from pytest_createos.provider._errors import CreateosError

__all__ = [
    "DEFAULT_API_URL",
    "MARKER_PATH",
    "WORKSPACE",
    "CreateosConfig",
    "lease_metadata",
    "metadata_matches",
    "parse_config",
    "resolve_api_key",
    "resumable_marker",
    "scope_key",
    "valid_timeout_ms",
]

DEFAULT_API_URL = "https://api.sb.createos.sh"
DEFAULT_TIMEOUT_MS = 300_000
MAX_TIMEOUT_MS = 86_400_000
WORKSPACE = "/paperclip-workspace"
MARKER_PATH = f"{WORKSPACE}/.paperclip-runtime/.paperclip-createos-lease"

_URL_RULES = (
    "CreateOS API URL must be an HTTPS origin (optionally ending in /v1); "
    "HTTP is allowed on loopback only."
)
_LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})
_HOST = re.compile(r"[a-z0-9.-]+|\[[0-9a-f:.]+\]")
_DEFAULT_PORTS = {"https": 443, "http": 80}
_MARKER = re.compile(r"[0-9a-f-]{36}")
_MISSING = object()
_KEYS = ("apiUrl", "apiKey", "shape", "timeoutMs", "reuseLease", "rootfs", "region")
#: The key travels in an HTTP header, which carries printable ASCII only; the message never
#: shows the key itself.
_KEY_CHARS = "CreateOS API key must contain printable ASCII characters only."
#: No usable key: the TypeScript provider's message (``resolveApiKey`` in its config.ts), also
#: for a key holding CR, LF or NUL, which it treats as no key at all.
_NEEDS_KEY = "CreateOS requires an API key in the environment config or CREATEOS_API_KEY."


@dataclass(frozen=True, slots=True)
class CreateosConfig:
    """A parsed environment config; ``api_key`` is the configured key only (may be ``None``)."""

    api_url: str
    api_key: str | None
    shape: str
    timeout_ms: int
    reuse_lease: bool
    rootfs: str | None
    region: str | None

    def to_json(self) -> dict[str, Any]:
        """The normalized config with the spec's camelCase keys (it echoes ``apiKey``)."""
        return {
            "apiUrl": self.api_url,
            "apiKey": self.api_key,
            "shape": self.shape,
            "timeoutMs": self.timeout_ms,
            "reuseLease": self.reuse_lease,
            "rootfs": self.rootfs,
            "region": self.region,
        }


def parse_config(raw: object) -> CreateosConfig:
    """Validate and normalize a raw config mapping, or raise the first error in spec order."""
    if not isinstance(raw, Mapping):
        raise CreateosError("Invalid CreateOS configuration.")
    api_url = _optional_string(raw, "apiUrl")
    if api_url is None:
        raise CreateosError("CreateOS requires an API URL.")
    origin = _normalize_api_url(api_url)
    shape = _optional_string(raw, "shape")
    if shape is None:
        raise CreateosError("CreateOS requires a shape from its shape catalog.")
    timeout_ms = _timeout_ms(raw.get("timeoutMs"))
    reuse = raw.get("reuseLease")
    if reuse is not None and not isinstance(reuse, bool):
        raise CreateosError("reuseLease must be a boolean.")
    api_key = _api_key(raw)
    rootfs = _optional_string(raw, "rootfs")
    region = _optional_string(raw, "region")
    _refuse_unknown_keys(raw)
    return CreateosConfig(
        api_url=origin,
        api_key=api_key,
        shape=shape,
        timeout_ms=timeout_ms,
        reuse_lease=reuse is True,
        rootfs=rootfs,
        region=region,
    )


def resolve_api_key(config: CreateosConfig, environ: Mapping[str, str] | None = None) -> str:
    """The configured key, else ``CREATEOS_API_KEY`` (only for the public API URL)."""
    key = config.api_key
    if key is None:
        if config.api_url != DEFAULT_API_URL:
            raise CreateosError(
                "Custom CreateOS API endpoints require an explicit environment API key; "
                f"the host fallback is only available for {DEFAULT_API_URL}."
            )
        key = (os.environ if environ is None else environ).get("CREATEOS_API_KEY", "").strip()
    if not key or _line_breaking(key):
        raise CreateosError(_NEEDS_KEY)
    if not _header_safe(key):
        raise CreateosError(_KEY_CHARS)
    return key


def lease_metadata(
    config: CreateosConfig, *, company_id: str, environment_id: str, marker: str
) -> dict[str, Any]:
    """What the host persists for a lease (JSON); never contains the API key."""
    return {
        "provider": "createos",
        "apiUrl": config.api_url,
        "companyId": company_id,
        "environmentId": environment_id,
        "remoteCwd": WORKSPACE,
        "shellCommand": "bash",
        "marker": marker,
        "shape": config.shape,
        "rootfs": config.rootfs,
        "region": config.region,
        "reuseLease": config.reuse_lease,
    }


def metadata_matches(
    metadata: object, config: CreateosConfig, *, company_id: str, environment_id: str
) -> bool:
    """Whether a lease was made by this provider for this company, environment and API URL."""
    return (
        isinstance(metadata, Mapping)
        and metadata.get("provider") == "createos"
        and metadata.get("companyId") == company_id
        and metadata.get("environmentId") == environment_id
        and metadata.get("apiUrl") == config.api_url
    )


def resumable_marker(metadata: Mapping[str, Any], config: CreateosConfig) -> str | None:
    """The stored marker if the lease may be resumed under ``config``, else ``None``.

    ``shape``, ``rootfs`` and ``region`` must equal the config strictly (a missing key is not
    ``null``), so a changed environment expires its old leases without a request.
    """
    marker = metadata.get("marker")
    if not isinstance(marker, str) or not _MARKER.fullmatch(marker):
        return None
    for key in ("shape", "rootfs", "region"):
        stored, configured = metadata.get(key, _MISSING), getattr(config, key)
        if type(stored) is not type(configured) or stored != configured:
            return None
    return marker


def valid_timeout_ms(value: object) -> bool:
    """An integral number of milliseconds in 1..86400000 (booleans are not numbers)."""
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value == int(value)
        and 1 <= value <= MAX_TIMEOUT_MS
    )


def scope_key(
    config: CreateosConfig, api_key: str, *, company_id: str, environment_id: str, lease_id: str
) -> str:
    """The key of a lease's in-memory state; the API key appears only as its SHA-256."""
    digest = hashlib.sha256(api_key.encode()).hexdigest()
    return json.dumps([company_id, environment_id, config.api_url, digest, lease_id])


def _optional_string(raw: Mapping[str, Any], key: str) -> str | None:
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or "\0" in value:
        raise CreateosError(f"{key} must be a non-empty string.")
    return value.strip()


def _api_key(raw: Mapping[str, Any]) -> str | None:
    """The configured key, trimmed: CR, LF or NUL in it is no usable key (as in the TypeScript
    provider), another character an HTTP header cannot carry is refused as such."""
    value = raw.get("apiKey")
    if isinstance(value, str) and value.strip() and _line_breaking(value.strip()):
        raise CreateosError(_NEEDS_KEY)
    key = _optional_string(raw, "apiKey")
    if key is not None and not _header_safe(key):
        raise CreateosError(_KEY_CHARS)
    return key


def _line_breaking(key: str) -> bool:
    return any(char in key for char in "\r\n\0")


def _header_safe(key: str) -> bool:
    return key.isascii() and key.isprintable()


def _refuse_unknown_keys(raw: Mapping[Any, Any]) -> None:
    """A misspelled key (``reuselease``, ``timeout_ms``) would otherwise be ignored silently."""
    for key in raw:
        if key in _KEYS:
            continue
        name = str(key)[:64]
        close = difflib.get_close_matches(name, _KEYS, n=1, cutoff=0.6)
        hint = f"did you mean {close[0]!r}?" if close else f"known keys: {', '.join(_KEYS)}"
        raise CreateosError(f"Unknown CreateOS config key {name!r} ({hint}).")


def _timeout_ms(value: object) -> int:
    if value is None:
        return DEFAULT_TIMEOUT_MS
    if not isinstance(value, int | float) or not valid_timeout_ms(value):
        raise CreateosError(f"timeoutMs must be an integer between 1 and {MAX_TIMEOUT_MS}.")
    return int(value)


def _normalize_api_url(value: str) -> str:
    """Reduce an API URL to its origin, enforcing HTTPS (HTTP on loopback only)."""
    try:
        parts = urlsplit(value)
        port = parts.port
        host = parts.hostname
    except ValueError:
        raise CreateosError("CreateOS API URL is invalid.") from None
    scheme = parts.scheme.lower()
    if not scheme:
        raise CreateosError("CreateOS API URL is invalid.")
    if scheme in _DEFAULT_PORTS and (not host or not _HOST.fullmatch(_bracketed(host))):
        raise CreateosError("CreateOS API URL is invalid.")
    allowed = scheme == "https" or (scheme == "http" and host in _LOOPBACK)
    if (
        not allowed
        or host is None
        or parts.username is not None
        or parts.password is not None
        or parts.query
        or parts.fragment
        or parts.path not in ("", "/", "/v1", "/v1/")
    ):
        raise CreateosError(_URL_RULES)
    origin = f"{scheme}://{_bracketed(host)}"
    if port is not None and port != _DEFAULT_PORTS[scheme]:
        origin += f":{port}"
    return origin


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host
