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
    _offsets_equal_the_chunk_s_own(pieces, cuts, entries)


def _offsets_equal_the_chunk_s_own(pieces: list[bytes], cuts: list[int], entries: bool) -> None:
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


def test_reader_memory_on_a_block_of_blank_lines() -> None:
    # a file of empty lines (a dmesg or log padded with blank lines): the offsets of a block's
    # newlines took 8 bytes per byte read, and a parser that never asks for them (dmesg's)
    # held them for the chunk's life: peak RSS 246 -> 332 MB over 100 MiB of newlines
    import tracemalloc

    block = b"\n" * (4 << 20)
    tracemalloc.start()
    try:
        chunks = 0
        for out in iter_lines(iter([block, block, block])):
            chunks += 1
            assert isinstance(out, LineChunk) and len(out) > 0
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert chunks == 3
    assert peak < 4 * len(block), f"{peak / len(block):.1f}x the block"  # (was 19x)
    # the offsets are still right when a compiled parser asks for them
    out = next(iter(iter_lines(iter([b"\n\n\na\n\n"]))))
    assert isinstance(out, LineChunk)
    assert out.buffer()[1].tolist() == [0, 1, 2, 3, 5]


@settings(max_examples=150, deadline=None)
@given(pieces=st.lists(_PIECES, max_size=80), cuts=st.lists(st.integers(1, 40), max_size=6))
def test_compiled_newlines_give_the_chunk_s_own(pieces: list[bytes], cuts: list[int]) -> None:
    # large blocks find their newlines with the compiled kernel: here every block does
    import postmortem.io as io

    before = io.COMPILED_NEWLINES_BYTES
    io.COMPILED_NEWLINES_BYTES = 0
    try:
        _offsets_equal_the_chunk_s_own(pieces, cuts, False)
    finally:
        io.COMPILED_NEWLINES_BYTES = before
