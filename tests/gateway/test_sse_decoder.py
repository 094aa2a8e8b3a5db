"""The completions client's server-sent-event reader: events split anywhere by the network."""

from __future__ import annotations

import pytest

from chatfmt.backends.sse import SSEDecoder

BODY = (
    b": keep-alive\r\n\r\n"
    b'data: {"a": 1}\r\n\r\n'
    b"event: ignored\nid: 7\ndata: first line\ndata:second line\n\n"
    b"data: caf\xc3\xa9\r\r"
    b"retry: 10\n\n"
    b"data: [DONE]\n\n"
    b"data: no blank line after"
)
EXPECTED = [
    b'{"a": 1}',
    b"first line\nsecond line",
    "café".encode(),
    b"[DONE]",
    b"no blank line after",
]


def read(pieces: list[bytes]) -> list[bytes]:
    decoder = SSEDecoder()
    out: list[bytes] = []
    for piece in pieces:
        out += decoder.feed(piece)
    return out + decoder.close()


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 64, len(BODY)])
def test_events_are_the_same_however_the_body_is_split(size: int) -> None:
    pieces = [BODY[i : i + size] for i in range(0, len(BODY), size)]
    assert read(pieces) == EXPECTED


def test_one_read_may_hold_several_events_and_the_start_of_the_next() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: 1\n\ndata: 2\n\ndata: 3") == [b"1", b"2"]
    assert decoder.feed(b"\n\n") == [b"3"]
    assert decoder.close() == []
