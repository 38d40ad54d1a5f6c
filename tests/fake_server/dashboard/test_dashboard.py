"""The dashboard's HTTP side (``/_fake/ui/``): the login and its cookie, CSRF and origin
checks, security headers, that watching changes nothing, the journal's paging, the live
streams and downloads. The pages themselves are driven in Chromium by
tests/fake_server/dashboard/test_dashboard_browser.py."""

from __future__ import annotations

import asyncio
import json
import re
from typing import TYPE_CHECKING, Any

import httpx
import pytest
import pytest_asyncio

from fake_server import tls_context
from fake_server.dashboard.security import SECURITY_HEADERS

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable

    from fake_server import FakeCreateOS


UI = "/_fake/ui/"
HOSTILE = "<img src=x onerror=alert(1)>"


@pytest_asyncio.fixture(name="ui")
async def _ui(fake: FakeCreateOS) -> AsyncIterator[httpx.AsyncClient]:
    """A browser-like client: logged in, cookie kept, CSRF token in its headers."""
    async with httpx.AsyncClient(base_url=fake.url, timeout=10, verify=tls_context()) as ui:
        answer = await ui.post(UI + "login", json={"key": fake.control_key})
        assert answer.status_code == 200
        ui.headers["X-CSRF-Token"] = answer.json()["csrf"]
        yield ui


async def _events(
    ui: httpx.AsyncClient,
    path: str,
    until: Callable[[str, Any], bool],
    act: Callable[[], Awaitable[object]],
) -> list[tuple[str, Any]]:
    """Open an event stream, run ``act`` once it is open, collect events until ``until``."""
    seen: list[tuple[str, Any]] = []

    async def read() -> None:
        async with ui.stream("GET", path) as stream:
            assert stream.headers["content-type"] == "text/event-stream"
            name, started = "", False
            async for line in stream.aiter_lines():
                if line.startswith("event: "):
                    name = line.removeprefix("event: ")
                elif line.startswith("data: "):
                    data = json.loads(line.removeprefix("data: "))
                    seen.append((name, data))
                    if not started:
                        started = True
                        await act()
                    if until(name, data):
                        return

    await asyncio.wait_for(read(), 10)
    return seen


@pytest.mark.asyncio
async def test_login_sets_a_strict_httponly_cookie_scoped_to_the_dashboard(
    fake: FakeCreateOS,
) -> None:
    async with httpx.AsyncClient(base_url=fake.url, timeout=10, verify=tls_context()) as browser:
        assert (await browser.get(UI + "api/overview")).json() == {
            "error": "log in with the fake's control key"
        }
        wrong = await browser.post(UI + "login", json={"key": fake.api_key})
        assert (wrong.status_code, wrong.json()) == (
            401,
            {"error": "this is not the fake's control key"},
        )
        assert "set-cookie" not in wrong.headers
        bad = await browser.post(UI + "login", content=b"key=x")
        assert (bad.status_code, bad.json()) == (
            400,
            {"error": 'send {"key": "<the control key>"}'},
        )
        good = await browser.post(UI + "login", json={"key": fake.control_key})
        cookie = good.headers["set-cookie"]
        assert cookie.startswith("createos_ui=")
        for part in ("HttpOnly", "Path=/_fake/ui/", "SameSite=Strict"):
            assert part in cookie
        assert fake.control_key not in cookie
        assert (await browser.get(UI + "api/overview")).status_code == 200
        await browser.post(UI + "logout", headers={"X-CSRF-Token": good.json()["csrf"]})
        assert (await browser.get(UI + "api/overview")).status_code == 401


@pytest.mark.asyncio
async def test_every_answer_carries_the_security_headers(ui: httpx.AsyncClient) -> None:
    for path in (UI, UI + "static/js/app.js", UI + "api/overview", UI + "nowhere"):
        answer = await ui.get(path)
        for name, value in SECURITY_HEADERS.items():
            if path != UI or name != "Content-Security-Policy":
                assert answer.headers[name] == value, (path, name)
    # The page's policy differs in one place: <style> elements with this response's nonce
    # (its scripts give it to xterm.js's), a new one each time.
    pages = [await ui.get(UI) for _ in range(2)]
    found = [re.search(r"'nonce-([\w-]+)'", p.headers["Content-Security-Policy"]) for p in pages]
    nonces = [match[1] if match else "" for match in found]
    assert "" not in nonces
    assert nonces[0] != nonces[1]
    assert pages[0].headers["Content-Security-Policy"] == SECURITY_HEADERS[
        "Content-Security-Policy"
    ].replace("style-src 'self';", f"style-src 'self' 'nonce-{nonces[0]}';")
    assert f'<meta name="style-nonce" content="{nonces[0]}">' in pages[0].text
    csp = SECURITY_HEADERS["Content-Security-Policy"]
    assert "script-src 'self';" in csp
    assert "style-src 'self';" in csp
    assert "unsafe-inline" not in csp
    assert "unsafe-eval" not in csp
    index = (await ui.get(UI)).text
    assert "<script>" not in index
    assert "<style" not in index
    assert " style=" not in index
    missing = await ui.get(UI + "nowhere")
    assert (missing.status_code, missing.json()) == (404, {"error": "not a page of the dashboard"})
    assert (await ui.get("/_fake/ui", follow_redirects=False)).headers["location"] == UI


@pytest.mark.asyncio
async def test_changes_need_the_csrf_token_and_the_same_origin(
    fake: FakeCreateOS, ui: httpx.AsyncClient
) -> None:
    spec = {"operation": "whoami", "action": {"type": "http_error", "status": 503}}
    arm = UI + "api/control/faults"
    no_token = await ui.post(arm, json=spec, headers={"X-CSRF-Token": ""})
    assert (no_token.status_code, no_token.json()) == (
        403,
        {"error": "refused: missing or wrong CSRF token"},
    )
    elsewhere = await ui.post(arm, json=spec, headers={"Origin": "http://evil.test"})
    assert (elsewhere.status_code, elsewhere.json()) == (
        403,
        {"error": "refused: this change comes from another site"},
    )
    cross = await ui.post(arm, json=spec, headers={"Sec-Fetch-Site": "cross-site"})
    assert cross.status_code == 403
    logged_out = await ui.post(arm, json=spec, headers={"Cookie": ""})
    assert (logged_out.status_code, logged_out.json()) == (
        401,
        {"error": "log in with the fake's control key"},
    )
    login_elsewhere = await ui.post(
        UI + "login", json={"key": fake.control_key}, headers={"Origin": "http://evil.test"}
    )
    assert login_elsewhere.status_code == 403
    assert fake.faults.faults == []
    assert fake.journal.events == []  # refused before anything was journaled
    armed = await ui.post(arm, json=spec, headers={"Origin": fake.url})
    assert armed.status_code == 201
    assert armed.json()["data"]["operation"] == "whoami"
    assert len(fake.faults.faults) == 1
    bad = await ui.post(arm, json={"operation": "whoami", "action": {"type": "x"}})
    assert bad.status_code == 400
    assert bad.json()["data"]["action.type"].startswith("must be one of: ")
    missing = await ui.delete(UI + "api/control/faults/9")
    assert (missing.status_code, missing.json()["data"]["code"]) == (404, "fault_not_found")
    assert (await ui.delete(UI + "api/control/faults")).json()["data"] == {"cleared": 1}
    assert fake.faults.faults == []
    # Each change is journaled as the control-API call it mirrors, never with the key.
    calls = [(e.method, e.path, e.operation, e.status) for e in fake.journal.events]
    assert calls[1::2] == [
        ("POST", "/_fake/faults", "fake_add_faults", 201),
        ("POST", "/_fake/faults", "fake_add_faults", 400),
        ("DELETE", "/_fake/faults/9", "fake_remove_fault", 404),
        ("DELETE", "/_fake/faults", "fake_clear_faults", 200),
    ]
    assert fake.control_key not in repr(fake.journal.events)


@pytest.mark.asyncio
async def test_watching_changes_nothing_the_api_sees(
    fake: FakeCreateOS,
    ui: httpx.AsyncClient,
    client: httpx.AsyncClient,
    make_sandbox: Callable[..., Awaitable[str]],
) -> None:
    sandbox_id = await make_sandbox(name=HOSTILE)
    before = len(fake.journal)
    fake.rate_limit = 1
    for path in ("api/overview", f"api/sandboxes/{sandbox_id}", "api/journal", "api/faults"):
        assert (await ui.get(UI + path)).status_code == 200
    assert len(fake.journal) == before  # no request of the dashboard is journaled
    rows = (await ui.get(UI + "api/overview")).json()["sandboxes"]
    assert [(r["id"], r["name"], r["status"]) for r in rows] == [(sandbox_id, HOSTILE, "running")]
    accounts = (await ui.get(UI + "api/overview")).json()["accounts"]
    assert accounts[0]["api_key"] == "<redacted>"
    assert fake.api_key not in (await ui.get(UI + "api/overview")).text


@pytest.mark.asyncio
async def test_the_journal_pages_and_filters_on_the_server(
    fake: FakeCreateOS, ui: httpx.AsyncClient, client: httpx.AsyncClient
) -> None:
    for _ in range(30):
        await client.get("/v1/whoami")
    await client.get("/v1/sandboxes/sb-nope")
    page = (await ui.get(UI + "api/journal", params={"limit": 10})).json()
    # One row per call (its request and reply), newest first.
    assert (page["total"], page["offset"], len(page["rows"]), page["events"]) == (31, 0, 10, 62)
    assert [r["i"] for r in page["rows"]] == list(range(60, 40, -2))
    assert page["rows"][0]["operation"] == "get_sandbox"
    older = (await ui.get(UI + "api/journal", params={"limit": 4, "offset": 29})).json()
    assert [(r["kind"], r["operation"], r["status"]) for r in older["rows"]] == [
        ("call", "whoami", 200)
    ] * 2
    assert older["rows"][0]["duration"] is not None
    missing = (await ui.get(UI + "api/journal", params={"status": "4xx"})).json()
    assert [(r["operation"], r["status"]) for r in missing["rows"]] == [("get_sandbox", 404)]
    only = await ui.get(UI + "api/journal", params={"operation": "WHO", "kind": "call"})
    assert only.json()["total"] == 30
    bad = await ui.get(UI + "api/journal", params={"status": "teapot"})
    assert (bad.status_code, bad.json()) == (
        400,
        {"error": "status must be a code such as 404 or a class such as 5xx"},
    )
    detail = (await ui.get(UI + "api/journal/0")).json()
    assert ["x-api-key", "<redacted>"] in detail["request"]["headers"]
    assert detail["response"]["status"] == 200
    assert fake.api_key not in json.dumps(detail)
    gone = await ui.get(UI + "api/journal/999")
    assert (gone.status_code, gone.json()) == (
        404,
        {"error": "this event is no longer in the journal"},
    )


@pytest.mark.asyncio
async def test_a_change_is_pushed_to_open_pages(
    fake: FakeCreateOS, ui: httpx.AsyncClient, client: httpx.AsyncClient
) -> None:
    async def create() -> None:
        answer = await client.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb", "name": HOSTILE})
        assert answer.status_code == 200

    def running(name: str, data: Any) -> bool:
        return name == "batch" and any(r["status"] == "running" for r in data["sandboxes"])

    seen = await _events(ui, UI + "api/events", running, create)
    assert seen[0] == ("hello", {})
    rows = [row for name, data in seen if name == "batch" for row in data["sandboxes"]]
    assert {row["name"] for row in rows} == {HOSTILE}
    operations = [e["operation"] for _, data in seen[1:] for e in data["journal"]]
    assert "create_sandbox" in operations


@pytest.mark.asyncio
async def test_a_process_output_streams_live_then_its_exit(
    ui: httpx.AsyncClient,
    client: httpx.AsyncClient,
    make_sandbox: Callable[..., Awaitable[str]],
) -> None:
    sandbox_id = await make_sandbox()
    started = await client.post(
        f"/v1/sandboxes/{sandbox_id}/processes",
        json={"cmd": "sh", "args": ["-c", f"echo '{HOSTILE}'; sleep 5; echo done >&2"]},
    )
    process_id = started.json()["data"]["process_id"]

    async def nothing() -> None:
        pass

    path = f"{UI}api/sandboxes/{sandbox_id}/processes/{process_id}/output"
    seen = await _events(ui, path, lambda name, _: name == "exit", nothing)
    assert [(data["stream"], data["text"]) for name, data in seen if name == "output"] == [
        ("stdout", f"{HOSTILE}\n"),
        ("stderr", "done\n"),
    ]
    assert seen[-1] == ("exit", {"exit_code": 0, "signal": None})
    unknown = await ui.get(f"{UI}api/sandboxes/{sandbox_id}/processes/proc-x/output")
    assert (unknown.status_code, unknown.json()) == (404, {"error": "no process has this id"})


@pytest.mark.asyncio
async def test_files_named_by_requests_download_without_counting_bandwidth(
    fake: FakeCreateOS,
    ui: httpx.AsyncClient,
    client: httpx.AsyncClient,
    make_sandbox: Callable[..., Awaitable[str]],
) -> None:
    sandbox_id = await make_sandbox()
    path = f"/tmp/{HOSTILE}.txt"
    upload = await client.put(
        f"/v1/sandboxes/{sandbox_id}/files", params={"path": path}, content=b"payload"
    )
    assert upload.status_code == 200, upload.text
    detail = (await ui.get(f"{UI}api/sandboxes/{sandbox_id}")).json()
    assert detail["files"] == [{"path": path, "last": "upload_file", "exists": True}]
    used = fake.sandbox(sandbox_id).bandwidth.used_bytes
    got = await ui.get(f"{UI}api/sandboxes/{sandbox_id}/file", params={"path": path})
    assert got.content == b"payload"
    assert got.headers["content-type"] == "application/octet-stream"
    assert (
        got.headers["content-disposition"]
        == 'attachment; filename="_img_src_x_onerror_alert_1__.txt"'
    )
    assert fake.sandbox(sandbox_id).bandwidth.used_bytes == used
    relative = await ui.get(f"{UI}api/sandboxes/{sandbox_id}/file", params={"path": "etc"})
    assert (relative.status_code, relative.json()) == (
        400,
        {"error": "path must be an absolute path"},
    )
    absent = await ui.get(f"{UI}api/sandboxes/{sandbox_id}/file", params={"path": "/nope"})
    assert (absent.status_code, absent.json()) == (404, {"error": "no file at this path"})


def test_serve_open_says_where_the_dashboard_is_without_a_browser(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import webbrowser

    from fake_server.__main__ import _open_browser

    opened: list[str] = []

    def refuse(url: str) -> bool:
        opened.append(url)
        return False

    monkeypatch.setattr(webbrowser, "open", refuse)
    _open_browser("http://127.0.0.1:8080/_fake/ui/")
    assert opened == ["http://127.0.0.1:8080/_fake/ui/"]
    assert capsys.readouterr().err == (
        "createos-fake: no browser to open; visit http://127.0.0.1:8080/_fake/ui/\n"
    )


@pytest.mark.asyncio
async def test_a_sandbox_page_shows_metrics_without_counting_a_read(
    fake: FakeCreateOS,
    ui: httpx.AsyncClient,
    client: httpx.AsyncClient,
) -> None:
    from fake_server import TransitionPolicy

    fake.transitions = TransitionPolicy.after_reads(2)
    sandbox_id = (await client.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"})).json()["data"][
        "id"
    ]
    for _ in range(3):
        detail = (await ui.get(f"{UI}api/sandboxes/{sandbox_id}")).json()
        assert (detail["status"], detail["metrics"]) == ("creating", None)
    assert fake.sandbox(sandbox_id).status == "creating"  # the page's reads counted for nothing
    await client.get(f"/v1/sandboxes/{sandbox_id}")
    await client.get(f"/v1/sandboxes/{sandbox_id}")
    detail = (await ui.get(f"{UI}api/sandboxes/{sandbox_id}")).json()
    assert detail["status"] == "running"
    assert detail["metrics"]["source"] == "model"
    assert detail["metrics"]["memory"]["limit_bytes"] == 1024 * 1024 * 1024
