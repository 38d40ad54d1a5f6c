"""Benchmark 12: the dashboard in Chromium with many sandboxes and a long journal, and how fast
a change shows.

* first paint of the sandboxes page with its rows (the page's own
  ``createos:sandboxes-painted`` performance mark, set in the frame after the rows are drawn,
  read with the Performance timing API) on a fake with 1,000 sandboxes against an empty
  fake, in the same run (goal: at most 3x); the browser's first-contentful-paint for both;
* a state change reaching an open page: from just before an HTTP pause or resume to the
  moment a MutationObserver in the page sees the sandbox's row show the new status
  (``Date.now()`` in the page against ``time.time()`` here: one machine, one clock;
  goal: within 100 ms);
* the journal page with 10,000 journal events: a free-text search (goal: within 100 ms) and a
  ``5xx`` status filter, each from the form's submit to its first row drawn (measured in the
  page), and the memory of the page's renderer process (proportional set size, from
  ``/proc``; goal: under 200 MB) and its JavaScript heap. A dashboard without a search box
  (an older one) reports the filter and memory only.

Both fakes run on the real clock with immediate transitions, as ``createos-fake serve
--transitions immediate`` would. Needs Playwright and Debian's Chromium
(``benchmarks/_browser.py``); too slow for the smoke test, which only imports it.

Run: ``python benchmarks/bench_dashboard.py [--rounds N] [--smoke] [--json PATH]``.
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any

import httpx

from benchmarks._browser import open_browser
from benchmarks._common import Report, finish, interleave, median, parse_args
from fake_server import FakeCreateOS, Fault, TransitionPolicy
from fake_server.clock import RealClock
from fake_server.faults import HttpError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from benchmarks._browser import Browser

__all__ = ["main", "run"]

SHAPE = "s-1vcpu-1gb"
PAINT_RATIO_GOAL = 3.0
LATENCY_GOAL_MS = 100.0
SEARCH_GOAL_MS = 100.0
MEMORY_GOAL_MB = 200.0
MARK = "createos:sandboxes-painted"
_WATCH = """(id) => {
  window.__createosSeen = null;
  window.__createosWant = null;
  new MutationObserver(() => {
    const badge = document.querySelector(`.vrow[data-id="${id}"] .badge`);
    if (window.__createosWant && !window.__createosSeen && badge
        && badge.textContent === window.__createosWant) window.__createosSeen = Date.now();
  }).observe(document.body, { subtree: true, childList: true, characterData: true });
}"""


def _fake(sandboxes: int) -> tuple[FakeCreateOS, list[str]]:
    fake = FakeCreateOS(
        clock=RealClock(), transitions=TransitionPolicy.immediate(), runtime="bashkit"
    ).start()
    ids = []
    with httpx.Client(base_url=fake.url, headers={"X-Api-Key": fake.api_key}) as client:
        for index in range(sandboxes):
            made = client.post("/v1/sandboxes", json={"shape": SHAPE, "name": f"box-{index}"})
            made.raise_for_status()
            ids.append(made.json()["data"]["id"])
    return fake, ids


def _open_page(browser: Browser, fake: FakeCreateOS) -> Any:
    """A logged-in page of ``fake``'s sandboxes, drawn."""
    page = browser.page()
    page.set_viewport_size({"width": 1280, "height": 900})
    # Logged in from Playwright's side, which reaches the fake directly; cookies ignore the
    # port, so the browser sends this one to the fake through its relay too.
    answer = page.context.request.post(
        fake.url + "/_fake/ui/login", data={"key": fake.control_key}, headers={"Origin": fake.url}
    )
    if answer.status != 200:
        raise RuntimeError(f"login answered HTTP {answer.status}")
    page.goto(browser.origin(fake.url) + "/_fake/ui/")
    page.locator("#live.on").wait_for()
    for _ in range(500):
        if page.evaluate(f"performance.getEntriesByName('{MARK}').length"):
            return page
        page.wait_for_timeout(10)
    raise RuntimeError("the sandboxes page never drew its rows")


def _paint(browser: Browser, fake: FakeCreateOS) -> tuple[float, float]:
    """(rows painted, first contentful paint) in ms since navigation, for a fresh page."""
    page = _open_page(browser, fake)
    try:
        rows = page.evaluate(f"performance.getEntriesByName('{MARK}')[0].startTime")
        fcp = page.evaluate(
            "(performance.getEntriesByName('first-contentful-paint')[0] || {startTime: 0})"
            ".startTime"
        )
        return float(rows), float(fcp)
    finally:
        page.context.close()


def _latencies(browser: Browser, fake: FakeCreateOS, sandbox_id: str, count: int) -> list[float]:
    """Milliseconds from an HTTP pause/resume to the row showing the new status."""
    page = _open_page(browser, fake)
    page.evaluate(_WATCH, sandbox_id)
    found = []
    try:
        with httpx.Client(base_url=fake.url, headers={"X-Api-Key": fake.api_key}) as client:
            for index in range(count):
                action, want = ("pause", "paused") if index % 2 == 0 else ("resume", "running")
                page.evaluate(f"window.__createosSeen = null; window.__createosWant = '{want}'")
                started = time.time() * 1000
                client.post(f"/v1/sandboxes/{sandbox_id}/{action}").raise_for_status()
                client.get(f"/v1/sandboxes/{sandbox_id}")  # the transition settles on a read
                for _ in range(1000):
                    seen = page.evaluate("window.__createosSeen")
                    if seen:
                        found.append(float(seen) - started)
                        break
                    page.wait_for_timeout(5)
                else:
                    raise RuntimeError("the page never showed the change")
    finally:
        page.context.close()
    return found


_FIRST_ROW = """([field, value, expected]) => new Promise((resolve, reject) => {
  const form = document.getElementById("journal-filter");
  for (const input of form.querySelectorAll("input[name]")) {
    if (input.type !== "checkbox") input.value = "";
  }
  form.querySelector(`[name=${field}]`).value = value;
  const shown = () => {
    const row = document.querySelector("tr.clickable");
    return row !== null && row.textContent.includes(expected);
  };
  if (shown()) { reject(new Error("already shown")); return; }
  const started = performance.now();
  const observer = new MutationObserver(() => {
    if (shown()) { observer.disconnect(); resolve(performance.now() - started); }
  });
  const watched = { subtree: true, childList: true, characterData: true };
  observer.observe(document.getElementById("page"), watched);
  form.requestSubmit();
})"""


def _journal_fake(events: int) -> tuple[FakeCreateOS, list[str]]:
    """A fake whose journal holds about ``events`` events: calls to 20 sandboxes, each with
    one exec carrying a word found nowhere else, ten ``503`` answers, the rest ``whoami``."""
    fake, ids = _fake(20)
    with httpx.Client(base_url=fake.url, headers={"X-Api-Key": fake.api_key}) as client:
        for index, sandbox_id in enumerate(ids):
            body = {"cmd": "echo", "args": [f"needle-{index}-in-a-body"]}
            client.post(f"/v1/sandboxes/{sandbox_id}/exec", json=body).raise_for_status()
        fake.faults.add(Fault(operation="list_shapes", action=HttpError(503), times=10))
        for _ in range(10):
            client.get("/v1/shapes")
        while len(fake.journal) < events:
            client.get("/v1/whoami").raise_for_status()
    return fake, ids


def _renderer_mb(browser: Browser) -> float:
    """The proportional set size of the largest renderer process (the open page's), in MB."""
    session = browser.browser.new_browser_cdp_session()
    try:
        processes = session.send("SystemInfo.getProcessInfo")["processInfo"]
    finally:
        session.detach()
    sizes = []
    for process in processes:
        if process.get("type") != "renderer":
            continue
        try:
            with open(f"/proc/{process['id']}/smaps_rollup") as handle:
                pss = next(line for line in handle if line.startswith("Pss:"))
        except (OSError, StopIteration):
            continue
        sizes.append(int(pss.split()[1]) / 1024)
    return max(sizes, default=0.0)


def _journal(browser: Browser, fake: FakeCreateOS, ids: list[str], rounds: int) -> dict[str, Any]:
    """In-page times of a search and a status filter, and the page's memory."""
    page = _open_page(browser, fake)
    try:
        page.goto(browser.origin(fake.url) + "/_fake/ui/#/journal")
        page.locator("tr.clickable").first.wait_for()
        searchable = page.locator("#journal-filter input[name=q]").count() == 1
        search, status = [], []
        for index in range(rounds):
            status.append(float(page.evaluate(_FIRST_ROW, ["status", "5xx", "503"])))
            if searchable:
                sandbox_id = ids[index % len(ids)]
                word = f"NEEDLE-{index % len(ids)}-in-a"
                search.append(float(page.evaluate(_FIRST_ROW, ["q", word, sandbox_id])))
            else:  # the next filter must change what the page shows
                page.evaluate(_FIRST_ROW, ["operation", "whoami", "whoami"])
        session = page.context.new_cdp_session(page)
        session.send("Performance.enable")
        metrics = {m["name"]: m["value"] for m in session.send("Performance.getMetrics")["metrics"]}
        return {
            "search": search,
            "status": status,
            "renderer_mb": _renderer_mb(browser),
            "heap_mb": metrics.get("JSHeapUsedSize", 0.0) / 2**20,
            "events": fake.journal.dropped + len(fake.journal),
        }
    finally:
        page.context.close()


def run(rounds: int, sandboxes: int, changes: int, events: int = 10_000) -> Report:
    report = Report("the dashboard: first paint with many sandboxes, a change to a page", rounds)
    empty, _ = _fake(0)
    full, ids = _fake(sandboxes)
    journaled, journal_ids = _journal_fake(events)
    try:
        with open_browser() as browser:
            _paint(browser, empty)  # the browser's own first-use costs outside the figures
            samples = interleave(
                {"empty": lambda: _paint(browser, empty), "full": lambda: _paint(browser, full)},
                rounds,
            )
            latencies = _latencies(browser, full, ids[-1], changes)
            journal = _journal(browser, journaled, journal_ids, max(rounds, 5))
    finally:
        empty.close()
        full.close()
        journaled.close()
    empty_rows = median([rows for rows, _ in samples["empty"]])
    full_rows = median([rows for rows, _ in samples["full"]])
    report.add("rows painted, empty fake", empty_rows, "ms")
    report.add(f"rows painted, {sandboxes} sandboxes", full_rows, "ms")
    report.add("first contentful paint, empty", median([f for _, f in samples["empty"]]), "ms")
    report.add(
        f"first contentful paint, {sandboxes}", median([f for _, f in samples["full"]]), "ms"
    )
    report.add("change to page, median", median(latencies), "ms")
    report.add("change to page, worst", max(latencies), "ms", f"of {len(latencies)}")
    count = journal["events"]
    report.add(f"journal page's status filter, {count} events", median(journal["status"]), "ms")
    report.add("journal page's renderer (PSS)", journal["renderer_mb"], "MB")
    report.add("journal page's JavaScript heap", journal["heap_mb"], "MB")
    ratio = full_rows / empty_rows if empty_rows > 0 else 0.0
    report.goal(
        f"first paint {sandboxes} / empty", ratio, PAINT_RATIO_GOAL, "x", higher_is_better=False
    )
    report.goal(
        "change reaches the page", median(latencies), LATENCY_GOAL_MS, "ms", higher_is_better=False
    )
    if journal["search"]:
        report.goal(
            f"free-text search, {count} events",
            median(journal["search"]),
            SEARCH_GOAL_MS,
            "ms",
            higher_is_better=False,
        )
    report.goal(
        "journal page's memory",
        journal["renderer_mb"],
        MEMORY_GOAL_MB,
        "MB",
        higher_is_better=False,
    )
    return report


def main(argv: Sequence[str] | None = None, *, quiet: bool = False) -> Report:
    args = parse_args(argv, __doc__ or "", default_rounds=7)
    sandboxes = args.scale.pick(full=1000, smoke=20)
    changes = args.scale.pick(full=20, smoke=2)
    events = args.scale.pick(full=10_000, smoke=200)
    return finish(run(args.rounds, sandboxes, changes, events), args, quiet=quiet)


if __name__ == "__main__":
    main(sys.argv[1:])
