"""Origins: nothing a sandbox serves shares an origin with the dashboard or the control API.

The attack seen against ``serve`` on main: a logged-in Chromium opens a sandbox's preview URL;
the page served there (it was the dashboard's origin) read ``/_fake/ui/api/session`` for the
CSRF token, armed a fault, opened the terminal WebSocket into another sandbox, and the server
behind it set the dashboard's cookie. Here the same page runs once (``attack``) and each test
checks one of those outcomes; the last tests open a preview app with root-relative assets and
a redirect, and read the SDKs' preview URL from Python and Node.
"""

from __future__ import annotations

import json
import subprocess
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import httpx
import pytest
from createos import Client, RetryOptions

from benchmarks._browser import chromium_missing, open_browser

if TYPE_CHECKING:
    from collections.abc import Iterator

    from benchmarks._browser import Browser
    from tests.security._attack import Target

_MISSING = chromium_missing()
pytestmark = [
    pytest.mark.reliability,
    pytest.mark.skipif(_MISSING is not None, reason=_MISSING or ""),
]

PORT = 8080
#: The sandbox's server: an app with root-relative assets and a redirect at ``/``, the attack
#: page at ``/attack``, ``/plant`` setting the dashboard's cookie name three ways, and a log of
#: the ``Cookie`` header of every request it gets.
SERVER = r"""
import http.server, json

PAGES = {
    "/": ("text/html", '<!doctype html><link rel="stylesheet" href="/static/app.css">'
          '<h1 id="status">waiting for /static/app.js</h1><a id="next" href="/old">next</a>'
          '<script src="/static/app.js"></script>'),
    "/static/app.js": ("text/javascript",
                       'document.getElementById("status").textContent = "app.js ran at " '
                       '+ location.pathname;'),
    "/static/app.css": ("text/css", "h1 { color: rgb(1, 2, 3); }"),
    "/new": ("text/html", '<h1 id="status">arrived at /new</h1>'),
    "/attack": ("text/html", open("/srv/attack.html").read()),
    "/plant": ("text/plain", "planted"),
}
PLANTED = [
    "createos_ui=planted-by-header; Path=/_fake/ui/",
    "createos_ui=planted-for-127; Path=/_fake/ui/; Domain=127.0.0.1",
    "createos_ui=planted-for-localhost; Path=/_fake/ui/; Domain=localhost",
]

class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with open("/srv/seen.log", "a") as log:
            log.write(json.dumps({"path": self.path, "cookie": self.headers.get("Cookie", "")}))
            log.write("\n")
        path = self.path.split("?")[0]
        if path == "/old":
            self.send_response(302)
            self.send_header("Location", "/new")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        kind, body = PAGES.get(path, ("text/plain", "not found"))
        self.send_response(200 if path in PAGES else 404)
        self.send_header("Content-Type", kind)
        if path == "/plant":
            for cookie in PLANTED:
                self.send_header("Set-Cookie", cookie)
        data = body.encode()
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_POST = do_GET

http.server.ThreadingHTTPServer(("0.0.0.0", 8080), Handler).serve_forever()
"""
#: The attack, as a page of the sandbox's: ``DASHBOARD`` and ``VICTIM`` are filled in.
ATTACK = r"""<!doctype html><title>attack</title><pre id="done"></pre><script>
const DASHBOARD = "%(dashboard)s", VICTIM = "%(victim)s", results = {};
async function call(url, init) {
  try {
    const reply = await fetch(url, {credentials: "include", ...init});
    return {status: reply.status, body: (await reply.text()).slice(0, 2000)};
  } catch (error) { return {error: String(error)}; }
}
function shell(url) {
  return new Promise((resolve) => {
    const seen = {opened: false, output: ""};
    let socket;
    try { socket = new WebSocket(url); } catch (error) { resolve({error: String(error)}); return; }
    socket.binaryType = "arraybuffer";
    socket.onopen = () => {
      seen.opened = true;
      socket.send(new TextEncoder().encode("echo pwned > /tmp/pwned; echo DONE-$((40+2))\r"));
    };
    socket.onmessage = (event) => {
      seen.output += typeof event.data === "string" ? event.data
        : new TextDecoder().decode(event.data);
      if (seen.output.includes("DONE-42")) { socket.close(); resolve(seen); }
    };
    socket.onclose = (event) => { seen.code = event.code; resolve(seen); };
  });
}
(async () => {
  for (const [name, base] of [["absolute", DASHBOARD], ["relative", ""]]) {
    const session = await call(base + "/_fake/ui/api/session");
    let csrf = "";
    try { csrf = JSON.parse(session.body).csrf || ""; } catch (error) {}
    const spec = JSON.stringify({operation: "get_sandbox",
                                 action: {type: "http_error", status: 418}});
    const headers = {"Content-Type": "application/json", "X-CSRF-Token": csrf};
    const arm = await call(base + "/_fake/ui/api/faults", {method: "POST", headers, body: spec});
    await call(base + "/_fake/ui/api/faults", {method: "POST", mode: "no-cors", body: spec});
    const ws = (base || location.origin).replace(/^http/, "ws");
    const terminal = await shell(ws + "/_fake/ui/api/sandboxes/" + VICTIM + "/shell");
    results[name] = {session, csrf, arm, terminal};
  }
  // Last, as it would end the session it tries to steal: the dashboard's cookie, set by the
  // sandbox's server (``plant``, relative to this page) and by this page's script.
  await call("plant");
  document.cookie = "createos_ui=planted-by-script; path=/_fake/ui/";
  document.cookie = "createos_ui=planted-by-script-127; path=/_fake/ui/; domain=127.0.0.1";
  document.getElementById("done").textContent = JSON.stringify(results);
})();
</script>"""


def _wait_listening(serve: Target, sandbox: str) -> None:
    """Bounded: the server in the sandbox accepts connections (polled inside the sandbox)."""
    code, out = serve.sh(
        sandbox,
        f"for i in $(seq 300); do (exec 3<>/dev/tcp/127.0.0.1/{PORT}) 2>/dev/null && exit 0;"
        " sleep 0.05; done; cat /tmp/srv.log; exit 1",
    )
    assert code == 0, out


def _serving_sandbox(serve: Target, attack_page: str = "") -> dict[str, Any]:
    """A sandbox with ingress whose server answers on ``PORT``: its JSON view."""
    reply = serve.api.post(
        "/v1/sandboxes",
        json={"shape": "s-1vcpu-1gb", "rootfs": "devbox:1", "ingress_enabled": True},
        timeout=60,
    )
    assert reply.status_code in (200, 201), reply.text
    view: dict[str, Any] = reply.json()["data"]
    serve.sandboxes.append(view["id"])
    for path, text in (("/srv/app.py", SERVER), ("/srv/attack.html", attack_page)):
        put = serve.api.put(
            f"/v1/sandboxes/{view['id']}/files", params={"path": path}, content=text.encode()
        )
        assert put.status_code in (200, 201), put.text
    code, out = serve.sh(
        view["id"],
        "cd /srv\nnohup setsid python3 app.py >/tmp/srv.log 2>&1 </dev/null &\necho started",
    )
    assert (code, out.strip()) == (0, "started")
    _wait_listening(serve, view["id"])
    return view


def _in_browser(browser: Browser, url: str) -> str:
    """``url`` (an address of the fake) as the browser reaches it."""
    parts = urlsplit(url)
    return browser.origin(f"{parts.scheme}://{parts.netloc}") + parts.path


@pytest.fixture(name="browser", scope="module")
def _browser() -> Iterator[Browser]:
    with open_browser() as browser:
        yield browser


def test_a_preview_app_with_root_relative_assets_and_a_redirect_works_in_the_browser(
    serve: Target, browser: Browser
) -> None:
    from playwright.sync_api import expect

    app = _serving_sandbox(serve)
    preview = app["ingress_url_template"].replace("<port>", str(PORT))
    page = browser.page()
    try:
        page.goto(_in_browser(browser, preview))
        status = page.locator("#status")
        expect(status).to_have_text("app.js ran at /")  # the app is at / of its own origin
        color = page.evaluate("getComputedStyle(document.querySelector('h1')).color")
        assert color == "rgb(1, 2, 3)"
        here = urlsplit(page.url)
        assert here.path == "/"
        assert here.hostname == f"{app['id'].removeprefix('sb-').lower()}-{PORT}.localhost"
        page.click("#next")  # /old answers 302 with Location: /new
        expect(status).to_have_text("arrived at /new")
        assert urlsplit(page.url)._replace(path="/") == here._replace(path="/")
        assert urlsplit(page.url).path == "/new"
    finally:
        page.context.close()


def test_the_sdks_preview_url_answers_from_python_and_node_with_the_system_resolver(
    serve: Target,
) -> None:
    """The template stays reachable by clients that cannot resolve ``*.localhost``."""
    app = _serving_sandbox(serve)
    sdk = Client(serve.serve.key, base_url=serve.origin, retry=RetryOptions(max_retries=0))
    with sdk:
        url = sdk.get_sandbox(app["id"]).preview_url(PORT)
    assert url == app["ingress_url_template"].replace("<port>", str(PORT))
    python = httpx.get(url + "static/app.css", timeout=30)
    assert (python.status_code, python.text) == (200, "h1 { color: rgb(1, 2, 3); }")
    script = "fetch(process.argv[1]).then(async (r) => console.log(r.status, await r.text()))"
    node = subprocess.run(
        ["node", "-e", script, url + "static/app.css"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (node.returncode, node.stdout) == (0, "200 h1 { color: rgb(1, 2, 3); }\n"), node.stderr


@pytest.fixture(name="attack", scope="module")
def _attack(serve: Target, browser: Browser) -> Iterator[dict[str, Any]]:
    """A Chromium logged into the dashboard opens the attack page of a sandbox's preview URL.

    Gives what the page found (``results``), the browser's context and page, the dashboard's
    address as the browser reaches it, its session cookie and both sandboxes' ids.
    """
    from playwright.sync_api import expect

    victim = serve.create()
    dashboard = browser.origin(serve.origin)
    page = browser.page()
    page.goto(dashboard + "/_fake/ui/")
    page.fill("#key", serve.serve.control_key)
    page.click("#login button")
    expect(page.locator("#live")).to_have_text("live")
    cookies = [
        c for c in page.context.cookies(dashboard + "/_fake/ui/") if c["name"] == "createos_ui"
    ]
    assert len(cookies) == 1
    attacker = _serving_sandbox(serve, ATTACK % {"dashboard": dashboard, "victim": victim})
    preview = attacker["ingress_url_template"].replace("<port>", str(PORT))
    page.goto(_in_browser(browser, preview + "attack"))
    done = page.locator("#done")
    expect(done).not_to_be_empty(timeout=30_000)
    yield {
        "results": json.loads(done.text_content() or "{}"),
        "page": page,
        "dashboard": dashboard,
        "session": cookies[0]["value"],
        "attacker": attacker["id"],
        "victim": victim,
    }
    page.context.close()


def test_a_preview_page_cannot_read_the_dashboards_session_or_csrf_token(
    attack: dict[str, Any], serve: Target
) -> None:
    for how in ("absolute", "relative"):
        found = attack["results"][how]
        assert found["csrf"] == "", how
        assert '"csrf"' not in found["session"].get("body", ""), how
    # Nor did the session cookie reach the sandbox's server with any request.
    code, seen = serve.sh(attack["attacker"], "cat /srv/seen.log")
    assert code == 0
    assert attack["session"] not in seen
    assert "/attack" in seen


def test_a_preview_page_cannot_arm_a_fault(attack: dict[str, Any], serve: Target) -> None:
    for how in ("absolute", "relative"):
        assert attack["results"][how]["arm"].get("status") != 201, how
    armed = serve.control.get("/_fake/faults")
    assert armed.status_code == 200
    assert armed.json()["data"]["faults"] == []


def test_a_preview_page_cannot_open_the_terminal_of_another_sandbox(
    attack: dict[str, Any], serve: Target
) -> None:
    for how in ("absolute", "relative"):
        terminal = attack["results"][how]["terminal"]
        assert terminal["opened"] is False, (how, terminal)
    code, out = serve.sh(attack["victim"], "test -e /tmp/pwned && echo pwned || echo clean")
    assert (code, out.strip()) == (0, "clean")


def test_a_preview_page_cannot_set_the_dashboards_cookies(attack: dict[str, Any]) -> None:
    from playwright.sync_api import expect

    page, dashboard = attack["page"], attack["dashboard"]
    for url in (dashboard + "/_fake/ui/", dashboard + "/_fake/ui/api/session"):
        mine = [c for c in page.context.cookies(url) if c["name"] == "createos_ui"]
        assert [c["value"] for c in mine] == [attack["session"]], url
    page.goto(dashboard + "/_fake/ui/")  # still logged in with the same session
    expect(page.locator("#live")).to_have_text("live")
    expect(page.locator("#login")).to_be_hidden()
