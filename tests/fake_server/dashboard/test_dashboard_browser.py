"""The dashboard in Debian's Chromium, driven by Playwright, on both runtimes: log in, see a
sandbox appear live after an SDK call, open its page, watch a process's output arrive, arm a
fault from the form and see it fire on the next SDK call; hostile strings render as text and
no dialog opens. ``CREATEOS_UI_SCREENSHOTS=docs/images`` writes the docs' screenshots.

The browser is slow to start (~1-4 s), so these run in the reliability step; waits use
Playwright's ``expect`` (bounded, and polled from Python: the page's CSP forbids the
``eval`` that ``wait_for_function`` needs).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from createos import Client, RetryOptions
from createos.errors import APIError
from createos.models import CreateSandboxRequest, ManagedProcessCreateRequest

from benchmarks._browser import chromium_missing, open_browser
from fake_server import FakeCreateOS, TransitionPolicy
from fake_server.clock import RealClock
from fake_server.runtime.api import RUNTIMES
from tests._needs import needs

if TYPE_CHECKING:
    from collections.abc import Iterator

    from benchmarks._browser import Browser

HOSTILE = "<img src=x onerror=alert(1)>"
_MISSING = chromium_missing()
pytestmark = [
    pytest.mark.reliability,
    needs(None, "")
    if _MISSING is None
    else needs("playwright", "pip install -e '.[test]'")
    if "playwright" in _MISSING
    else needs("Debian's Chromium", "apt-get install chromium"),
]
SHOTS = os.environ.get("CREATEOS_UI_SCREENSHOTS")


@pytest.fixture(name="browser", scope="module")
def _browser() -> Iterator[Browser]:
    with open_browser() as browser:
        yield browser


@pytest.fixture(name="served", params=RUNTIMES)
def _served(request: pytest.FixtureRequest) -> Iterator[FakeCreateOS]:
    """A fake on the real clock, as ``createos-fake serve`` runs it, per runtime."""
    fake = FakeCreateOS(
        clock=RealClock(), transitions=TransitionPolicy.immediate(), runtime=request.param
    ).start()
    yield fake
    fake.close()
    assert fake.errors == []


@pytest.fixture(name="page")
def _page(browser: Browser, served: FakeCreateOS) -> Iterator[Any]:
    """A logged-in dashboard page that fails the test if any dialog opens."""
    from playwright.sync_api import expect

    page = browser.page()
    page.set_viewport_size({"width": 1280, "height": 900})
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.goto(browser.origin(served.url) + "/_fake/ui/")
    page.fill("#key", "wrong")
    page.click("#login button")
    expect(page.locator("#login-error")).to_have_text("this is not the fake's control key")
    page.fill("#key", served.control_key)
    page.click("#login button")
    expect(page.locator("#live")).to_have_text("live")
    yield page
    page.context.close()
    assert dialogs == []


def _shot(page: Any, name: str) -> None:
    if SHOTS:
        page.screenshot(path=str(Path(SHOTS) / f"dashboard-{name}.png"), full_page=True)


@pytest.fixture(name="sdk")
def _sdk(served: FakeCreateOS) -> Iterator[Client]:
    with Client(served.api_key, base_url=served.url, retry=RetryOptions(max_retries=0)) as client:
        yield client


def test_a_sandbox_appears_live_and_its_process_output_streams_as_text(
    page: Any, sdk: Client
) -> None:
    from playwright.sync_api import expect

    expect(page.locator(".vrow[data-id]")).to_have_count(0)
    box = sdk.create_sandbox(CreateSandboxRequest(shape="s-1vcpu-1gb", name=HOSTILE))
    row = page.locator(f".vrow[data-id='{box.id}']")
    expect(row).to_contain_text(HOSTILE)  # arrived pushed: the page was never reloaded
    expect(row.locator(".badge")).to_have_text("running")
    assert page.locator("img").count() == 0
    box.files.upload(f"/tmp/{HOSTILE}", b"x")
    assert box.shell(f"ls /tmp; echo '{HOSTILE}' >&2").result.exit_code == 0
    _shot(page, "sandboxes")
    row.locator("a").click()
    expect(page.locator("#page h1")).to_contain_text(HOSTILE)
    expect(page.locator("td.mono", has_text=f"/tmp/{HOSTILE}")).to_have_count(1)
    expect(page.locator("section", has_text="Exec history").locator("pre")).to_have_count(2)
    script = f"echo '{HOSTILE}'; sleep 0.3; echo second-line"
    process = box.processes.create(
        ManagedProcessCreateRequest(command="sh", arguments=["-c", script])
    )
    page.locator("button.show-output").click()
    output = page.locator(f".output-panel[data-process='{process.process_id}'] pre.output")
    expect(output).to_contain_text(HOSTILE)
    expect(output).to_contain_text("second-line")
    expect(page.locator(".output-panel h2 span.muted")).to_have_text("exited with 0")
    assert page.locator("img").count() == 0
    _shot(page, "sandbox")
    box.destroy()


def test_a_fault_armed_from_the_form_fires_on_the_next_sdk_call(
    page: Any, sdk: Client, browser: Browser, served: FakeCreateOS
) -> None:
    from playwright.sync_api import expect

    box = sdk.create_sandbox(CreateSandboxRequest(shape="s-1vcpu-1gb"))
    page.click("nav a[data-page=faults]")
    page.fill("#arm-fault input[name=operation]", "get_sandbox")
    page.fill("#arm-fault input[name=status]", "503")
    page.click("#arm-fault button[type=submit]")
    armed = page.locator("tr[data-fault]")
    expect(armed).to_have_count(1)
    expect(armed).to_contain_text("http_error status=503")
    with pytest.raises(APIError) as caught:
        sdk.get_sandbox(box.id)
    assert caught.value.status_code == 503
    expect(page.locator("#fired tbody tr")).to_contain_text(f"GET /v1/sandboxes/{box.id}")
    expect(armed.locator("td").nth(4)).to_have_text("1")  # fired once, pushed to the page
    _shot(page, "faults")
    page.click("nav a[data-page=journal]")
    page.fill("#journal-filter input[name=status]", "503")
    page.click("#journal-filter button[type=submit]")
    reply = page.locator("tr.k-call")
    expect(reply).to_have_count(1)
    expect(reply).to_contain_text("get_sandbox")
    reply.click()
    expect(page.get_by_label("Reply body")).to_contain_text("service_unavailable")
    _shot(page, "journal")
    page.click("nav a[data-page=faults]")
    page.click("#clear-faults")
    page.click("text=yes, clear all armed faults")
    expect(page.locator("#armed")).to_have_text("none armed")
    expect(page.locator("#used-up")).to_have_text("none")
    assert served.faults.faults == []
    box.destroy()


def test_resources_show_networks_and_template_build_logs_as_text(
    page: Any, sdk: Client, served: FakeCreateOS
) -> None:
    from createos.models import NetworkCreateRequest, TemplateCreateRequest
    from playwright.sync_api import expect

    sdk.networks.create(NetworkCreateRequest(name="dev-net"))
    dockerfile = f"FROM devbox:1\nRUN echo '{HOSTILE}' > /tmp/x\n"
    sdk.templates.create(TemplateCreateRequest(name="web", dockerfile=dockerfile))
    page.click("nav a[data-page=resources]")
    expect(page.locator(".page-resources")).to_contain_text("dev-net")
    # The build runs on the real clock (about 2 s); its log lines are pushed as they show.
    log = page.locator(".template pre.output")
    expect(log).to_contain_text(HOSTILE, timeout=15000)
    expect(log).to_contain_text("built template web", timeout=15000)
    expect(page.locator(".template .badge")).to_have_text("ready")
    assert page.locator("img").count() == 0
    _shot(page, "resources")


def test_the_sandboxes_page_marks_its_first_paint_with_rows(
    page: Any, served: FakeCreateOS
) -> None:
    """The mark benchmarks/bench_dashboard.py reads (no timing is asserted here)."""
    import httpx
    from playwright.sync_api import expect

    keys = {"X-Api-Key": served.api_key}
    with httpx.Client(base_url=served.url, headers=keys, timeout=60) as client:
        for index in range(30):
            made = client.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb", "name": f"b{index}"})
            assert made.status_code == 200, made.text
    page.reload()
    expect(page.locator("#page .toolbar span.muted")).to_have_text("30 of 30 sandboxes")
    assert page.locator(".vrow[data-id]").count() < 30  # only the rows in view are drawn
    count = "performance.getEntriesByName('createos:sandboxes-painted').length"
    for _ in range(250):  # the mark follows the frame that drew the rows
        if page.evaluate(count):
            break
        page.wait_for_timeout(20)
    assert page.evaluate(count) == 1
    painted = page.evaluate(
        "performance.getEntriesByName('createos:sandboxes-painted')[0].startTime"
    )
    assert painted > 0


def test_the_terminal_runs_typed_commands_in_the_sandbox_shell(
    page: Any, sdk: Client, served: FakeCreateOS
) -> None:
    from playwright.sync_api import expect

    box = sdk.create_sandbox(CreateSandboxRequest(shape="s-1vcpu-1gb", name="terminal"))
    page.locator(f".vrow[data-id='{box.id}'] a").click()
    expect(page.locator("#page h1")).to_contain_text("terminal")
    page.locator("button.open-terminal").click()
    state = page.locator(".terminal-state")
    expect(state).to_have_text("connected")
    rows = page.locator(".terminal-panel .xterm-rows")
    page.keyboard.type("echo hi-$((6*7))")
    page.keyboard.press("Enter")
    expect(rows).to_contain_text("hi-42")  # the shell's output, not the typed "$((6*7))"
    _shot(page, "terminal")
    page.keyboard.type("exit 3")
    page.keyboard.press("Enter")
    expect(state).to_have_text("exited with 3")
    [shell] = served.sandbox(box.id).processes.values()
    assert (shell.spec.cmd, shell.exit_code) == ("/bin/bash", 3)
    box.destroy()
