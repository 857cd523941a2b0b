"""The reader's entry cut (``iter_lines(entries=True)``): the same lines, line numbers and
overlong-line reports as the plain cut, the same entry groups for journal-short, and a chunk
marked ``entry_end`` is always followed by a line that starts an entry."""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from postmortem.io import OverlongLine, iter_lines
from postmortem.parsers.base import LineChunk
from postmortem.parsers.journal.short import entry_groups

_LINE = st.sampled_from(
    [
        "May 25 20:00:01 h sglang[1]: x",
        "  continued",
        "\tmore",
        "",
        "x" * 40,
        "é∂",
        "a\r",
        "\r",
        "  c\r",
        "-- Boot 1 --",
    ]
)


def _blocks(data: bytes, sizes: list[int]) -> list[bytes]:
    out, pos, i = [], 0, 0
    while pos < len(data):
        step = sizes[i % len(sizes)]
        out.append(data[pos : pos + step])
        pos += step
        i += 1
    return out


def _read(
    blocks: list[bytes], entries: bool, max_line: int
) -> tuple[list[tuple[int, str]], list[tuple[int, int]], list[LineChunk]]:
    lines: list[tuple[int, str]] = []
    overlong: list[tuple[int, int]] = []
    chunks: list[LineChunk] = []
    for item in iter_lines(iter(blocks), 1, max_line, entries=entries):
        if isinstance(item, OverlongLine):
            overlong.append((item.line_no, item.size))
        else:
            lines.extend(item)
            chunks.append(item)
    return lines, overlong, chunks


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(_LINE, min_size=1, max_size=60),
    st.booleans(),
    st.lists(st.integers(min_value=1, max_value=120), min_size=1, max_size=5),
    st.sampled_from([8, 50, 1 << 20]),
)
# complete lines left by an entry cut, then a block without a newline: they are not part of
# a line that grows past max_line
@example(["May 25 20:00:01 h sglang[1]: x", "  c", "  c", "-- Boot 1 --", "x" * 40], False, [17], 50)
# a blank line of a CRLF file (``\r\n``) is blank, not the start of an entry
@example(["May 25 20:00:01 h sglang[1]: x", "\r", "  tail", "x" * 40], True, [36], 1 << 20)
def test_the_entry_cut_reads_what_the_plain_cut_reads(
    lines: list[str], final_newline: bool, sizes: list[int], max_line: int
) -> None:
    data = ("\n".join(lines) + ("\n" if final_newline else "")).encode()
    blocks = _blocks(data, sizes)
    plain_lines, plain_long, plain_chunks = _read(blocks, False, max_line)
    cut_lines, cut_long, cut_chunks = _read(blocks, True, max_line)
    assert cut_lines == plain_lines
    assert cut_long == plain_long
    for chunk, after in itertools.pairwise(cut_chunks):
        if chunk.entry_end:
            nxt = after.lines[0]
            assert after.first_line_no == chunk.first_line_no + len(chunk)
            assert nxt and nxt[0] not in " \t", (chunk.text, nxt)
    cut_groups = list(entry_groups(cut_chunks))
    plain_groups = list(entry_groups(plain_chunks))
    assert [line for g in cut_groups for line in g] == [line for g in plain_groups for line in g]
    # no group starts inside an entry, unless lines were dropped before it (an overlong line)
    for before, group in itertools.pairwise(cut_groups):
        first = group.lines[0]
        if group.first_line_no == before.first_line_no + len(before):
            assert first and first[0] not in " \t", (before.text, group.text)


def test_a_blank_crlf_line_is_no_entry_start() -> None:
    """A CRLF journal's blank line inside an entry (``\\r\\n``) was taken for an entry start:
    the block was cut before it, and the entry's later continuation lines became "continuation
    line before any entry" (found comparing ingests with and without the entry cut)."""
    data = b"May 25 20:00:01 h sglang[1]: x\r\n\r\n  tail\r\nMay 25 20:00:02 h sglang[1]: y\r\n"
    cut = data.index(b"  tail") + 3
    _, _, chunks = _read([data[:cut], data[cut:]], True, 1 << 20)
    groups = [g.text for g in entry_groups(chunks)]
    assert groups == ["May 25 20:00:01 h sglang[1]: x\n\n  tail", "May 25 20:00:02 h sglang[1]: y"]
