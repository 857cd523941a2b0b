"""Property tests: the kernel parsers never raise and account for every line, whatever the text
(arbitrary characters, kernel lines in random order, lines cut anywhere)."""

from __future__ import annotations

from typing import Any

from conftest import DATA, check_accounting, count_lines, parse_text
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from postmortem.parsers.base import ParseContext
from postmortem.parsers.kernel import KernelStream

_VOCAB = sorted(
    {
        line
        for d in ("dmesg", "kmsg")
        for p in (DATA / d).iterdir()
        if not p.name.endswith((".jsonl", ".json"))
        for line in p.read_text(encoding="utf-8").split("\n")
    }
)
_PREFIXES = [
    "",
    "[  152.104016] ",
    "<4>",
    "kern  :warn  : [ 1.000000] ",
    "[Wed Dec  2 13:30:19 2026] ",
    "4,1,2,-;",
    " ",
]

_line = st.one_of(
    st.sampled_from(_VOCAB),
    st.builds(
        lambda p, v, cut: (p + v)[:cut],
        st.sampled_from(_PREFIXES),
        st.sampled_from(_VOCAB),
        st.integers(0, 300),
    ),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r"), max_size=80),
)
_SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _run(fmt: str, lines: list[str]) -> None:
    text = "\n".join(lines)
    out, ctx = parse_text(fmt, text)
    check_accounting(ctx, out, count_lines(text.encode()))


@_SETTINGS
@given(st.lists(_line, max_size=40))
def test_dmesg_never_raises_and_counts_every_line(lines: list[str]) -> None:
    _run("dmesg", lines)


@_SETTINGS
@given(st.lists(_line, max_size=40))
def test_kmsg_never_raises_and_counts_every_line(lines: list[str]) -> None:
    _run("kmsg", lines)


@_SETTINGS
@given(st.sampled_from(sorted(p.name for p in (DATA / "dmesg").iterdir() if p.suffix == ".txt")), st.data())
def test_truncated_golden_inputs(name: str, data: Any) -> None:
    lines = (DATA / "dmesg" / name).read_text(encoding="utf-8").rstrip("\n").split("\n")
    start = data.draw(st.integers(0, len(lines) - 1))
    stop = data.draw(st.integers(start + 1, len(lines)))
    part = lines[start:stop]
    part[-1] = part[-1][: data.draw(st.integers(0, len(part[-1])))]  # cut inside the last line too
    _run("dmesg", part)


@_SETTINGS
@given(
    st.lists(
        st.one_of(
            st.sampled_from(_VOCAB),
            st.builds(
                lambda a, b: a + "#012" + b + "\\x0a" + a, st.sampled_from(_VOCAB), st.sampled_from(_VOCAB)
            ),
            st.text(max_size=60),
        ),
        max_size=30,
    ),
    st.one_of(st.none(), st.floats(0, 1e7, allow_nan=False)),
)
def test_kernel_stream_never_raises_nor_counts(messages: list[str], mono: float | None) -> None:
    ctx = ParseContext()
    ks = KernelStream(ctx)
    out: list[Any] = []
    for i, m in enumerate(messages, 1):
        out.extend(ks.feed(i, m, ts=None, ts_raw=None, ts_inferred=None, monotonic_s=mono, host=None))
    out.extend(ks.close())
    assert (ctx.parsed_lines, ctx.ignored_lines) == (0, 0)
    assert sum(type(o).__name__ == "KernelMessage" for o in out) == len(messages)
