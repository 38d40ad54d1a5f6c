"""Why a provider error happened, in the fake's terms, added to the failing test's report.

The provider's errors are fixed text (no bodies, no URLs: a project ships it), so
``CreateOS request failed (HTTP 400) during sandbox lifecycle.`` alone leaves a test's author
to dig the reason out of the journal. The plugin knows the fake: it adds what the provider may
not say, as notes on the exception (pytest prints them under its message), and only for the
failing test's report:

* the reason the fake gave, from its error envelope (``shape: unknown shape``);
* that the test reset the fake (everything before the reset is gone: hence a 404);
* that the test closed the fake (nothing answers any more: hence the connection failure);
* for any error, that a command's output stayed open after its program exited, held by a
  process it left (``sleep 100 &``): why an exec never answered.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fake_server.models.journal.events import Event
    from pytest_createos._options import Options
    from pytest_createos._session import Run

__all__ = [
    "CLOSED",
    "REASON_LIMIT",
    "RESET",
    "add_notes",
    "body_problems",
    "explain",
    "fake_reason",
]

#: Characters of the fake's reason shown; an envelope's message is short, a user's data is not.
REASON_LIMIT = 200

RESET = (
    "createos: the fake was reset during this test (createos_fake.reset() or POST /_fake/reset): "
    "every sandbox made before it, a lease fixture's too, is gone, and so are its faults and "
    "commands; the plugin already resets the fake before each test"
)

CLOSED = (
    "createos: this test closed the fake (createos_fake.close()), so nothing answers at its URL "
    "any more; the plugin owns the fake's lifecycle and starts a new one for the next test "
    "(createos_fake.reset() starts over within a test; FakeCreateOS() is a fake of your own)"
)


def explain(error: BaseException, run: Run) -> list[str]:
    """The notes for an ``error`` raised during ``run``: what the fake knows of it (a command
    whose output a process it left holds open, for any error: a hung exec times out in the
    SDK or in the provider; for a provider error, its reason, a reset, a close)."""
    from pytest_createos.provider import CreateosApiError, CreateosError

    if not run.fake.serving:
        return [CLOSED] if isinstance(error, CreateosError) else []
    notes = [f"createos: in {e.sandbox_id}: {e.detail}" for e in _held_open(run)]
    if not isinstance(error, CreateosError):
        return notes
    if run.fake.journal.generation != run.generation:
        notes.insert(0, RESET)
    if isinstance(error, CreateosApiError):
        reason = fake_reason(run, error.status)
        if reason is not None:
            notes.append(f"the fake's reason: {reason}")
    return notes


def _held_open(run: Run) -> list[Event]:
    """The fake's notes, during this test, of a command's output held open after its program
    exited (``fake_server.runtime.process.sandbox.heldopen``)."""
    return [e for e in run.fake.journal.filter(kind="process") if "still holds" in e.detail]


def add_notes(error: BaseException, run: Run) -> None:
    """``explain``'s notes added under the error's message; once, should pytest report the
    same exception again."""
    for note in explain(error, run):
        if note not in getattr(error, "__notes__", ()):
            error.add_note(note)


def body_problems(run: Run, options: Options, owned: set[str]) -> tuple[list[str], list[str]]:
    """A failed body's leaks and unfired faults (``_report.problems``); only the close when
    the test closed the fake (its sandboxes died with it, its faults cannot fire)."""
    from pytest_createos._report import problems

    if not run.fake.serving:
        return [CLOSED], []
    return problems(
        run,
        leak_check=run.settings.leak_check or options.leak_check,
        unfired_faults=options.unfired_faults,
        owned=owned,
        internal=False,
    )


def fake_reason(run: Run, status: int) -> str | None:
    """``POST /v1/sandboxes → 400: shape: unknown shape``: the fake's latest answer with
    ``status`` in this test, from its error envelope; None when the journal has no such body,
    or when an armed fault gave that answer (the journal's line for it names the fault)."""
    events = run.fake.journal.events
    for index in range(len(events) - 1, -1, -1):
        event = events[index]
        if event.kind != "response" or event.status != status:
            continue
        text = _envelope_text(event.body)
        if text is None or _faulted(events, index):
            return None
        if len(text) > REASON_LIMIT:
            text = text[:REASON_LIMIT] + "…"
        return f"{event.method} {event.path} → {status}: {text}"
    return None


def _faulted(events: list[Event], response: int) -> bool:
    """Whether a fault fired on the request that ``events[response]`` answers."""
    answer = events[response]
    for event in reversed(events[:response]):
        if (event.method, event.path) != (answer.method, answer.path):
            continue
        if event.kind == "fault":
            return True
        if event.kind == "request":
            return False
    return False


def _envelope_text(body: str | None) -> str | None:
    """The message of a JSend error envelope (``fail``: its ``data`` as ``key: value`` pairs,
    the code first; ``error``: ``code: message``), or None for any other body."""
    try:
        parsed: Any = json.loads(body or "")
    except ValueError:
        return None
    if not isinstance(parsed, dict):
        return None
    data = parsed.get("data")
    if parsed.get("status") == "error":
        code = data.get("code") if isinstance(data, dict) else None
        return _joined({"code": code or parsed.get("code"), "message": parsed.get("message")})
    if parsed.get("status") == "fail" and isinstance(data, dict):
        return _joined(data)
    return None


def _joined(data: dict[str, Any]) -> str | None:
    """``code: message`` for an envelope's code and message, else its ``field: message`` pairs."""
    if set(data) <= {"code", "message"}:
        parts = [str(data[key]) for key in ("code", "message") if data.get(key)]
        return ": ".join(parts) or None
    return "; ".join(f"{key}: {value}" for key, value in data.items()) or None
