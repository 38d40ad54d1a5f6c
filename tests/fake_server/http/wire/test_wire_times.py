"""The wire's timestamps: UTC to the millisecond with a ``Z``, each moment formatted once."""

from __future__ import annotations

from fake_server.http.wire.common import iso


def test_each_moment_is_formatted_to_the_millisecond_however_often_it_is_asked() -> None:
    moments = {
        0.0: "1970-01-01T00:00:00.000Z",
        1767225600.1234: "2026-01-01T00:00:00.123Z",
        1767225601.5: "2026-01-01T00:00:01.500Z",
        1767225601.0: "2026-01-01T00:00:01.000Z",
    }
    for _ in range(2):  # the second round answers from the formatted moments
        assert {moment: iso(moment) for moment in moments} == moments
    assert iso(None) is None
