"""Fast substring tests equal the plain ones: ``holds`` (behind ``LineChunk.contains``) and
the journal router's ``any_of`` regular expression."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from postmortem.parsers.base import _ANCHOR_TRIES, LineChunk, holds

HIT = b" hit an exception"
# few letters, so that words and their anchors recur, overlap and straddle each other
_TEXT = st.binary(max_size=300).map(lambda b: bytes(b" hixXqQ\n"[c % 8] for c in b))
_WORDS = (
    st.sampled_from([HIT, b"x", b"xx", b"hix", b"Xq", b"\r", b"i x", b" q\nQ"])
    | st.binary(min_size=1, max_size=4).map(lambda b: bytes(b" hixXqQ\n"[c % 8] for c in b))
    | st.integers(1, 40).map(lambda k: b"h" * k + b"x")  # the anchor far into the word
)


@settings(max_examples=600, deadline=None)
@given(data=_TEXT, word=_WORDS, pad=st.integers(0, 3 * _ANCHOR_TRIES))
@example(data=b"x" * 40 + HIT, word=HIT, pad=0)  # the match past the anchors verified one by one
@example(data=b"xa", word=b" hit an exception", pad=0)  # an anchor before the word could start
# the anchors verified one by one all lie before the word's own anchor could: the plain search
# must start at the beginning, not at a negative offset (from the end)
@example(data=b"h" * 20 + b"x", word=b"h" * 20 + b"x", pad=_ANCHOR_TRIES + 1)
def test_holds_is_in(data: bytes, word: bytes, pad: int) -> None:
    text = b"x" * pad + data  # more anchors than are verified one by one
    assert holds(text, word) == (word in text)
    assert holds(data, word) == (word in data)


@given(
    lines=st.lists(st.sampled_from(["Decode batch, 0x1f", "a hit an exception: x", "", "x\rx"]), max_size=40)
)
def test_chunk_contains_text_and_bytes_agree(lines: list[str]) -> None:
    text = "\n".join(lines)
    as_bytes = LineChunk(1, data=text.encode())
    as_text = LineChunk(1, text=text)
    for word in (" hit an exception", "\r", "0x1f"):
        assert as_bytes.contains(word) == as_text.contains(word) == (word in text)


_META = st.text(alphabet="ab[]().*+?|\\^$ {}\r\n\t=é", max_size=12)


@settings(max_examples=300, deadline=None)
@given(
    words=st.lists(_META.filter(bool), min_size=1, max_size=5),
    messages=st.lists(st.one_of(st.none(), _META), max_size=20),
)
def test_any_of_matches_where_a_word_occurs(words: list[str], messages: list[str | None]) -> None:
    """The journal router's one regular expression for the start markers (RE2, through
    Arrow) finds exactly the messages holding one of the words, metacharacters and all."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from postmortem.parsers.journal.vector import any_of

    got = pc.match_substring_regex(pa.array(messages, pa.string()), any_of(tuple(words))).to_pylist()
    assert got == [None if m is None else any(w in m for w in words) for m in messages]
