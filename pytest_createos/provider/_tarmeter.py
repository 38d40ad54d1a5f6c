"""Bound an archive download while it streams: the 10 GiB extraction limit.

The limit is documented in docs/provider-execution.md#the-four-transfers.

``validate_archive`` reads the whole archive after the download; without a bound on the
download itself a sandbox could send any number of bytes first (gigabytes after a 3-byte
file). ``ArchiveMeter`` follows the tar headers as the chunks arrive and refuses, before the
next chunk is read, an archive

* whose declared entry sizes add up past the limit (known from each header, before its data);
* that goes on after its end-of-archive block by more than tar's record padding (what a
  ``tar -cf`` never writes, and what ``tarfile`` would silently ignore after the download);
* with an extended header too large to be metadata.

It only tracks where the headers are; ``validate_archive`` still checks every entry.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._archive import MAX_EXTRACT_BYTES, UNSAFE_ARCHIVE
from ._errors import CreateosError

__all__ = ["ArchiveMeter"]

BLOCK = 512
#: tar pads an archive to whole records of 20 blocks; anything past that is not tar's.
RECORD = 20 * BLOCK
#: Extended headers (pax records, GNU long names) are metadata: kept in memory, so bounded.
MAX_EXTENDED = 1024 * 1024
_EXTENDED = {b"x", b"g", b"L", b"K"}
#: Links, devices, directories and FIFOs: their size field is not followed by data (as tarfile).
_NO_DATA = {b"1", b"2", b"3", b"4", b"5", b"6"}


def _size(field: bytes) -> int:
    """A header's size field: octal digits, or GNU base-256 when the high bit is set."""
    if field[0] & 0x80:
        value = int.from_bytes(field[1:], "big")
        return -value if field[0] & 0x40 else value
    digits = field.split(b"\0", 1)[0].strip(b" ")
    return int(digits, 8) if digits else 0


def _pax_size(records: bytes) -> int | None:
    """The ``size`` a pax header sets for the next entry, if any."""
    size = None
    for line in records.split(b"\n"):
        _, _, pair = line.partition(b" ")
        key, sep, value = pair.partition(b"=")
        if sep and key == b"size":
            size = int(value)
    return size


@dataclass(slots=True)
class ArchiveMeter:
    """Feed it each downloaded chunk in order; it raises the spec's archive error early."""

    limit: int = MAX_EXTRACT_BYTES
    received: int = 0
    declared: int = 0
    _pending: bytes = b""
    _skip: int = 0  # data bytes (with padding) of the current entry still to come
    _extended: bytearray | None = None  # the data of an extended header being collected
    _extended_type: bytes = b""
    _next_size: int | None = None  # a pax size override for the next entry
    _end: int | None = None  # offset just after the first end-of-archive block

    def feed(self, chunk: bytes) -> None:
        self.received += len(chunk)
        if self._end is not None:
            self._check_tail()
            return
        data = self._pending + chunk
        view = memoryview(data)
        at = 0
        while at < len(view):
            if self._skip:
                step = min(self._skip, len(view) - at)
                if self._extended is not None:
                    self._extended += view[at : at + step]
                at += step
                self._skip -= step
                if not self._skip and self._extended is not None:
                    self._finish_extended()
                continue
            if len(view) - at < BLOCK:
                break
            header = bytes(view[at : at + BLOCK])
            at += BLOCK
            if not self._header(header):
                self._end = self.received - len(data) + at
                self._pending = b""
                self._check_tail()
                return
        self._pending = bytes(view[at:])

    def _header(self, header: bytes) -> bool:
        """Account for one header block; False at the end of the archive."""
        if header == bytes(BLOCK):
            return False
        try:
            size = _size(header[124:136])
        except ValueError:
            raise CreateosError(UNSAFE_ARCHIVE) from None
        kind = header[156:157]
        if size < 0:
            raise CreateosError(UNSAFE_ARCHIVE)
        if kind in _EXTENDED:
            if size > MAX_EXTENDED:
                raise CreateosError(UNSAFE_ARCHIVE)
            self._extended, self._extended_type = bytearray(), kind
            self._skip = -(-size // BLOCK) * BLOCK
            if not self._skip:
                self._finish_extended()
            return True
        if self._next_size is not None:
            size, self._next_size = self._next_size, None
        self.declared += size
        if self.declared > self.limit:
            raise CreateosError(UNSAFE_ARCHIVE)
        if kind not in _NO_DATA:
            self._skip = -(-size // BLOCK) * BLOCK
        return True

    def _finish_extended(self) -> None:
        data, self._extended = bytes(self._extended or b""), None
        if self._extended_type == b"x":
            try:
                self._next_size = _pax_size(data)
            except ValueError:
                raise CreateosError(UNSAFE_ARCHIVE) from None
            if self._next_size is not None and self._next_size < 0:
                raise CreateosError(UNSAFE_ARCHIVE)

    def _check_tail(self) -> None:
        assert self._end is not None
        if self.received > self._end + 2 * RECORD:
            raise CreateosError(UNSAFE_ARCHIVE)
