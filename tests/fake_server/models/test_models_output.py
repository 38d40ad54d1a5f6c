"""The output journal tops up its newest frame with bulk output no reader has taken yet."""

from __future__ import annotations

from fake_server.models.output import FRAME_BYTES, PIECE_BYTES, OutputJournal

PIECE = b"p" * PIECE_BYTES


def sizes(journal: OutputJournal) -> list[int]:
    return [len(f.data) for f in journal.after(0)]


def test_bulk_pieces_join_one_frame_up_to_the_frame_limit() -> None:
    journal = OutputJournal()
    for _ in range(20):
        journal.append("stdout", PIECE, merge=True)
    assert sizes(journal) == [FRAME_BYTES, 4 * PIECE_BYTES]
    assert (journal.newest_seq, journal.bytes) == (2, 20 * PIECE_BYTES)


def test_a_frame_a_reader_took_never_grows() -> None:
    journal = OutputJournal()
    journal.append("stdout", PIECE, merge=True)
    assert journal.growing
    taken = journal.after(0)
    assert not journal.growing
    journal.append("stdout", PIECE, merge=True)
    assert [len(f.data) for f in taken] == [PIECE_BYTES]
    assert sizes(journal) == [PIECE_BYTES, PIECE_BYTES]


def test_lines_streams_and_unmerged_appends_keep_their_own_frames() -> None:
    journal = OutputJournal()
    journal.append("stdout", b"one\n", merge=True)
    journal.append("stdout", b"two\n", merge=True)
    journal.append("stdout", PIECE, merge=True)
    journal.append("stderr", PIECE, merge=True)
    journal.append("stderr", PIECE, merge=False)
    assert [(f.stream, f.data[:4]) for f in journal.after(0)] == [
        ("stdout", b"one\n"),
        ("stdout", b"two\n"),
        ("stdout", b"pppp"),
        ("stderr", b"pppp"),
        ("stderr", b"pppp"),
    ]
