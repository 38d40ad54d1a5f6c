"""The HTTP/2 front's HPACK encoder (``h2encode``): what it writes decodes, with ``hpack``'s
own decoder, to the fields it was given, none of them indexed, across answers whose name
parts it keeps, and after the client changes its table size (RFC 7541 §4.2, §6.2.3)."""

from __future__ import annotations

from hpack import Decoder, NeverIndexedHeaderTuple

from fake_server.http.h2encode import AnswerEncoder

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
