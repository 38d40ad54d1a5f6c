"""Where preview URLs live: a port of their own, and a hostname per sandbox and port.

Nothing a sandbox serves may share an origin with the dashboard or the control API, or a page
in a sandbox could read the dashboard's session, arm faults or open a terminal into another
sandbox in a logged-in browser. So preview traffic has a listener of its own (the *preview
port*, its own app: ``create_preview_app``), with two forms:

- the **hostname form** ``http://{ulid}-{port}.localhost:{preview port}/…``, as the service's
  ``https://{ulid}-{port}.{region}.{domain}/`` (the id without its ``sb-``): each sandbox and
  port is an origin of its own with the app at ``/``, so root-relative assets and redirects
  work. Browsers and curl resolve every ``*.localhost`` name to loopback (RFC 6761); glibc's
  resolver does not, so Python's and Node's clients cannot open it.
- the **path form** ``http://127.0.0.1:{preview port}/_ingress/{id}/{port}/…``, the
  ``ingress_url_template`` the API gives, which every client resolves. A browser navigating to
  it (``Sec-Fetch-Mode: navigate``) from a loopback address is sent on to the hostname form;
  anything else it serves carries ``Content-Security-Policy: sandbox``, so no document runs
  with the origin all sandboxes share there.

Cookies a sandbox's server sets stay its own: their ``Domain`` is dropped (host-only), and on
the path form their ``Path`` is put under the sandbox's prefix.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from aiohttp import web
from yarl import URL

from fake_server.http.wire.sandboxes import INGRESS_PREFIX

if TYPE_CHECKING:
    from aiohttp.typedefs import Handler


__all__ = [
    "HOST_FORM",
    "PATH_FORM_CSP",
    "PREVIEW_APP_KEY",
    "PreviewHostResource",
    "as_path_form",
    "browser_navigation",
    "hostname_form",
    "preview_hostname",
    "preview_of_host",
    "scoped_cookie",
]

#: The route name of the hostname form on the preview port's app.
HOST_FORM = "ingress:host"
#: Set on the preview port's app: its ``/_ingress/…`` route proxies (on the API's it moves).
PREVIEW_APP_KEY: web.AppKey[bool] = web.AppKey("fake_server.preview_app")
#: What the path form's answers carry: a document shown there runs in an opaque origin (no
#: cookies, no storage, no reads of the origin every sandbox's path form shares).
PATH_FORM_CSP = "sandbox allow-scripts allow-forms allow-popups allow-modals allow-downloads"
_SUFFIX = ".localhost"
_LABEL = re.compile(r"([0-9a-z]{26})-([0-9]{1,5})")
_ID = re.compile(r"sb-([0-9A-Z]{26})")
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
#: ``Sec-Fetch-Dest`` values of a request that shows a document in a frame or a tab.
_DOCUMENTS = frozenset({"document", "iframe", "frame", "embed", "object"})


def preview_hostname(sandbox_id: str, port: int) -> str | None:
    """``{ulid}-{port}.localhost``; ``None`` for an id not of the ``sb-{ULID}`` shape."""
    found = _ID.fullmatch(sandbox_id)
    return f"{found.group(1).lower()}-{port}{_SUFFIX}" if found else None


def preview_of_host(host: str | None) -> tuple[str, str] | None:
    """``(sandbox_id, port)`` a ``Host`` header names in the hostname form, else ``None``."""
    if not host:
        return None
    name = host.strip().lower().rsplit(":", 1)[0].rstrip(".") if "]" not in host else ""
    if not name.endswith(_SUFFIX):
        return None
    found = _LABEL.fullmatch(name.removesuffix(_SUFFIX))
    if found is None:
        return None
    return "sb-" + found.group(1).upper(), found.group(2)


def browser_navigation(request: web.BaseRequest) -> bool:
    """Whether a browser is opening this URL as a page (a tab or a frame): the only requests
    whose answer would run with the URL's origin."""
    headers = request.headers
    if headers.get("Sec-Fetch-Mode", "").lower() == "navigate":
        return True
    return headers.get("Sec-Fetch-Dest", "").lower() in _DOCUMENTS


def hostname_form(url: URL, sandbox_id: str, port: int, target: str) -> str | None:
    """The hostname form of a path-form request a browser made to ``url`` (``target``: path
    and query); ``None`` unless the browser reached the fake on a loopback name, where
    ``*.localhost`` reaches it too."""
    name = preview_hostname(sandbox_id, port)
    if name is None or url.host not in _LOOPBACK:
        return None
    netloc = f"{name}:{url.port}" if url.explicit_port else name
    return f"{url.scheme}://{netloc}{target}"


def scoped_cookie(header: str, prefix: str | None) -> str:
    """A ``Set-Cookie`` value kept to the origin it came from: without ``Domain``, and with
    its ``Path`` under ``prefix`` (the path form's ``/_ingress/{id}/{port}``) when given."""
    parts = header.split(";")
    kept = [parts[0]]
    for attribute in parts[1:]:
        name, _, value = attribute.partition("=")
        name = name.strip().lower()
        if name == "domain":
            continue
        if name == "path" and prefix is not None:
            value = value.strip()
            kept.append(f" Path={prefix}{value if value.startswith('/') else '/'}")
            continue
        kept.append(attribute)
    return ";".join(kept)


class PreviewHostResource(web.DynamicResource):
    """Every path of a request whose ``Host`` is a preview hostname: its match names the
    sandbox and port (``sandbox_id``, ``port``) as the path form's does."""

    def __init__(self, name: str) -> None:
        super().__init__("/{tail:.*}", name=name)

    async def resolve(
        self, request: web.Request
    ) -> tuple[web.UrlMappingMatchInfo | None, set[str]]:
        named = preview_of_host(request.headers.get("Host"))
        if named is None:
            return None, set()
        match, allowed = await super().resolve(request)
        if match is not None:
            match["sandbox_id"], match["port"] = named
        return match, allowed


@web.middleware
async def as_path_form(request: web.Request, handler: Handler) -> web.StreamResponse:
    """A hostname-form request goes on as its path form, ``/_ingress/{id}/{port}/…``: the
    journal, fault rules matching a path and the dashboard see one form of each preview URL."""
    match = request.match_info
    if match.route.name != HOST_FORM:
        return await handler(request)
    url = request.rel_url
    path = f"{INGRESS_PREFIX}/{match['sandbox_id']}/{match['port']}{url.raw_path}"
    moved = URL.build(path=path, query_string=url.raw_query_string, encoded=True)
    return await handler(request.clone(rel_url=moved))
