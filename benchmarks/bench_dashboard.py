"""Benchmark 12: the dashboard in Chromium with many sandboxes, and how fast a change shows.

* first paint of the sandboxes page with its rows (the page's own
  ``createos:sandboxes-painted`` performance mark, set in the frame after the rows are drawn,
  read with the Performance timing API) on a fake with 1,000 sandboxes against an empty
  fake, in the same run (goal: at most 3x); the browser's first-contentful-paint for both;
* a state change reaching an open page: from just before an HTTP pause or resume to the
  moment a MutationObserver in the page sees the sandbox's row show the new status
  (``Date.now()`` in the page against ``time.time()`` here: one machine, one clock;
  goal: within 100 ms).

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
from fake_server import FakeCreateOS, TransitionPolicy
from fake_server.clock import RealClock

if TYPE_CHECKING:
    from collections.abc import Sequence

    from benchmarks._browser import Browser

__all__ = ["main", "run"]

SHAPE = "s-1vcpu-1gb"
PAINT_RATIO_GOAL = 3.0
LATENCY_GOAL_MS = 100.0
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


def run(rounds: int, sandboxes: int, changes: int) -> Report:
    report = Report("the dashboard: first paint with many sandboxes, a change to a page", rounds)
    empty, _ = _fake(0)
    full, ids = _fake(sandboxes)
    try:
        with open_browser() as browser:
            _paint(browser, empty)  # the browser's own first-use costs outside the figures
            samples = interleave(
                {"empty": lambda: _paint(browser, empty), "full": lambda: _paint(browser, full)},
                rounds,
            )
            latencies = _latencies(browser, full, ids[-1], changes)
    finally:
        empty.close()
        full.close()
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
    ratio = full_rows / empty_rows if empty_rows > 0 else 0.0
    report.goal(
        f"first paint {sandboxes} / empty", ratio, PAINT_RATIO_GOAL, "x", higher_is_better=False
    )
    report.goal(
        "change reaches the page", median(latencies), LATENCY_GOAL_MS, "ms", higher_is_better=False
    )
    return report


def main(argv: Sequence[str] | None = None, *, quiet: bool = False) -> Report:
    args = parse_args(argv, __doc__ or "", default_rounds=7)
    sandboxes = args.scale.pick(full=1000, smoke=20)
    changes = args.scale.pick(full=20, smoke=2)
    return finish(run(args.rounds, sandboxes, changes), args, quiet=quiet)


if __name__ == "__main__":
    main(sys.argv[1:])
