"""HPACK for the HTTP/2 front: the answers' fields as literals, never indexed, never Huffman
coded, each field's name part encoded once per connection; the requests' header blocks decoded
once each while the client's table stays as it was.

RFC 7541 leaves it to the encoder which representation it uses. An answer's fields are mostly
values that never repeat (ids, dates, lengths), so indexing them only fills the dynamic table
that ``hpack`` then searches entry by entry for every field sent, and Huffman coding in pure
Python costs more per answer than the bytes it saves. With neither, a field is its name part
(the static table's index of the name where it has one, as ``hpack`` writes it) followed by
the value's length and the value, so the name parts are kept and only the lengths written.

A client sends the same header block again and again (httpx and Node index every field, so a
repeated request is a few one-byte references into the table): decoding a block depends only on
the block and the decoder's table, so a block that left the table as it was decodes, while the
table stays so, to the fields it decoded to, and is looked up instead of decoded again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hpack import Decoder, Encoder, HeaderTuple
from hpack.hpack import encode_integer
from hpack.table import HeaderTable

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["AnswerEncoder", "RequestDecoder"]

#: Names whose parts are kept per connection (an answer's names come from the fake's code).
_NAMES_KEPT = 64
#: The one-byte lengths (7-bit prefix, not Huffman coded: RFC 7541 §5.1, §5.2).
_SHORT = [bytes((length,)) for length in range(127)]
#: A value that no table holds: what ``hpack`` writes for it ends in its length and itself.
_PROBE = b"\x00"
#: Header blocks kept per connection, with the fields they decode to.
_BLOCKS_KEPT = 64


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


class _Table(HeaderTable):
    """``hpack``'s table, counting its changes: an entry added, a new size (evictions follow
    from either)."""

    def __init__(self) -> None:
        super().__init__()
        self.changes = 0

    def add(self, name: bytes, value: bytes) -> None:
        self.changes += 1
        super().add(name, value)

    @property
    def maxsize(self) -> int:
        return self._maxsize

    @maxsize.setter
    def maxsize(self, newmax: int) -> None:
        self.changes += 1
        HeaderTable.maxsize.fset(self, newmax)  # type: ignore[attr-defined]


class RequestDecoder(Decoder):
    """``hpack``'s decoder, remembering the blocks that left its table as it was."""

    def __init__(self, max_header_list_size: int, max_allowed_table_size: int) -> None:
        super().__init__(max_header_list_size)
        self.max_allowed_table_size = max_allowed_table_size
        self.header_table: _Table = _Table()
        self._blocks: dict[bytes, list[HeaderTuple]] = {}
        #: What the kept blocks were decoded under: the table's changes and both bounds.
        self._under = (0, max_header_list_size, max_allowed_table_size)

    def decode(self, data: bytes, raw: bool = False) -> list[HeaderTuple]:
        under = (self.header_table.changes, self.max_header_list_size, self.max_allowed_table_size)
        if under != self._under:
            self._blocks.clear()
            self._under = under
        block = data if type(data) is bytes else bytes(data)
        if raw:
            known = self._blocks.get(block)
            if known is not None:
                return list(known)
        fields = list(super().decode(block, raw))
        if raw and self.header_table.changes == under[0] and len(self._blocks) < _BLOCKS_KEPT:
            self._blocks[block] = fields
            return list(fields)
        return fields
