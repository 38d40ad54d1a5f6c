"""A managed process's output journal: numbered frames, bounded in bytes, oldest evicted first."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

__all__ = ["FRAME_BYTES", "JOURNAL_BYTES", "OutputFrame", "OutputJournal"]

#: Largest data frame, so one NDJSON line stays well under client frame limits.
FRAME_BYTES = 64 * 1024
#: The pieces bashkit hands output over in when a command writes fast.
PIECE_BYTES = 4096
#: Retained bytes per process, like CreateOS's 1 MiB managed-process journal.
JOURNAL_BYTES = 1024 * 1024


@dataclass(frozen=True, slots=True)
class OutputFrame:
    seq: int
    stream: str
    data: bytes


class OutputJournal:
    """Frames get consecutive ``seq`` from 1; ``oldest_seq - 1`` is the oldest valid cursor."""

    def __init__(self, limit: int = JOURNAL_BYTES) -> None:
        self._frames: deque[OutputFrame] = deque()
        self._limit = limit
        self.newest_seq = 0
        self.bytes = 0
        self._taken = False  # whether a reader got the newest frame (it may not grow then)

    @property
    def oldest_seq(self) -> int:
        """The first retained seq; ``newest_seq + 1`` when nothing is retained."""
        return self._frames[0].seq if self._frames else self.newest_seq + 1

    def append(self, stream: str, data: bytes, *, merge: bool = False) -> list[OutputFrame]:
        """Journal ``data`` in frames of at most ``FRAME_BYTES``.

        With ``merge``, ``data`` first tops up the newest frame when no reader has taken it
        yet and it holds whole ``PIECE_BYTES`` pieces of the same stream (bulk output).
        """
        added = []
        last = self._frames[-1] if self._frames else None
        if (
            merge
            and last is not None
            and not self._taken
            and last.stream == stream
            and len(last.data) % PIECE_BYTES == 0
            and len(last.data) < FRAME_BYTES
        ):
            head, data = data[: FRAME_BYTES - len(last.data)], data[FRAME_BYTES - len(last.data) :]
            self._frames[-1] = OutputFrame(last.seq, stream, last.data + head)
            self.bytes += len(head)
        for start in range(0, len(data), FRAME_BYTES):
            self.newest_seq += 1
            frame = OutputFrame(self.newest_seq, stream, bytes(data[start : start + FRAME_BYTES]))
            self._frames.append(frame)
            self._taken = False
            self.bytes += len(frame.data)
            added.append(frame)
        while self.bytes > self._limit and self._frames:
            self.bytes -= len(self._frames.popleft().data)
        return added

    def evict(self, up_to_seq: int | None = None) -> None:
        """Drop frames with ``seq <= up_to_seq`` (all when None)."""
        while self._frames and (up_to_seq is None or self._frames[0].seq <= up_to_seq):
            self.bytes -= len(self._frames.popleft().data)

    def expired(self, after: int) -> bool:
        """Whether a cursor at ``after`` has lost frames it never read."""
        return after < self.oldest_seq - 1

    def after(self, cursor: int) -> list[OutputFrame]:
        frames = [f for f in self._frames if f.seq > cursor]
        if frames and frames[-1].seq == self.newest_seq:
            self._taken = True
        return frames

    def peek(self, cursor: int) -> list[OutputFrame]:
        """Frames after ``cursor`` for an observer: unlike ``after()``, reading does not stop
        the newest frame from growing, so watching a process changes nothing a client sees."""
        return [f for f in self._frames if f.seq > cursor]

    @property
    def growing(self) -> bool:
        """Whether the newest frame may still be topped up by ``append(merge=True)``."""
        last = self._frames[-1] if self._frames else None
        return (
            last is not None
            and not self._taken
            and len(last.data) % PIECE_BYTES == 0
            and len(last.data) < FRAME_BYTES
        )

    def read(self, stream: str | None = None) -> bytes:
        """Retained bytes, optionally of one stream (for inspection in tests)."""
        return b"".join(f.data for f in self._frames if stream is None or f.stream == stream)
