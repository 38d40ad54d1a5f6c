"""HPACK for the HTTP/2 front: the answers' fields written from dictionaries, never Huffman
coded; the requests' header blocks decoded once each while the client's table stays as it was.

RFC 7541 leaves it to the encoder which representation it uses. ``hpack``'s encoder indexes
every field and searches its dynamic table entry by entry for each one sent, and Huffman
coding in pure Python costs more per answer than the bytes it saves. Here a field the static
table holds (``:status: 200``) is a one-byte reference; a field seen before on the connection
is added to the client's table at its second sighting and is a reference from then on (the
content type, the server, a length or a date that repeats): the encoder follows the client's
table, entry sizes, evictions and size changes (RFC 7541 §4), in a dictionary. Any other field
is a never-indexed literal, its name's part kept per connection. The client's decoder, pure
Python too in httpx, reads a reference for about a third of what a literal costs it.

A client sends the same header block again and again (httpx and Node index every field, so a
repeated request is a few one-byte references into the table): decoding a block depends only on
the block and the decoder's table, so a block that left the table as it was decodes, while the
table stays so, to the fields it decoded to, and is looked up instead of decoded again.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

from hpack import Decoder, Encoder, HeaderTuple
from hpack.hpack import encode_integer
from hpack.table import HeaderTable

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["AnswerEncoder", "RequestDecoder"]


def _reference(index: int) -> bytes:
    """An indexed field (RFC 7541 §6.1)."""
    encoded = encode_integer(index, 7)
    encoded[0] |= 0x80
    return bytes(encoded)


#: Names whose parts are kept per connection (an answer's names come from the fake's code).
_NAMES_KEPT = 64
#: The one-byte lengths (7-bit prefix, not Huffman coded: RFC 7541 §5.1, §5.2).
_SHORT = [bytes((length,)) for length in range(127)]
#: A value that no table holds: what ``hpack`` writes for it ends in its length and itself.
_PROBE = b"\x00"
#: Header blocks kept per connection, with the fields they decode to.
_BLOCKS_KEPT = 64
#: The static table's fields, by field (RFC 7541 Appendix A; an empty value is a value).
_STATIC = {field: index for index, field in enumerate(HeaderTable.STATIC_TABLE, 1)}
#: The first dynamic table index, less one (the newest entry is 62).
_DYNAMIC = len(HeaderTable.STATIC_TABLE)
#: The one-byte references to the tables' first 126 entries.
_REFERENCES = [_reference(index) if index else b"" for index in range(127)]
#: Answer fields never added to the client's table, however often they repeat: credentials
#: (RFC 7541 §7.1.3), and a value unique by design.
_NEVER_INDEXED = frozenset({b"set-cookie", b"www-authenticate", b"x-request-id"})
#: Fields seen once per connection, remembered so that their second sighting adds them.
_SEEN_KEPT = 256


class AnswerEncoder(Encoder):
    """``hpack``'s encoder writing an answer's fields from dictionaries: a field the static
    table holds as a reference, a field seen before on the connection added to the client's
    table (and referenced from then on), any other as a never-indexed literal."""

    def __init__(self) -> None:
        super().__init__()
        self._names: dict[bytes, bytes] = {}  # never-indexed name parts
        self._indexing: dict[bytes, bytes] = {}  # incremental-indexing name parts
        self._seen: set[tuple[bytes, bytes]] = set()
        #: The client's dynamic table as this encoder filled it: each field's insertion
        #: number, and the fields oldest first with their sizes (RFC 7541 §4.1).
        self._entries: dict[tuple[bytes, bytes], int] = {}
        self._order: deque[tuple[tuple[bytes, bytes], int]] = deque()
        self._added = 0
        self._used = 0

    def encode(self, headers: Iterable[Any], huffman: bool = False) -> bytes:
        block: list[bytes] = []
        if self.header_table.resized:  # the client's new table size goes first
            changes = self.table_size_changes
            self._evict(min(changes) if changes else self.header_table.maxsize)
            block.append(self._encode_table_size_change())
            self.header_table.resized = False
        names, entries, seen = self._names, self._entries, self._seen
        for field in headers:
            index = _STATIC.get(field)
            if index is None:
                number = entries.get(field)
                if number is not None:
                    index = _DYNAMIC + self._added - number
            if index is not None:
                block.append(_REFERENCES[index] if index < 127 else _reference(index))
                continue
            name, value = field
            if field in seen:
                block.append(self._indexing_part(name))
                self._insert(field)
            else:
                if name not in _NEVER_INDEXED:
                    if len(seen) >= _SEEN_KEPT:
                        seen.clear()
                    seen.add(field)
                part = names.get(name)
                block.append(part if part is not None else self._name_part(name))
            length = len(value)
            block.append(_SHORT[length] if length < 127 else bytes(encode_integer(length, 7)))
            block.append(value)
        return b"".join(block)

    def _insert(self, field: tuple[bytes, bytes]) -> None:
        """The client adds ``field`` to its table, evicting the oldest entries to make room
        (and emptying it for a field larger than the table: RFC 7541 §4.4)."""
        self._seen.discard(field)
        size = len(field[0]) + len(field[1]) + 32
        room = self.header_table.maxsize
        if size > room:
            self._evict(0)
            return
        self._evict(room - size)
        self._entries[field] = self._added
        self._order.append((field, size))
        self._added += 1
        self._used += size

    def _evict(self, limit: int) -> None:
        while self._used > limit:
            field, size = self._order.popleft()
            del self._entries[field]
            self._used -= size

    def _indexing_part(self, name: bytes) -> bytes:
        """What precedes a value of ``name`` in a literal the client adds to its table."""
        part = self._indexing.get(name)
        if part is None:
            static = HeaderTable.STATIC_TABLE_MAPPING.get(name)
            if static is not None:
                prefix = encode_integer(static[0], 6)
                prefix[0] |= 0x40
                part = bytes(prefix)
            else:
                part = b"\x40" + bytes(encode_integer(len(name), 7)) + name
            if len(self._indexing) < _NAMES_KEPT:
                self._indexing[name] = part
        return part

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
