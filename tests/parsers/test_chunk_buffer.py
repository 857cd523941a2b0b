"""The newline offsets the reader hands a chunk give the buffer a chunk finds itself."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from postmortem.io import OverlongLine, iter_lines
from postmortem.parsers.base import LineChunk

# CRLF, invalid UTF-8 and multi-byte text change the bytes the reader keeps: the offsets it
# found must then not be used
_PIECES = st.sampled_from(
    [b"a", b"\n", b"\r\n", b"\r", b"\xff", "é".encode(), b"  x", b"\t", b"\xef\xbb\xbf"]
)


@settings(max_examples=400, deadline=None)
@given(
    pieces=st.lists(_PIECES, max_size=80),
    cuts=st.lists(st.integers(1, 40), max_size=6),
    entries=st.booleans(),
)
def test_reader_offsets_equal_the_chunk_s_own(pieces: list[bytes], cuts: list[int], entries: bool) -> None:
    data = b"".join(pieces)
    blocks, at = [], 0
    for c in cuts:
        blocks.append(data[at : at + c])
        at += c
    blocks.append(data[at:])
    for out in iter_lines(iter(blocks), max_line=64, entries=entries):
        if isinstance(out, OverlongLine):
            continue
        got = out.buffer()
        fresh = LineChunk(out.first_line_no, data=out.data).buffer()
        assert bytes(got[0]) == bytes(fresh[0])
        assert np.array_equal(got[1], fresh[1]) and np.array_equal(got[2], fresh[2])
        assert len(out) == len(fresh[1])
