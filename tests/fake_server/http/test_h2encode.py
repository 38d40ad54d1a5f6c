"""The HTTP/2 front's HPACK (``h2encode``): what its encoder writes decodes, with ``hpack``'s
own decoder, to the fields it was given, none of them indexed, across answers whose name
parts it keeps, and after the client changes its table size (RFC 7541 §4.2, §6.2.3); its
decoder, which looks a repeated block up instead of decoding it again, decodes every block as
``hpack``'s own does, as the client's table changes under the same bytes."""

from __future__ import annotations

import pytest
from hpack import Decoder, Encoder, InvalidTableIndexError, NeverIndexedHeaderTuple
from hpack.exceptions import InvalidTableSizeError, OversizedHeaderListError

from fake_server.http.h2encode import AnswerEncoder, RequestDecoder

ANSWER = [
    (b":status", b"200"),
    (b"content-type", b"application/json; charset=utf-8"),
    (b"content-length", b"538"),
    (b"date", b"Sat, 05 Dec 2026 00:48:03 GMT"),
    (b"x-request-id", b"req-000000000003"),
    (b"accept-charset", b""),  # a name the static table holds with this very value
    (b"x-long", b"v" * 300),  # a length past the one-byte prefix
    (b"x-empty", b""),
]


def test_answers_decode_to_their_fields_and_are_never_indexed() -> None:
    encoder, decoder = AnswerEncoder(), Decoder()
    for number in range(3):
        answer = [*ANSWER, (b"x-request-id", b"req-%012d" % number)]
        decoded = decoder.decode(encoder.encode(answer), raw=True)
        assert decoded == answer
        assert all(isinstance(field, NeverIndexedHeaderTuple) for field in decoded)
    assert len(decoder.header_table.dynamic_entries) == 0
    assert len(encoder.header_table.dynamic_entries) == 0


def test_a_new_table_size_is_signalled_before_the_next_fields() -> None:
    encoder, decoder = AnswerEncoder(), Decoder()
    assert decoder.decode(encoder.encode(ANSWER), raw=True) == ANSWER
    encoder.header_table_size = 0  # the client's SETTINGS_HEADER_TABLE_SIZE
    block = encoder.encode(ANSWER)
    assert block[0] == 0x20  # a dynamic table size update to 0 comes first
    decoder.max_allowed_table_size = 0
    assert decoder.decode(block, raw=True) == ANSWER
    assert decoder.header_table.maxsize == 0
    assert encoder.encode(ANSWER[:1]) == b"\x18\x03200"  # signalled once


REQUEST = [
    (b":method", b"GET"),
    (b":authority", b"127.0.0.1:8080"),
    (b":scheme", b"http"),
    (b":path", b"/v1/sandboxes/sb-1"),
    (b"x-api-key", b"key-1"),
]


def _decoder() -> RequestDecoder:
    plain = Decoder()
    return RequestDecoder(plain.max_header_list_size, plain.max_allowed_table_size)


def test_a_repeated_block_decodes_as_hpack_decodes_it_while_the_table_changes() -> None:
    """The same bytes mean other fields once the client's table changed: a block that adds
    an entry shifts every dynamic index, so a kept block is not used after it."""
    client, ours, plain = Encoder(), _decoder(), Decoder()
    first = client.encode(REQUEST)  # literals, each added to the table
    again = client.encode(REQUEST)  # references into the table only
    assert len(again) == 5  # one byte per field
    blocks = [first, again, again]
    # Another key: one entry more, so the same references now name shifted entries.
    blocks += [client.encode([*REQUEST[:4], (b"x-api-key", b"key-2")]), again, again]
    for block in blocks:
        decoded, expected = ours.decode(block, raw=True), plain.decode(block, raw=True)
        assert decoded == expected
        assert [type(field) for field in decoded] == [type(field) for field in expected]
    assert ours.decode(again, raw=True) != REQUEST  # the references were shifted
    # A memoryview of a kept block (as a frame's data may be) is the same block.
    assert ours.decode(memoryview(again), raw=True) == plain.decode(again, raw=True)
    assert ours.decode(again) == plain.decode(again)  # text fields: never kept, always decoded


def test_a_kept_block_is_not_used_after_a_table_size_update() -> None:
    client, ours = Encoder(), _decoder()
    ours.decode(client.encode(REQUEST), raw=True)
    again = client.encode(REQUEST)
    assert ours.decode(again, raw=True) == REQUEST
    ours.decode(b"\x20", raw=True)  # the client empties its table (size 0) ...
    with pytest.raises(InvalidTableIndexError):
        ours.decode(again, raw=True)  # ... so its references name nothing


def test_a_kept_block_is_checked_against_bounds_lowered_since() -> None:
    client, ours = Encoder(), _decoder()
    ours.decode(client.encode(REQUEST), raw=True)
    again = client.encode(REQUEST)
    assert ours.decode(again, raw=True) == REQUEST
    ours.max_header_list_size = 100  # our SETTINGS_MAX_HEADER_LIST_SIZE, acknowledged
    with pytest.raises(OversizedHeaderListError):
        ours.decode(again, raw=True)
    ours.max_header_list_size = 65536
    assert ours.decode(again, raw=True) == REQUEST
    ours.max_allowed_table_size = 0  # our SETTINGS_HEADER_TABLE_SIZE, acknowledged
    with pytest.raises(InvalidTableSizeError):
        ours.decode(again, raw=True)  # the client did not shrink its table
