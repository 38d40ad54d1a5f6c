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


def test_answers_decode_to_their_fields_repeated_ones_as_references() -> None:
    """A field the static table holds is a reference; one seen before on the connection is
    added to the client's table at its second sighting and referenced from then on; the
    request id (unique by design) and credentials stay never-indexed literals."""
    encoder, decoder = AnswerEncoder(), Decoder()
    sizes = []
    for number in range(4):
        answer = [*ANSWER, (b"x-request-id", b"req-%012d" % number), (b"set-cookie", b"a=b")]
        block = encoder.encode(answer)
        decoded = decoder.decode(block, raw=True)
        assert decoded == answer
        never = {field[0] for field in decoded if isinstance(field, NeverIndexedHeaderTuple)}
        assert {b"x-request-id", b"set-cookie"} <= never
        assert block[0] == 0x88  # ":status: 200", index 8 of the static table
        sizes.append(len(block))
    # Seen once, added, then referenced: a byte for each field but the never-indexed ones
    # (the request ids: their name and value as literals; the cookie: its name's index).
    assert sizes[0] >= sizes[1] > sizes[2] == sizes[3]
    assert sizes[3] == 1 + 6 + 2 * (2 + len(b"x-request-id") + 1 + 16) + (2 + 1 + 3)
    assert len(decoder.header_table.dynamic_entries) == 5  # accept-charset: static


def test_the_client_s_table_is_followed_through_evictions_and_size_changes() -> None:
    """Whatever the answers and the client's table size, every block decodes, with
    ``hpack``'s own decoder, to its fields: the encoder's references follow the client's
    table as its entries are evicted (RFC 7541 §4.4) and its size changes (§4.2, §6.3)."""
    encoder, decoder = AnswerEncoder(), Decoder()
    pool = [(b"x-field-%d" % (n % 7), b"v" * (n * 37 % 300)) for n in range(40)]
    pool.append((b"x-huge", b"h" * 5000))  # larger than the table: it empties it
    for step in range(400):
        if step in (150, 250, 300):
            size = {150: 256, 250: 0, 300: 4096}[step]  # the client's SETTINGS
            encoder.header_table_size = size
            decoder.max_allowed_table_size = size
        answer = [pool[(step * 7 + n * 13) % len(pool)] for n in range(step % 4 + 1)]
        assert decoder.decode(encoder.encode(answer), raw=True) == answer, step
    assert decoder.header_table.maxsize == 4096


def test_a_new_table_size_is_signalled_before_the_next_fields() -> None:
    encoder, decoder = AnswerEncoder(), Decoder()
    for _ in range(3):
        assert decoder.decode(encoder.encode(ANSWER), raw=True) == ANSWER
    encoder.header_table_size = 0  # the client's SETTINGS_HEADER_TABLE_SIZE
    block = encoder.encode(ANSWER)
    assert block[0] == 0x20  # a dynamic table size update to 0 comes first
    decoder.max_allowed_table_size = 0
    assert decoder.decode(block, raw=True) == ANSWER
    assert decoder.header_table.maxsize == 0
    assert encoder.encode(ANSWER[:1]) == b"\x88"  # signalled once


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
