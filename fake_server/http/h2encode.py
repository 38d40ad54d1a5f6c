"""HPACK for the answers of the HTTP/2 front: literal fields, never indexed, never Huffman coded,
each field's name part encoded once per connection.

RFC 7541 leaves it to the encoder which representation it uses. An answer's fields are mostly
values that never repeat (ids, dates, lengths), so indexing them only fills the dynamic table
that ``hpack`` then searches entry by entry for every field sent, and Huffman coding in pure
Python costs more per answer than the bytes it saves. With neither, a field is its name part
(the static table's index of the name where it has one, as ``hpack`` writes it) followed by
the value's length and the value, so the name parts are kept and only the lengths written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hpack import Encoder
from hpack.hpack import encode_integer

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["AnswerEncoder"]

#: Names whose parts are kept per connection (an answer's names come from the fake's code).
_NAMES_KEPT = 64
#: The one-byte lengths (7-bit prefix, not Huffman coded: RFC 7541 §5.1, §5.2).
_SHORT = [bytes((length,)) for length in range(127)]
#: A value that no table holds: what ``hpack`` writes for it ends in its length and itself.
_PROBE = b"\x00"


class AnswerEncoder(Encoder):
    """``hpack``'s encoder with every field a never-indexed literal and the name parts kept."""

    def __init__(self) -> None:
        super().__init__()
        self._names: dict[bytes, bytes] = {}

    def encode(self, headers: Iterable[Any], huffman: bool = False) -> bytes:
        block: list[bytes] = []
        if self.header_table.resized:  # the client's new table size goes first
            block.append(self._encode_table_size_change())
            self.header_table.resized = False
        names = self._names
        for name, value in headers:
            part = names.get(name)
            if part is None:
                part = self._name_part(name)
            block.append(part)
            length = len(value)
            block.append(_SHORT[length] if length < 127 else bytes(encode_integer(length, 7)))
            block.append(value)
        return b"".join(block)

    def _name_part(self, name: bytes) -> bytes:
        """What precedes a value of ``name``, as ``hpack`` encodes a never-indexed literal."""
        part = self.add((name, _PROBE), sensitive=True, huffman=False)[: -1 - len(_PROBE)]
        if len(self._names) < _NAMES_KEPT:
            self._names[name] = part
        return part
