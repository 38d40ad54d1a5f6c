"""The CreateOS HTTP client: JSend envelopes, fixed error labels, redaction, pacing, deadlines.

Interface used by the rest of the provider (docs/reference/provider.md#api-answers):

* ``CreateosClient.request_json(method, path, *, body=None, signal=None) -> dict`` — ``path``
  like ``"/sandboxes/sb-1/pause"`` (the client adds ``/v1``); returns the validated ``data``.
* ``upload(sandbox_id, path, content, *, signal=None)`` — PUT ``/files?path=`` raw bytes.
* ``download(sandbox_id, path, *, signal=None)`` — ``async with`` → ``AsyncIterator[bytes]``.
* ``stream(method, path, *, signal=None)`` — ``async with`` → ``AsyncIterator[str]`` of decoded
  text (NDJSON ``/connect``); a non-2xx answer raises ``CreateosApiError`` before yielding; a
  transport failure *while reading* raises ``StreamReadError`` so a follower can reconnect.
* conveniences: ``create_sandbox``, ``get_sandbox``, ``delete_sandbox`` (404 swallowed),
  ``pause_sandbox``, ``resume_sandbox``, ``exec``.

Every request first takes a pacer turn, then runs under the caller's signal, or, when the caller
passes none, under a fresh ``timeout_ms`` deadline on the injected clock. Errors never carry
bodies, URLs, paths or keys: non-2xx → ``CreateosApiError(status, label)``; 3xx and transport
failures → "CreateOS connection failed."; an aborted signal re-raises its reason.

``HttpPool`` keeps one ``httpx.AsyncClient`` per API URL for the provider's lifetime, all
sharing one ``ssl.SSLContext`` built once per process (building one costs ~30 ms). The clients
keep no cookies, as ``fetch`` in the TypeScript provider keeps none, and name the provider in
their ``User-Agent`` (``pytest-createos/0.1.0``): a fake tells from it that a provider on its
virtual clock sends requests without the clock transport.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import functools
import importlib
import json
import re
import ssl
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import httpx

from pytest_createos.provider._errors import (
    CONNECTION_FAILED,
    ConnectionFailedError,
    CreateosApiError,
    CreateosError,
)
from pytest_createos.provider._signal import deadline_signal

if TYPE_CHECKING:
    from collections.abc import AsyncIterable, AsyncIterator, Mapping

    from pytest_createos.provider._clock import Clock
    from pytest_createos.provider._pacing import Pacer
    from pytest_createos.provider._signal import AbortSignal

__all__ = ["CreateosClient", "HttpPool", "StreamReadError", "identifier", "operation_label"]

EMPTY_STREAM = "CreateOS returned an empty process stream."
_IDENTIFIER = re.compile(r"[A-Za-z0-9_-]{1,200}")
_LOOPBACK_PREFIXES = ("http://localhost", "http://127.0.0.1", "http://[::1]")
# encodeURIComponent leaves these unescaped besides letters, digits and "_.-~".
_URI_COMPONENT_SAFE = "!*'()"


class StreamReadError(CreateosError):
    """A transport failure while reading a response body (the stream may be resumed)."""

    def __init__(self) -> None:
        super().__init__(CONNECTION_FAILED)


def identifier(value: object) -> str:
    """Return ``value`` if it is a safe resource ID (it goes into URL paths)."""
    if isinstance(value, str) and _IDENTIFIER.fullmatch(value):
        return value
    raise CreateosError("CreateOS returned an invalid resource ID.")


def operation_label(path: str) -> str:
    """The fixed label naming an operation in errors; first matching rule wins
    (docs/reference/provider.md#api-answers)."""
    if "/files?" in path:
        return "file transfer"
    if "/stdin/close" in path:
        return "stdin close"
    if "/connect?" in path:
        return "output connection"
    if path.endswith("/processes"):
        return "process creation"
    if "/processes/" in path:
        return "process cleanup"
    if path.endswith("/exec"):
        return "workspace command"
    return "sandbox lifecycle"


@functools.cache
def _ssl_context(*, tls: bool = True) -> ssl.SSLContext:
    """One context per process: immutable once built, and loading the CA bundle costs tens of
    milliseconds. A plain ``http://`` URL (the fake on loopback) never shakes hands, so it gets
    a context without the bundle (a redirect to ``https`` is not followed)."""
    if tls:
        return httpx.create_ssl_context()
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


@functools.cache
def _preload_network_backend() -> None:
    """Import what httpcore would import lazily inside the first request.

    That import takes tens of milliseconds (far more on a loaded machine) inside the first
    request. A virtual clock stays still meanwhile (the exchange is open), but loading it up
    front keeps the first request as quick as the others. A pool given a transport of its
    own (the plugin's lease provider sends with aiohttp's client) may never use httpcore, so
    it does not import it.
    """
    for module in ("httpcore._backends.anyio", "anyio._backends._asyncio"):
        with contextlib.suppress(ImportError):
            importlib.import_module(module)


class HttpPool:
    """One ``httpx.AsyncClient`` per API URL, reused until ``aclose()``.

    Connections belong to the event loop that opened them; a provider used from another loop
    (a long-lived provider across per-test loops) gets a fresh client there.
    """

    __slots__ = ("_clients", "_transport")

    def __init__(self, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self._clients: dict[str, tuple[asyncio.AbstractEventLoop | None, httpx.AsyncClient]] = {}
        self._transport = transport

    def get(self, api_url: str) -> httpx.AsyncClient:
        loop = _running_loop()
        entry = self._clients.get(api_url)
        if entry is not None and entry[0] is loop and not entry[1].is_closed:
            return entry[1]
        if self._transport is None:  # httpx's own transport, over httpcore
            _preload_network_backend()
        client = _CookielessClient(
            transport=self._transport,
            headers={"User-Agent": _user_agent()},
            verify=_ssl_context(tls=not api_url.startswith("http://")),
            follow_redirects=False,
            timeout=None,  # deadlines run on the injected clock, not on wall time
            # Proxy settings from the environment must not divert loopback (the fake).
            trust_env=not api_url.startswith(_LOOPBACK_PREFIXES),
        )
        self._clients[api_url] = (loop, client)
        return client

    async def aclose(self) -> None:
        entries, self._clients = list(self._clients.values()), {}
        loop = _running_loop()
        for owner, client in entries:
            if owner is loop:
                with contextlib.suppress(Exception):
                    await client.aclose()


@functools.cache
def _user_agent() -> str:
    """``pytest-createos/<version>``: the provider names itself, as the SDKs do."""
    from importlib import metadata

    try:
        return f"pytest-createos/{metadata.version('pytest-createos')}"
    except metadata.PackageNotFoundError:
        return "pytest-createos/unknown"


class _NoCookies(httpx.Cookies):
    """A jar that stays empty: ``Set-Cookie`` answers are not kept."""

    def extract_cookies(self, response: httpx.Response) -> None:
        return None


class _CookielessClient(httpx.AsyncClient):
    """An ``httpx.AsyncClient`` that neither keeps nor sends cookies, like ``fetch`` in Node.

    Besides parity, reading each reply's ``Set-Cookie`` into a jar is about a third of httpx's
    own cost per request.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._empty_jar = _NoCookies()  # one per client: it is read twice per request

    @property
    def cookies(self) -> httpx.Cookies:
        return self._empty_jar

    @cookies.setter
    def cookies(self, cookies: Any) -> None:
        return None


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class CreateosClient:
    """Talks to one CreateOS API URL with one key; cheap to build (the HTTP client is shared)."""

    __slots__ = ("_api_key", "_api_url", "_clock", "_http", "_pacer", "_timeout_ms")

    def __init__(
        self,
        *,
        http: httpx.AsyncClient,
        api_url: str,
        api_key: str,
        timeout_ms: int,
        clock: Clock,
        pacer: Pacer,
    ) -> None:
        self._http = http
        self._api_url = api_url
        self._api_key = api_key
        self._timeout_ms = timeout_ms
        self._clock = clock
        self._pacer = pacer

    @property
    def clock(self) -> Clock:
        return self._clock

    @property
    def timeout_ms(self) -> int:
        """The config's per-request deadline, also used for fresh cleanup deadlines."""
        return self._timeout_ms

    # -- core ---------------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _exchange(
        self,
        method: str,
        path: str,
        *,
        signal: AbortSignal | None,
        content: bytes | AsyncIterable[bytes] | None = None,
        content_type: str | None = None,
    ) -> AsyncIterator[tuple[httpx.Response, AbortSignal]]:
        """Send one paced request; yield the 2xx response (body unread) and the live signal.

        The response is closed in all cases when the caller is done (body read, error,
        abandon).
        """
        own = None
        if signal is None:
            own = signal = deadline_signal(self._clock, self._timeout_ms / 1000)
        try:
            await self._pacer.wait(self._api_url, clock=self._clock, signal=signal)
            headers = {"Content-Type": content_type} if content_type else {}
            headers["X-Api-Key"] = self._api_key  # last, so nothing can override it
            request = self._http.build_request(
                method, f"{self._api_url}/v1{path}", content=content, headers=headers
            )
            response = await self._send(request, signal)
            try:
                status = response.status_code
                if 300 <= status < 400:
                    raise ConnectionFailedError()
                if not 200 <= status < 300:
                    raise CreateosApiError(status, operation_label(path))
                yield response, signal
            finally:
                with contextlib.suppress(Exception):
                    await response.aclose()
        finally:
            if own is not None:
                own.close()

    async def _send(self, request: httpx.Request, signal: AbortSignal) -> httpx.Response:
        try:
            with signal.scope():
                return await self._http.send(request, stream=True)
        except Exception as exc:
            if signal.aborted and exc is signal.reason:
                raise
            raise ConnectionFailedError() from None

    async def _read_all(self, response: httpx.Response, signal: AbortSignal) -> bytes:
        parts: list[bytes] = []
        iterator = response.aiter_bytes()
        try:
            while True:
                with signal.scope():
                    try:
                        parts.append(await anext(iterator))
                    except StopAsyncIteration:
                        return b"".join(parts)
        except Exception as exc:
            if signal.aborted and exc is signal.reason:
                raise
            raise ConnectionFailedError() from None

    async def _chunks(self, response: httpx.Response, signal: AbortSignal) -> AsyncIterator[bytes]:
        iterator = response.aiter_bytes()
        while True:
            try:
                with signal.scope():
                    chunk = await anext(iterator)
            except StopAsyncIteration:
                return
            except (httpx.TransportError, httpx.DecodingError):
                if signal.aborted:
                    signal.raise_if_aborted()
                raise StreamReadError() from None
            if chunk:
                yield chunk

    async def request_json(
        self,
        method: str,
        path: str,
        *,
        body: Mapping[str, Any] | None = None,
        signal: AbortSignal | None = None,
    ) -> dict[str, Any]:
        """Send a JSON request and return the success envelope's ``data`` object."""
        content = None if body is None else json.dumps(body).encode()
        content_type = None if body is None else "application/json"
        async with self._exchange(
            method, path, signal=signal, content=content, content_type=content_type
        ) as (response, live):
            raw = await self._read_all(response, live)
        return _envelope_data(raw)

    async def upload(
        self,
        sandbox_id: str,
        path: str,
        content: bytes | AsyncIterable[bytes],
        *,
        signal: AbortSignal | None = None,
    ) -> None:
        """Write ``content`` to ``path`` inside the sandbox (PUT /files, raw bytes)."""
        async with self._exchange(
            "PUT",
            _files_path(sandbox_id, path),
            signal=signal,
            content=content,
            content_type="application/octet-stream",
        ) as (response, live):
            # The answer is not used, but reading its few bytes keeps the connection reusable.
            await self._read_all(response, live)

    @contextlib.asynccontextmanager
    async def download(
        self, sandbox_id: str, path: str, *, signal: AbortSignal | None = None
    ) -> AsyncIterator[AsyncIterator[bytes]]:
        """Stream the bytes of ``path`` inside the sandbox (GET /files)."""
        files_path = _files_path(sandbox_id, path)
        async with self._exchange("GET", files_path, signal=signal) as (response, live):
            if response.status_code in (204, 205):
                raise CreateosError("CreateOS file download has no body.")
            yield self._chunks(response, live)

    @contextlib.asynccontextmanager
    async def stream(
        self, method: str, path: str, *, signal: AbortSignal | None = None
    ) -> AsyncIterator[AsyncIterator[str]]:
        """Open a streaming response and yield its body as UTF-8 text chunks."""
        async with self._exchange(method, path, signal=signal) as (response, live):
            if response.status_code in (204, 205):
                raise CreateosError(EMPTY_STREAM)
            yield _decoded(self._chunks(response, live))

    # -- conveniences -------------------------------------------------------------------------

    async def create_sandbox(
        self, *, shape: str, rootfs: str | None, region: str | None, signal: AbortSignal
    ) -> str:
        """Create a sandbox (never with ingress) and return its validated ID."""
        body: dict[str, Any] = {"shape": shape}
        if rootfs is not None:
            body["rootfs"] = rootfs
        if region is not None:
            body["region"] = region
        body["ingress_enabled"] = False
        data = await self.request_json("POST", "/sandboxes", body=body, signal=signal)
        return identifier(data.get("id"))

    async def get_sandbox(self, sandbox_id: str, *, signal: AbortSignal) -> dict[str, Any]:
        """Read a sandbox; its ``id`` must echo ours and its ``status`` must be a string."""
        sandbox_id = identifier(sandbox_id)
        data = await self.request_json("GET", f"/sandboxes/{sandbox_id}", signal=signal)
        if data.get("id") != sandbox_id or not isinstance(data.get("status"), str):
            raise CreateosError("CreateOS sandbox identity or state is invalid.")
        return data

    async def delete_sandbox(self, sandbox_id: str, *, signal: AbortSignal | None = None) -> None:
        """Destroy a sandbox; one that is already gone (404) counts as destroyed."""
        sandbox_id = identifier(sandbox_id)
        try:
            await self.request_json("DELETE", f"/sandboxes/{sandbox_id}", signal=signal)
        except CreateosApiError as error:
            if error.status != 404:
                raise

    async def pause_sandbox(self, sandbox_id: str, *, signal: AbortSignal) -> None:
        await self.request_json("POST", f"/sandboxes/{identifier(sandbox_id)}/pause", signal=signal)

    async def resume_sandbox(self, sandbox_id: str, *, signal: AbortSignal) -> None:
        await self.request_json(
            "POST", f"/sandboxes/{identifier(sandbox_id)}/resume", signal=signal
        )

    async def exec(
        self,
        sandbox_id: str,
        cmd: str,
        args: list[str],
        *,
        signal: AbortSignal | None = None,
    ) -> dict[str, Any]:
        """Run a short buffered command; returns the ``result`` object (exit_code, stdout…)."""
        data = await self.request_json(
            "POST",
            f"/sandboxes/{identifier(sandbox_id)}/exec",
            body={"cmd": cmd, "args": args},
            signal=signal,
        )
        result = data.get("result")
        if not isinstance(result, dict):
            raise CreateosError("CreateOS returned an invalid response.")
        return result


def _files_path(sandbox_id: str, path: str) -> str:
    encoded = quote(path, safe=_URI_COMPONENT_SAFE)
    return f"/sandboxes/{identifier(sandbox_id)}/files?path={encoded}"


def _envelope_data(raw: bytes) -> dict[str, Any]:
    try:
        envelope = json.loads(raw)
    except ValueError:  # includes UnicodeDecodeError
        raise CreateosError("CreateOS returned invalid JSON.") from None
    if not isinstance(envelope, dict):
        raise CreateosError("CreateOS returned invalid JSON.")
    if envelope.get("status") != "success":
        raise CreateosError("CreateOS returned an unsuccessful response.")
    data = envelope.get("data")
    if not isinstance(data, dict):
        raise CreateosError("CreateOS returned an invalid response.")
    return data


async def _decoded(chunks: AsyncIterator[bytes]) -> AsyncIterator[str]:
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    async for chunk in chunks:
        text = decoder.decode(chunk)
        if text:
            yield text
    tail = decoder.decode(b"", final=True)
    if tail:
        yield tail
