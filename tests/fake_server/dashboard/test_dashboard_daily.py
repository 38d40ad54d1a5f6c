"""The dashboard as a daily tool, in Debian's Chromium driven by Playwright: one test per
point a user noticed first (login, journal, terminal, redaction, a restart, redraws, layout),
the actions, the missing pieces (sortable list, fired-at times, used-up faults, copy-as-curl,
pretty JSON), an axe-core pass over every page, and no console error on any page: every
test's page fails at teardown on a console error or an uncaught exception (CSP refusals
included).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from benchmarks._browser import chromium_missing, open_browser
from fake_server import FakeCreateOS, Fault, TransitionPolicy
from fake_server.clock import RealClock
from fake_server.faults import HttpError
from tests._helpers import settled

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from benchmarks._browser import Browser

_MISSING = chromium_missing()
pytestmark = [
    pytest.mark.reliability,
    pytest.mark.skipif(_MISSING is not None, reason=_MISSING or ""),
]
SHAPE = {"shape": "s-1vcpu-1gb"}


@pytest.fixture(name="browser", scope="module")
def _browser() -> Iterator[Browser]:
    with open_browser() as browser:
        yield browser


def _serve(**options: Any) -> FakeCreateOS:
    return FakeCreateOS(
        clock=RealClock(), transitions=TransitionPolicy.immediate(), **options
    ).start()


@pytest.fixture(name="fake")
def _fake() -> Iterator[FakeCreateOS]:
    fake = _serve()
    yield fake
    fake.close()
    assert fake.errors == []


@pytest.fixture(name="client")
def _client(fake: FakeCreateOS) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=fake.url, headers={"X-Api-Key": fake.api_key}, timeout=30) as c:
        yield c


@pytest.fixture(name="open_page")
def _open_page(browser: Browser) -> Iterator[Callable[..., Any]]:
    """Opens pages (1280 px wide unless told) that fail the test on any console error,
    uncaught exception or dialog."""
    pages: list[Any] = []
    problems: list[str] = []

    def open_page(width: int = 1280) -> Any:
        page = browser.page()
        page.set_viewport_size({"width": width, "height": 800})
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda error: problems.append(str(error)))
        page.on("dialog", lambda dialog: (problems.append(dialog.message), dialog.dismiss()))
        pages.append(page)
        return page

    yield open_page
    for page in pages:
        page.context.close()
    assert problems == []


def _login(page: Any, browser: Browser, fake: FakeCreateOS, route: str = "") -> str:
    """Logs ``page`` in; the dashboard's address as the browser reaches it."""
    from playwright.sync_api import expect

    base = browser.origin(fake.url) + "/_fake/ui/"
    page.goto(base + route)
    page.fill("#key", fake.control_key)
    page.click("#login button")
    expect(page.locator("#live")).to_have_text("live")
    return base


def _sandbox(client: httpx.Client, **fields: Any) -> str:
    made = client.post("/v1/sandboxes", json={**SHAPE, **fields})
    assert made.status_code == 200, made.text
    sandbox_id: str = made.json()["data"]["id"]
    return sandbox_id


def test_1_before_login_only_the_login_form_shows_saying_where_the_key_is(
    fake: FakeCreateOS, browser: Browser, open_page: Callable[..., Any]
) -> None:
    from playwright.sync_api import expect

    page = open_page()
    page.goto(browser.origin(fake.url) + "/_fake/ui/")
    expect(page.locator("#login")).to_be_visible()
    expect(page.locator("#key")).to_be_focused()
    expect(page.locator("#login")).to_contain_text("control key:")
    for hidden in ("#nav", "#live", "#logout", "nav a"):
        expect(page.locator(hidden).first).to_be_hidden()
    expect(page.get_by_text("offline")).to_be_hidden()  # read as "server down"


def test_2_the_journal_is_one_row_per_call_newest_first_with_a_side_pane(
    fake: FakeCreateOS, client: httpx.Client, browser: Browser, open_page: Callable[..., Any]
) -> None:
    from playwright.sync_api import expect

    web = _sandbox(client, name="web-1")
    _sandbox(client, name="db")
    for _ in range(40):  # a long journal: the side pane must not open below it
        client.get("/v1/whoami")
    client.post(f"/v1/sandboxes/{web}/exec", json={"cmd": "echo", "args": ["needle-in-a-body"]})
    fake.faults.add(Fault(operation="whoami", action=HttpError(503), times=1))
    client.get("/v1/whoami")
    page = open_page()
    _login(page, browser, fake, "#/journal")
    rows = page.locator("tr[data-i]")
    expect(rows.first).to_contain_text("whoami")
    expect(rows.first).to_contain_text("503")
    # One row per call: no separate request and reply rows; calls' times never go up going
    # down. (A transition row shows when the change happened, and a change settled when the
    # sandbox is next read is recorded after calls that came later than it: its time may.)
    assert page.locator("tr.k-request, tr.k-response").count() == 0
    calls = page.locator("tr[data-i].k-call td.t:first-child").all_inner_texts()
    times = [float(t.strip("+s")) for t in calls]
    assert len(times) == 44  # two creates, 41 whoami, an exec
    assert times == sorted(times, reverse=True)
    # The fault that fired, readable; the row reached and opened from the keyboard.
    expect(rows.first.locator(".c-fault")).to_have_text("fault #1 http_error status=503")
    rows.first.focus()
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    pane = page.locator("#journal-detail")
    expect(pane).to_contain_text("exec → 200")
    box = pane.bounding_box()
    assert box is not None
    assert 0 <= box["y"] < 800  # in view, beside the list
    expect(page.get_by_label("Request body")).to_contain_text('"args": [\n    "needle-in-a-body"')
    # Follow live puts a new call on top; without it a button counts what came.
    client.get("/v1/shapes")
    expect(rows.first).to_contain_text("list_shapes")
    page.uncheck("#follow")
    client.get("/v1/rootfs")
    expect(page.locator("#journal-new")).to_have_text("1 new")
    page.click("#journal-new")
    expect(rows.first).to_contain_text("list_rootfs")
    # Forgiving filters and a search over what was stored.
    page.fill("#journal-sandbox", "web-1")
    page.fill("#journal-operation", "run_command")
    page.click("#journal-filter button[type=submit]")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("exec")
    page.fill("#journal-sandbox", "")
    page.fill("#journal-operation", "")
    page.fill("#journal-q", "NEEDLE-IN")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text(f"/v1/sandboxes/{web}/exec")


def test_2_a_call_copies_as_curl_without_its_key(
    fake: FakeCreateOS, client: httpx.Client, browser: Browser, open_page: Callable[..., Any]
) -> None:
    from playwright.sync_api import expect

    client.post("/v1/sandboxes", json={**SHAPE, "name": "curl-me"})
    page = open_page()
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    _login(page, browser, fake, "#/journal")
    page.locator("tr[data-i]", has_text="create_sandbox").click()
    curl = page.locator("pre.curl")
    expect(curl).to_contain_text('-H "X-Api-Key: $CREATEOS_API_KEY"')
    expect(curl).to_contain_text("""--data-raw '{"shape":"s-1vcpu-1gb","name":"curl-me"}'""")
    page.get_by_label("copy the call as a curl command").click()
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied.startswith(f"curl -X POST '{fake.url}/v1/sandboxes'")
    assert fake.api_key not in copied
    shown = httpx.post(  # the command works as printed, the key from the environment
        fake.url + "/v1/sandboxes",
        headers={"X-Api-Key": fake.api_key, "content-type": "application/json"},
        content='{"shape": "s-1vcpu-1gb", "name": "curl-me-2"}',
    )
    assert shown.status_code == 200


def test_3_the_terminal_keeps_spaces_and_colours_fits_and_lets_tab_out(
    fake: FakeCreateOS, client: httpx.Client, browser: Browser, open_page: Callable[..., Any]
) -> None:
    from playwright.sync_api import expect

    sandbox_id = _sandbox(client)
    page = open_page(width=800)
    _login(page, browser, fake, f"#/sandbox/{sandbox_id}")
    page.click("button.open-terminal")
    expect(page.locator(".terminal-state")).to_have_text("connected")
    page.keyboard.type("printf 'a     b\\n\\033[31mred\\033[0m \\033[1mbold\\033[0m\\n'\n")
    rows = page.locator(".xterm-rows")
    expect(rows).to_contain_text("bold")
    red = rows.locator("span", has_text="red").first
    assert red.evaluate("n => getComputedStyle(n).color") not in ("rgb(255, 255, 255)", "")
    assert "xterm-fg-1" in (red.get_attribute("class") or "")
    assert red.evaluate("n => getComputedStyle(n).color") != rows.evaluate(
        "n => getComputedStyle(n).color"
    )
    bold = rows.locator("span", has_text="bold").first
    assert bold.evaluate("n => getComputedStyle(n).fontWeight") in ("bold", "700")
    line = rows.locator("div", has_text="a     b").first
    a_box = line.evaluate(
        "n => { const r = document.createRange(); const t = n.textContent.indexOf('b');"
        " const walker = document.createTreeWalker(n, NodeFilter.SHOW_TEXT); let node, seen = 0;"
        " while ((node = walker.nextNode())) { if (seen + node.length > t) {"
        " r.setStart(node, t - seen); r.setEnd(node, t - seen + 1); break; } seen += node.length; }"
        " return r.getBoundingClientRect().x - n.getBoundingClientRect().x; }"
    )
    assert a_box > 40  # "b" stands six cells from the left: the spaces kept their width
    screen = page.locator(".terminal-panel .xterm").bounding_box()
    assert screen is not None
    assert screen["x"] + screen["width"] <= 800
    # Escape, then Tab, leaves the terminal.
    page.keyboard.press("Escape")
    page.keyboard.press("Tab")
    assert (
        page.evaluate("document.activeElement.classList.contains('xterm-helper-textarea')") is False
    )


def test_3_a_paused_sandbox_says_why_no_shell_opens(
    fake: FakeCreateOS, client: httpx.Client, browser: Browser, open_page: Callable[..., Any]
) -> None:
    from playwright.sync_api import expect

    sandbox_id = _sandbox(client)
    client.post(f"/v1/sandboxes/{sandbox_id}/pause")
    client.get(f"/v1/sandboxes/{sandbox_id}")
    page = open_page()
    _login(page, browser, fake, f"#/sandbox/{sandbox_id}")
    expect(page.locator(".terminal-state")).to_contain_text("the sandbox is paused")
    expect(page.locator("button.open-terminal")).to_be_disabled()
    expect(page.locator(".terminal")).to_be_hidden()


def test_4_redaction_replaces_whole_credentials_only(
    browser: Browser, open_page: Callable[..., Any]
) -> None:
    from playwright.sync_api import expect

    fake = _serve(api_key="test")
    try:
        with httpx.Client(base_url=fake.url, headers={"X-Api-Key": "test"}) as client:
            _sandbox(client, name="integration-test-box")
        page = open_page()
        _login(page, browser, fake, "#/journal")
        page.locator("tr.clickable", has_text="create_sandbox").first.click()
        detail = page.locator(".detail")
        expect(detail).to_contain_text("x-api-key")
        expect(detail).to_contain_text("integration-test-box")
        expect(detail).not_to_contain_text("<redacted>-box")
        expect(page.get_by_label("Reply body")).to_contain_text('"disk_mib"')
    finally:
        fake.close()


def test_5_after_serve_restarts_the_page_offers_the_login_form(
    browser: Browser, open_page: Callable[..., Any]
) -> None:
    from playwright.sync_api import expect

    fake = _serve()
    port = fake.port
    page = open_page()
    _login(page, browser, fake)
    fake.close()
    again = FakeCreateOS(clock=RealClock(), port=port, control_key=fake.control_key).start()
    try:
        expect(page.locator("#login")).to_be_visible(timeout=15_000)
        expect(page.locator("#login-note")).to_contain_text("log in again")
        expect(page.locator("#nav")).to_be_hidden()
        page.fill("#key", again.control_key)
        page.click("#login button")
        expect(page.locator("#live")).to_have_text("live")
    finally:
        again.close()


def test_6_a_polled_sandbox_keeps_a_selection_and_the_output_pane_its_place(
    fake: FakeCreateOS, client: httpx.Client, browser: Browser, open_page: Callable[..., Any]
) -> None:
    from playwright.sync_api import expect

    sandbox_id = _sandbox(client, name="polled")
    script = "for i in $(seq 1 200); do echo line $i; done; sleep 1; echo late"
    client.post(f"/v1/sandboxes/{sandbox_id}/processes", json={"cmd": "sh", "args": ["-c", script]})
    page = open_page()
    _login(page, browser, fake, f"#/sandbox/{sandbox_id}")
    settings = page.locator("section.card", has_text="Settings").first
    expect(settings).to_contain_text("s-1vcpu-1gb")
    page.locator("button.show-output").first.click()
    output = page.locator("pre.output").first
    expect(output).to_contain_text("line 200")
    output.evaluate("n => { n.scrollTop = 0; }")
    settings.evaluate("n => window.getSelection().selectAllChildren(n)")
    settings.evaluate("n => { n.dataset.marked = 'yes'; }")
    for _ in range(12):  # a client polling the sandbox, as the SDKs' waits do
        client.get(f"/v1/sandboxes/{sandbox_id}")
        page.wait_for_timeout(60)
    expect(output).to_contain_text("late")
    assert settings.get_attribute("data-marked") == "yes"  # the same node: not redrawn
    assert "s-1vcpu-1gb" in page.evaluate("window.getSelection().toString()")
    assert output.evaluate("n => n.scrollTop") == 0


def test_7_pages_fit_800_pixels_and_ids_copy_whole(
    fake: FakeCreateOS, client: httpx.Client, browser: Browser, open_page: Callable[..., Any]
) -> None:
    sandbox_id = _sandbox(client, name="a-sandbox-with-a-rather-long-name-for-its-column")
    client.post("/v1/networks", json={"name": "dev-net"})
    client.post("/v1/disks", json={"name": "data", "size_mib": 1024})
    for index in range(3):
        fake.faults.add(
            Fault(
                operation="get_sandbox",
                action=HttpError(503),
                sandbox_id=sandbox_id,
                name=f"f{index}",
            )
        )
    client.post(f"/v1/sandboxes/{sandbox_id}/exec", json={"cmd": "echo", "args": ["x" * 300]})
    for width in (800, 1280):
        page = open_page(width=width)
        page.context.grant_permissions(["clipboard-read", "clipboard-write"])
        base = _login(page, browser, fake)
        for route in ("", "#/journal", "#/faults", "#/resources", f"#/sandbox/{sandbox_id}"):
            page.goto(base + route)
            page.wait_for_load_state("networkidle")
            page.locator("#page .card").first.wait_for()
            if route == "#/journal":
                page.locator("tr.clickable", has_text="exec").first.click()
                page.locator(".detail pre").first.wait_for()
            wide = page.evaluate("document.scrollingElement.scrollWidth")
            assert wide <= width, (width, route, wide)
            for button in page.locator("#page button:visible").all():
                box = button.bounding_box()
                assert box is not None
                assert box["x"] + box["width"] <= width, (width, route, button.inner_text())
        page.goto(base + "#/resources")
        cards = [c.bounding_box() for c in page.locator(".page-resources .card").all()]
        boxes = [c for c in cards if c is not None]
        for i, one in enumerate(boxes):  # no card drawn over another
            for other in boxes[i + 1 :]:
                apart = (
                    one["x"] + one["width"] <= other["x"] + 1
                    or other["x"] + other["width"] <= one["x"] + 1
                    or one["y"] + one["height"] <= other["y"] + 1
                    or other["y"] + other["height"] <= one["y"] + 1
                )
                assert apart, (width, one, other)
        page.goto(base)
        page.get_by_label(f"copy sandbox id {sandbox_id}").click()
        assert page.evaluate("navigator.clipboard.readText()") == sandbox_id


def test_actions_work_from_the_page_and_show_in_the_journal_as_control_calls(
    fake: FakeCreateOS, client: httpx.Client, browser: Browser, open_page: Callable[..., Any]
) -> None:
    from playwright.sync_api import expect

    sandbox_id = _sandbox(client, name="acted-on")
    fake.faults.add(Fault(operation="list_shapes", action=HttpError(503)))
    page = open_page()
    base = _login(page, browser, fake, f"#/sandbox/{sandbox_id}")
    badge = page.locator("#page h1 .badge")
    page.click("button.action-pause")
    expect(badge).to_have_text("paused")
    page.click("button.action-fork")
    expect(page.locator("#notice")).to_contain_text("Forked into sb-")
    page.click("button.action-resume")
    expect(badge).to_have_text("running")
    page.click("button.action-destroy")
    page.click("text=yes, destroy")
    expect(badge).to_have_text(re.compile("destroy"))
    page.goto(base + "#/faults")
    page.get_by_label("disarm fault 1").click()
    expect(page.locator("#armed")).to_have_text("none armed")
    operations = [e.operation for e in fake.journal.events if e.kind == "response"]
    for operation in (
        "fake_pause_sandbox",
        "fake_fork_sandbox",
        "fake_resume_sandbox",
        "fake_destroy_sandbox",
        "fake_remove_fault",
    ):
        assert operation in operations
    page.goto(base + "#/journal")
    page.fill("#journal-operation", "fake_")
    page.click("#journal-filter button[type=submit]")
    expect(page.locator("tr[data-i]").first).to_contain_text("DELETE /_fake/faults/1")
    page.click("#clear-journal")
    page.click("text=yes, clear the journal")
    page.fill("#journal-operation", "")
    page.click("#journal-filter button[type=submit]")
    expect(page.locator("tr[data-i]")).to_have_count(1)
    expect(page.locator("tr[data-i]")).to_contain_text("DELETE /_fake/journal")
    page.goto(base)
    page.click("#reset-fake")
    page.click("text=yes, reset the fake")
    expect(page.locator("#page")).to_contain_text("0 of 0 sandboxes")
    assert fake.sandboxes() == []
    assert [e.operation for e in fake.journal.events] == ["fake_reset"]


def test_the_list_sorts_faults_show_when_they_fired_and_used_up_ones_apart(
    fake: FakeCreateOS, client: httpx.Client, browser: Browser, open_page: Callable[..., Any]
) -> None:
    from playwright.sync_api import expect

    for name in ("charlie", "alpha", "bravo"):
        _sandbox(client, name=name)
    fake.faults.add(Fault(operation="whoami", action=HttpError(503), times=1))
    fake.faults.add(Fault(operation="list_shapes", action=HttpError(500)))
    client.get("/v1/whoami")
    page = open_page()
    base = _login(page, browser, fake)
    names = page.locator(".vbody .c-name")
    expect(names).to_have_count(3)
    page.get_by_role("button", name="name").click()
    expect(page.locator("[aria-sort=ascending]")).to_have_count(1)

    def shown() -> list[str]:
        rows = page.locator(".vbody .vrow").all()
        rows.sort(key=lambda r: (r.bounding_box() or {"y": 0})["y"])
        return [r.locator(".c-name").inner_text() for r in rows]

    # the header says the order at once; the rows move at the list's next redraw
    assert settled(lambda: shown() == ["alpha", "bravo", "charlie"])
    page.get_by_role("button", name="name").click()
    expect(page.locator("[aria-sort=descending]")).to_have_count(1)
    assert settled(lambda: shown() == ["charlie", "bravo", "alpha"])
    page.goto(base + "#/faults")
    expect(page.locator("#armed tr[data-fault]")).to_have_count(1)
    expect(page.locator("#armed")).to_contain_text("list_shapes")
    expect(page.locator("#used-up")).to_contain_text("whoami")
    expect(page.locator("#fired tbody tr").first.locator("td").first).to_have_text(
        re.compile(r"^\+\d+\.\d{3}s$")
    )


def test_every_page_passes_axe_and_every_control_is_labelled(
    fake: FakeCreateOS, client: httpx.Client, browser: Browser, open_page: Callable[..., Any]
) -> None:
    from axe_playwright_python.sync_playwright import Axe

    sandbox_id = _sandbox(client, name="checked")
    client.post(f"/v1/sandboxes/{sandbox_id}/exec", json={"cmd": "echo", "args": ["hi"]})
    fake.faults.add(Fault(operation="whoami", action=HttpError(503)))
    axe = Axe()
    page = open_page()
    page.goto(browser.origin(fake.url) + "/_fake/ui/")
    page.locator("#login:not([hidden])").wait_for()
    found = {"login": axe.run(page).generate_snapshot()}
    base = _login(page, browser, fake)
    for name, route in (
        ("sandboxes", ""),
        ("journal", "#/journal"),
        ("faults", "#/faults"),
        ("resources", "#/resources"),
        ("sandbox", f"#/sandbox/{sandbox_id}"),
    ):
        page.goto(base + route)
        page.wait_for_load_state("networkidle")
        page.locator("#page .card").first.wait_for()
        if name == "journal":
            page.locator("tr[data-i]").first.click()
            page.locator("#journal-detail pre.curl").wait_for()
        if name == "sandbox":
            page.click("button.open-terminal")
            page.locator(".xterm-rows").wait_for()
        found[name] = axe.run(page).generate_snapshot()
        unlabelled = page.evaluate(
            """() => [...document.querySelectorAll('#page input, #page select, #page button')]
                 .filter((n) => !n.labels?.length && !n.getAttribute('aria-label')
                         && !n.textContent.trim() && !n.classList.contains('xterm-helper-textarea'))
                 .map((n) => n.outerHTML)"""
        )
        assert unlabelled == [], name
    assert found == dict.fromkeys(found, "")


def test_no_console_error_on_any_page(
    fake: FakeCreateOS, client: httpx.Client, browser: Browser, open_page: Callable[..., Any]
) -> None:
    """The fixture fails the test on any console error: every page, a row opened, a shell."""
    sandbox_id = _sandbox(client, name="quiet")
    client.post(f"/v1/sandboxes/{sandbox_id}/exec", json={"cmd": "echo", "args": ["hi"]})
    page = open_page()
    base = _login(page, browser, fake)
    for route in ("#/journal", "#/faults", "#/resources", f"#/sandbox/{sandbox_id}", ""):
        page.goto(base + route)
        page.wait_for_load_state("networkidle")
        page.locator("#page .card").first.wait_for()
    page.goto(base + f"#/sandbox/{sandbox_id}")
    page.click("button.open-terminal")
    page.locator(".xterm-rows").wait_for()
    page.keyboard.type("echo hello\n")
    page.locator(".xterm-rows", has_text="hello").wait_for()
    page.goto(base + "#/journal")
    page.locator("tr[data-i]").first.click()
    page.locator("#journal-detail pre.curl").wait_for()
    page.click("#logout")
    page.locator("#login:not([hidden])").wait_for()
