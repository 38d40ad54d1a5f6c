"""The journal: every request, response, transition and fault in order (``events``), what it
keeps of a message (``recording``), and the same read back as calls to assert on (``calls``)."""

from __future__ import annotations

from fake_server.models.journal.events import Event, Journal

__all__ = ["Event", "Journal"]
