"""Preview URLs on a port of their own (``http.handlers.preview``): the hostname form with the
app at ``/``, the path form every client resolves, browsers sent from one to the other, cookies
kept to their origin, and no API, control or dashboard route on the preview port.

A server registered in bashkit sandboxes (``fake.ports``) stands for the sandbox's app; the
browser itself is in ``tests/security/test_origins.py``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import pytest
import pytest_asyncio

from fake_server import Fault
from fake_server.faults import HttpError
from fake_server.http.handlers.preview import preview_hostname, preview_of_host, scoped_cookie

if TYPE_CHECKING:
    import asyncio

    import httpx

    from fake_server import FakeCreateOS

MakeSandbox = Callable[..., Awaitable[str]]
NAVIGATE = {"Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}
NOT_HERE = (
    "no preview URL here: the preview port serves /_ingress/{sandbox_id}/{port}/… and "
    "http://{id without sb-}-{port}.localhost:{preview port}/…"
)


async def app(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """One reply: the target and Host it was asked for, with cookies set four ways."""
    head = (await reader.readuntil(b"\r\n\r\n")).decode()
    target = head.split(" ", 2)[1]
    host = next(line for line in head.split("\r\n") if line.lower().startswith("host:"))
    body = f"{target} {host}".encode()
    cookies = (
        "a=1; Path=/; Domain=localhost; HttpOnly",
        "b=2; path=/app; domain=127.0.0.1",
        "c=3",
        "d=4; Path=relative; SameSite=Lax",
    )
    writer.write(
        b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n" % len(body)
        + b"".join(b"Set-Cookie: %s\r\n" % c.encode() for c in cookies)
        + b"\r\n"
        + body
    )
    await writer.drain()


@pytest_asyncio.fixture(name="sandbox_id")
async def _sandbox_id(fake: FakeCreateOS, make_sandbox: MakeSandbox) -> str:
    fake.ports.register(8080, app)
    return await make_sandbox(ingress_enabled=True)


def _named(sandbox_id: str, fake: FakeCreateOS, port: int = 8080) -> dict[str, str]:
    """The ``Host`` header of the sandbox's hostname form on the fake's preview port."""
    return {"Host": f"{preview_hostname(sandbox_id, port)}:{fake.preview_port}"}


@pytest.mark.asyncio
async def test_the_template_is_the_path_form_on_the_preview_port(
    fake: FakeCreateOS, client: httpx.AsyncClient, sandbox_id: str
) -> None:
    view = (await client.get(f"/v1/sandboxes/{sandbox_id}")).json()["data"]
    assert fake.preview_port not in (0, fake.port)
    assert fake.preview_origin == f"http://127.0.0.1:{fake.preview_port}"
    assert view["ingress_url_template"] == f"{fake.preview_origin}/_ingress/{sandbox_id}/<port>/"
    served = await client.get(f"{fake.preview_origin}/_ingress/{sandbox_id}/8080/app?x=1")
    assert (served.status_code, served.text) == (
        200,
        f"/app?x=1 Host: 127.0.0.1:{fake.preview_port}",
    )


@pytest.mark.asyncio
async def test_the_hostname_form_serves_the_app_at_the_root_of_its_own_origin(
    fake: FakeCreateOS, client: httpx.AsyncClient, sandbox_id: str
) -> None:
    named = _named(sandbox_id, fake)
    assert named["Host"].startswith(sandbox_id.removeprefix("sb-").lower() + "-8080.localhost:")
    for target in ("/", "/static/app.js?v=2", "/_fake/ui/api/session", "/v1/sandboxes"):
        served = await client.get(fake.preview_origin + target, headers=named)
        assert (served.status_code, served.text) == (200, f"{target} Host: {named['Host']}")
        assert "Content-Security-Policy" not in served.headers
    # The journal (and the dashboard, and fault rules on a path) sees the path form.
    paths = [e.path for e in fake.journal.events if e.kind == "request" and e.sandbox_id]
    assert paths[-4:] == [
        f"/_ingress/{sandbox_id}/8080/",
        f"/_ingress/{sandbox_id}/8080/static/app.js",
        f"/_ingress/{sandbox_id}/8080/_fake/ui/api/session",
        f"/_ingress/{sandbox_id}/8080/v1/sandboxes",
    ]


@pytest.mark.asyncio
async def test_a_fault_on_ingress_for_the_sandbox_fires_on_the_hostname_form(
    fake: FakeCreateOS, client: httpx.AsyncClient, sandbox_id: str
) -> None:
    fake.faults.add(Fault(operation="ingress", sandbox_id=sandbox_id, action=HttpError(503)))
    refused = await client.get(fake.preview_origin + "/", headers=_named(sandbox_id, fake))
    assert refused.status_code == 503


@pytest.mark.asyncio
async def test_cookies_stay_with_the_origin_that_set_them(
    fake: FakeCreateOS, client: httpx.AsyncClient, sandbox_id: str
) -> None:
    named = await client.get(fake.preview_origin + "/", headers=_named(sandbox_id, fake))
    assert named.headers.get_list("Set-Cookie") == [
        "a=1; Path=/; HttpOnly",
        "b=2; path=/app",
        "c=3",
        "d=4; Path=relative; SameSite=Lax",
    ]
    path = await client.get(f"{fake.preview_origin}/_ingress/{sandbox_id}/8080/")
    prefix = f"/_ingress/{sandbox_id}/8080"
    assert path.headers.get_list("Set-Cookie") == [
        f"a=1; Path={prefix}/; HttpOnly",
        f"b=2; Path={prefix}/app",
        "c=3",  # no Path: the browser's default is this page's folder, under the prefix
        f"d=4; Path={prefix}/; SameSite=Lax",
    ]
    assert path.headers["Content-Security-Policy"] == (
        "sandbox allow-scripts allow-forms allow-popups allow-modals allow-downloads"
    )


@pytest.mark.asyncio
async def test_a_browser_opening_the_path_form_is_sent_to_the_hostname_form(
    fake: FakeCreateOS, client: httpx.AsyncClient, sandbox_id: str
) -> None:
    url = f"{fake.preview_origin}/_ingress/{sandbox_id}/8080/page?q=a%20b"
    moved = await client.get(url, headers=NAVIGATE)
    host = preview_hostname(sandbox_id, 8080)
    assert (moved.status_code, moved.headers["Location"]) == (
        307,
        f"http://{host}:{fake.preview_port}/page?q=a%20b",
    )
    frame = await client.get(url, headers={"Sec-Fetch-Dest": "iframe"})
    assert frame.status_code == 307
    # Reached by another name (a LAN address) the browser could not follow to *.localhost:
    # the app is served there, in an opaque origin.
    lan = await client.get(url, headers={**NAVIGATE, "Host": "192.168.1.20:9999"})
    assert (lan.status_code, lan.text) == (200, "/page?q=a%20b Host: 192.168.1.20:9999")
    assert lan.headers["Content-Security-Policy"].startswith("sandbox ")
    # Not a navigation (a script's fetch, curl): served on the path form.
    fetched = await client.get(url, headers={"Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty"})
    assert fetched.status_code == 200
    # No sandbox there: the 404 comes first, never a redirect.
    missing = await client.get(f"{fake.preview_origin}/_ingress/sb-none/8080/", headers=NAVIGATE)
    assert (missing.status_code, missing.json()["data"]["code"]) == (404, "ingress_not_found")


@pytest.mark.asyncio
async def test_the_api_port_moves_preview_urls_to_the_preview_port(
    fake: FakeCreateOS, client: httpx.AsyncClient, sandbox_id: str
) -> None:
    moved = await client.post(f"/_ingress/{sandbox_id}/8080/a/b?c=d", content=b"x")
    assert (moved.status_code, moved.headers["Location"], moved.content) == (
        307,
        f"{fake.preview_origin}/_ingress/{sandbox_id}/8080/a/b?c=d",
        b"",
    )


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "target",
    ["/", "/v1/sandboxes", "/_fake/ui/", "/_fake/ui/api/session", "/_fake/faults", "/healthz"],
)
async def test_the_preview_port_serves_nothing_else(
    fake: FakeCreateOS, client: httpx.AsyncClient, target: str
) -> None:
    control = {"X-Fake-Control-Key": fake.control_key}
    answer = await client.get(fake.preview_origin + target, headers=control)
    assert (answer.status_code, answer.json()) == (
        404,
        {"status": "fail", "data": {"code": "ingress_not_found", "message": NOT_HERE}},
    )
    unknown = {"Host": f"{'0' * 26}-8080.localhost"}
    nobody = await client.get(fake.preview_origin + target, headers=unknown)
    assert (nobody.status_code, nobody.json()["data"]["code"]) == (404, "ingress_not_found")


@pytest.mark.asyncio
async def test_the_dashboard_is_not_served_on_a_preview_hostname(
    fake: FakeCreateOS, client: httpx.AsyncClient, sandbox_id: str
) -> None:
    host = {"Host": f"{preview_hostname(sandbox_id, 8080)}:{fake.port}"}
    for path in ("/_fake/ui/", "/_fake/ui/login"):
        refused = await client.get(path, headers=host)
        assert (refused.status_code, refused.json()) == (
            404,
            {"error": "the dashboard is not served on a preview hostname"},
        )
    assert (await client.get("/_fake/ui/")).status_code == 200


@pytest.mark.parametrize(
    ("host", "named"),
    [
        (
            "01abcdefghjkmnpqrstvwxyz23-8080.localhost:41000",
            ("sb-01ABCDEFGHJKMNPQRSTVWXYZ23", "8080"),
        ),
        ("01ABCDEFGHJKMNPQRSTVWXYZ23-1.LOCALHOST.", ("sb-01ABCDEFGHJKMNPQRSTVWXYZ23", "1")),
        ("01abcdefghjkmnpqrstvwxyz23-8080.localhost.example", None),
        ("01abcdefghjkmnpqrstvwxyz2-8080.localhost", None),
        ("01abcdefghjkmnpqrstvwxyz23-123456.localhost", None),
        ("x.01abcdefghjkmnpqrstvwxyz23-8080.localhost", None),
        ("localhost:8080", None),
        ("[::1]:8080", None),
        ("", None),
        (None, None),
    ],
)
def test_preview_hostnames_name_a_sandbox_and_port(
    host: str | None, named: tuple[str, str] | None
) -> None:
    assert preview_of_host(host) == named


def test_only_sandbox_ids_have_a_hostname() -> None:
    assert preview_hostname("sb-01ABCDEFGHJKMNPQRSTVWXYZ23", 3000) == (
        "01abcdefghjkmnpqrstvwxyz23-3000.localhost"
    )
    assert preview_hostname("not-a-sandbox-id", 3000) is None


def test_a_cookie_keeps_its_other_attributes() -> None:
    header = "s=v=w; Secure; Domain=.example.com; Max-Age=60; Path=/x"
    assert scoped_cookie(header, None) == "s=v=w; Secure; Max-Age=60; Path=/x"
    assert scoped_cookie(header, "/_ingress/sb-1/80") == (
        "s=v=w; Secure; Max-Age=60; Path=/_ingress/sb-1/80/x"
    )
