"""What the journal keeps of a message: one redaction table, capped text, summarised binary.

Everything that records or shows a request or a reply (journal events, ``fake.calls``, the
control API's journal, the failure report) goes through here, so a secret is masked in one
place: headers and query parameters by name, JSON fields by name (at any depth), and the
fake's own credentials (account API keys, the control key) wherever they stand whole in a
text (``scrub``).
Bodies are user data (commands, file contents): kept up to ``BODY_LIMIT`` characters.
"""

from __future__ import annotations

import codecs
import functools
import hashlib
import json
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from fake_server.operations import CREDENTIAL_HEADERS

if TYPE_CHECKING:
    from collections.abc import Collection, Iterable, Mapping, Sequence

__all__ = [
    "BODY_LIMIT",
    "HEADER_LIMIT",
    "REDACTED",
    "SECRET_HEADERS",
    "UNKEPT_HEADERS",
    "BodyTexts",
    "binary_summary",
    "body_text",
    "may_be_text",
    "query_text",
    "redacted",
    "scrub",
    "secret_name",
]

#: Characters of a body kept in an event; the rest is counted, never stored.
BODY_LIMIT = 4096
#: Headers kept per message, and characters per header value.
HEADER_LIMIT = 50
_VALUE_LIMIT = 1024
REDACTED = "<redacted>"
#: Header names (lower case) whose values never reach the journal: every credential the API,
#: the control API and sandbox access tokens are sent in, and cookies.
SECRET_HEADERS = CREDENTIAL_HEADERS | {
    "authorization",
    "proxy-authorization",
    "cookie",
    "set-cookie",
}
#: Transport headers that differ from run to run and say nothing about the call (the port in
#: ``Host``, the wall-clock ``Date``, the virtual clock's exchange id): not kept, so the same
#: test gives the same journal.
UNKEPT_HEADERS = frozenset(
    {"host", "date", "server", "connection", "keep-alive", "x-fake-clock-exchange"}
)
#: Any other header, query parameter or JSON field whose name says it holds a credential
#: (``token``, ``secret_key``, ``credentials``, ``GITHUB_TOKEN`` in an ``env`` object, ...).
_SECRET_NAME = re.compile(
    r"secret|token|passw|api[-_]?key|access[-_]?key|private[-_]?key|control[-_]?key"
    r"|authori[sz]ation|credential|cookie",
    re.IGNORECASE,
)
#: Cheap pre-check before a JSON body is parsed for redaction: lower-cased substrings one of
#: which a credential field name contains (``key"`` ends a JSON key such as ``"api_key"`` or
#: ``"secret_key"``, and leaves ``"ssh_pubkeys"`` of every sandbox reply alone; a key such as
#: ``"api_key_id"`` is not looked for).
_SECRET_HINTS = ("secret", "token", "passw", 'key"', "authori", "credential", "cookie")


@functools.lru_cache(maxsize=1024)
def secret_name(name: str) -> bool:
    """Whether a header, parameter or field called ``name`` holds a credential."""
    return name.lower() in SECRET_HEADERS or _SECRET_NAME.search(name) is not None


def scrub(text: str, secrets: Collection[str] = ()) -> str:
    """``text`` with every whole occurrence of a known secret value replaced by ``<redacted>``.

    Whole: not inside a longer word, so a short key (``--api-key test``) leaves
    ``integration-test-box`` and ``disk_mib`` alone; a key between quotes, spaces, ``=``,
    ``:`` or ``/`` (a JSON value, a header, a command line, a URL) is masked.
    """
    if not any(secret and secret in text for secret in secrets):
        return text
    pattern = _whole(tuple(secrets))
    return text if pattern is None else pattern.sub(REDACTED, text)


#: Characters that continue a word: a secret next to one is part of something longer.
_WORD = r"A-Za-z0-9_\-"


@functools.lru_cache(maxsize=64)
def _whole(secrets: tuple[str, ...]) -> re.Pattern[str] | None:
    """One pattern for every secret, longest first, each standing whole (a dot before it, or
    a dot and a word character after it, continue a name such as ``test.example``)."""
    alternatives = sorted({secret for secret in secrets if secret}, key=len, reverse=True)
    if not alternatives:
        return None
    either = "|".join(map(re.escape, alternatives))
    return re.compile(rf"(?<![{_WORD}.])(?:{either})(?![{_WORD}])(?!\.[{_WORD}])")


def redacted(
    headers: Iterable[tuple[str, str]], secrets: Collection[str] = ()
) -> tuple[tuple[str, str], ...]:
    """Headers for an event: names lower-cased, credential values ``<redacted>``, transport
    noise (``UNKEPT_HEADERS``) left out, at most ``HEADER_LIMIT``."""
    kept: list[tuple[str, str]] = []
    shortest = (min(map(len, secrets)) or 1) if secrets else 0
    for name, value in headers:
        known = _HEADER_KINDS.get(name)
        kind, lower = known if known is not None else _header_kind(name)
        if kind == _SKIP:
            continue
        if len(kept) == HEADER_LIMIT:
            break
        if kind == _SECRET:
            kept.append((lower, REDACTED))
        elif shortest and len(value) >= shortest:
            kept.append((lower, scrub(value[:_VALUE_LIMIT], secrets)))
        else:
            kept.append((lower, value[:_VALUE_LIMIT]))
    return tuple(kept)


_KEEP, _SECRET, _SKIP = 0, 1, 2
#: Each header name (as sent) classified once, with its lower-case form: the journal records
#: every request's headers.
_HEADER_KINDS: dict[str, tuple[int, str]] = {}


def _header_kind(name: str) -> tuple[int, str]:
    lower = str(name).lower()
    kind = _SKIP if lower in UNKEPT_HEADERS else _SECRET if secret_name(lower) else _KEEP
    if len(_HEADER_KINDS) < 4096:  # names are client-chosen: bounded
        _HEADER_KINDS[name] = (kind, lower)
    return kind, lower


def query_text(query: Mapping[str, str], secrets: Collection[str] = ()) -> str:
    """A query string for an event, credential parameters ``<redacted>``."""
    if not query:
        return ""
    shown = {k: (REDACTED if secret_name(k) else scrub(v, secrets)) for k, v in query.items()}
    return urlencode(shown, safe="/<>")


def body_text(
    data: bytes,
    limit: int = BODY_LIMIT,
    secrets: Collection[str] = (),
    digest: str | None = None,
) -> str:
    """A body for an event: UTF-8 text (credentials redacted) capped at ``limit`` characters,
    anything else as a summary of its size and sha256 (``digest``, when known already)."""
    if not _may_be_text(data):
        return binary_summary(len(data), digest or hashlib.sha256(data).hexdigest())
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return binary_summary(len(data), digest or hashlib.sha256(data).hexdigest())
    text = scrub(_redact_json(text), secrets)
    if len(text) > limit:
        return f"{text[:limit]}… ({len(text) - limit} more characters)"
    return text


class BodyTexts:
    """``body_text`` of the latest small bodies, each worked out once: a reply sent again
    unchanged (a sandbox polled until it runs) is not decoded, searched for credentials and
    capped again per request. The answer depends on the bytes and the secrets only, so it is
    the same as ``body_text``'s; the oldest entry goes first past ``size`` entries."""

    def __init__(self, size: int = 64, largest: int = 16384) -> None:
        self._texts: dict[tuple[bytes, tuple[str, ...]], str] = {}
        self._size = size
        self._largest = largest

    def text(self, data: bytes, secrets: tuple[str, ...]) -> str:
        if len(data) > self._largest:  # uploads and downloads: kept out of memory
            return body_text(data, secrets=secrets)
        key = (data, secrets)
        text = self._texts.get(key)
        if text is None:
            text = self._texts[key] = body_text(data, secrets=secrets)
            if len(self._texts) > self._size:
                del self._texts[next(iter(self._texts))]
        return text


def may_be_text(pieces: Sequence[bytes]) -> bool:
    """``_may_be_text`` of the body whose first pieces are ``pieces``, joined as far as needed."""
    head = b""
    for piece in pieces:
        head += piece[: _SNIFF + 1 - len(head)]
        if len(head) > _SNIFF:
            break
    return _may_be_text(head)


def _may_be_text(data: bytes) -> bool:
    """Whether the start of ``data`` is UTF-8: a binary upload is told apart from its first
    bytes, without decoding it whole (which allocates a string of its full size first: 11 ms
    for 5 MiB of random bytes)."""
    if len(data) <= _SNIFF:
        return True
    try:
        codecs.getincrementaldecoder("utf-8")().decode(data[:_SNIFF])
    except UnicodeDecodeError:
        return False
    return True


#: Bytes of a body looked at before it is decoded whole.
_SNIFF = 4096


def binary_summary(size: int, digest: str | None = None) -> str:
    """``<binary, 3 bytes, sha256 0123456789ab>``: what stands for a body that is not text."""
    return f"<binary, {size} bytes{f', sha256 {digest[:12]}' if digest else ''}>"


def _redact_json(text: str) -> str:
    """A JSON object or array with its credential fields masked; any other text unchanged."""
    head = text.lstrip()[:1]
    if head not in ("{", "["):
        return text
    lowered = text.lower()
    for hint in _SECRET_HINTS:
        if hint in lowered:
            break
    else:
        return text
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return text
    changed, masked = _mask(value)
    return json.dumps(masked, ensure_ascii=False) if changed else text


def _mask(value: Any) -> tuple[bool, Any]:
    if isinstance(value, dict):
        changed, out = False, {}
        for key, item in value.items():
            if isinstance(key, str) and secret_name(key) and item not in (None, ""):
                out[key] = REDACTED
                changed = True
                continue
            inner, out[key] = _mask(item)
            changed = changed or inner
        return changed, out
    if isinstance(value, list):
        results = [_mask(item) for item in value]
        return any(c for c, _ in results), [item for _, item in results]
    return False, value
