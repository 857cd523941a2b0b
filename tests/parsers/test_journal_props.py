"""Property tests: the journal parsers never raise and account for every line, on arbitrary
text/bytes and on real or fixture inputs cut anywhere."""

from __future__ import annotations

from pathlib import Path

from conftest import DATA, REAL_SAMPLES, check_accounting, count_lines, parse_text
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

TEXT_PARSERS = ("journal-short", "journal-json", "journal-verbose", "journal-cat")
ALL_PARSERS = (*TEXT_PARSERS, "journal-export")


def _samples() -> list[bytes]:
    files = sorted(p for p in DATA.glob("journal_*/*") if not p.name.endswith((".json", ".jsonl")))
    journal = REAL_SAMPLES / "journal"
    if journal.is_dir():
        files += [journal / f"journal.{m}.txt" for m in ("short-iso", "json", "export", "verbose", "cat")]
    kernel = REAL_SAMPLES / "kernel" / "02_rhel8_4.18_rsyslog_012_global_oom_service.log"
    if kernel.exists():
        files.append(kernel)
    return [Path(f).read_bytes() for f in files if Path(f).exists()]


SAMPLES = _samples()

# pieces journal lines are made of, so random text often looks almost right
_PIECES = [
    "Mar 14 09:00:00 ",
    "Jan  1 00:00:00 ",
    "2025-03-14T09:00:00+0000 ",
    "2025-03-14T09:00:00.120000+00:00 ",
    "1741942800.120000 ",
    "[  152.104016] ",
    "Fri 2025-03-14 09:00:00 UTC ",
    " 5月 29 13:00:00 ",
    "host ",
    "systemd[1]: ",
    "kernel: ",
    "earlyoom[3]: ",
    "systemd-oomd[4]: ",
    "sglang-demo.service: ",
    "Main process exited, code=killed, status=9/KILL",
    "Failed with result 'oom-kill'.",
    "Consumed 1h 2min CPU time, 1.2G memory peak.",
    "Started x.service - X.",
    'sending SIGKILL to process 1 uid 0 "a": badness 1, VmRSS 1 MiB',
    "Killed /system.slice/a.service due to ",
    "-- Boot 0123456789abcdef0123456789abcdef --",
    "-- Reboot --",
    "░░ Subject: x",
    '{"MESSAGE":"x","__REALTIME_TIMESTAMP":"1"}',
    '{"MESSAGE":[255,1]}',
    "\x1e",
    "data: ",
    "{",
    "}",
    "    MESSAGE=x",
    "    _PID=1",
    "Fri 2025-03-14 09:00:00.120000 UTC [s=1;b=2;m=zz;t=yy]",
    "#012",
    "\n",
    "\n",
    "    ",
    "\t",
    "é",
    "\x00",
]
LINES = st.lists(st.one_of(st.sampled_from(_PIECES), st.text(max_size=12)), max_size=40).map("".join)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=LINES, parser=st.sampled_from(TEXT_PARSERS))
def test_text_parsers_never_raise(text: str, parser: str) -> None:
    data = text.encode("utf-8", "surrogatepass")
    outputs, ctx = parse_text(parser, data, year=2025)
    check_accounting(ctx, outputs, count_lines(data))


_EXPORT_PIECES = [
    b"__REALTIME_TIMESTAMP=1741942800120000\n",
    b"_PID=1\n",
    b"SYSLOG_IDENTIFIER=systemd\n",
    b"MESSAGE=a.service: Failed with result 'oom-kill'.\n",
    b"MESSAGE\n\x05\x00\x00\x00\x00\x00\x00\x00ab\ncd\n",
    b"MESSAGE\n\x0a\x00\x00\x00\x00\x00\x00\x00",
    b"MESSAGE\n\xff\xff\xff\xff\xff\xff\xff\xff",
    b"\n",
    b"junk",
    b"=",
]


@settings(max_examples=200, deadline=None)
@given(
    data=st.lists(st.one_of(st.sampled_from(_EXPORT_PIECES), st.binary(max_size=10)), max_size=30).map(
        b"".join
    )
)
def test_export_never_raises(data: bytes) -> None:
    outputs, ctx = parse_text("journal-export", data)
    check_accounting(ctx, outputs, count_lines(data))


@settings(max_examples=200, deadline=None)
@given(data=st.data(), parser=st.sampled_from(ALL_PARSERS))
def test_truncated_samples(data: st.DataObject, parser: str) -> None:
    if not SAMPLES:
        return
    sample = data.draw(st.sampled_from(SAMPLES))
    cut = data.draw(st.integers(min_value=0, max_value=len(sample)))
    piece = sample[:cut]
    outputs, ctx = parse_text(parser, piece, year=2025)
    check_accounting(ctx, outputs, count_lines(piece))


# ----------------------------------------------------------------------------- vector ≡ per-line

_MODES = {
    "iso": "%Y-%m-%dT%H:%M:%S+0000",
    "iso-precise": "%Y-%m-%dT%H:%M:%S.{us}+00:00",
    "month": "%b %d %H:%M:%S",
    "rfc3164": "%b {day:>2} %H:%M:%S",
    "month-precise": "%b %d %H:%M:%S.{us}",
    "unix": "{epoch}.{us}",
    "full": "%a %Y-%m-%d %H:%M:%S UTC",
}
_IDENT = ["app[1]:", "app[2]:", "systemd[1]:", "kernel:", "sshd[900]:", "x.service[7]:", "rsyslogd:"]
_MSG = [
    "hello: world",
    "a.service: Failed with result 'oom-kill'.",
    "Started a.service - A.",
    "a#012b#011c",
    "ticket #013, not an escape; nor is #01",
    "",
    "ünïcode ✓",
    "[2025-03-14 09:00:20 TP0] Load weight begin. avail mem=138.62 GB",
    "[2025-03-14 09:05:16 TP0] Load weight end. type=X, dtype=torch.bfloat16, avail mem=64.35 GB, mem usage=74.27 GB.",
]


@st.composite
def _journal_text(draw: st.DrawFn) -> str:
    import time as _time

    fmt = _MODES[draw(st.sampled_from(sorted(_MODES)))]
    t = draw(st.integers(min_value=1_735_500_000, max_value=1_736_000_000))
    out = []
    for _ in range(draw(st.integers(min_value=0, max_value=120))):
        t += draw(st.integers(min_value=0, max_value=40_000))
        tm = _time.gmtime(t)
        us = f"{draw(st.integers(min_value=0, max_value=999_999)):06d}"
        stamp = _time.strftime(
            fmt.replace("{us}", us).replace("{epoch}", str(t)).replace("{day:>2}", f"{tm.tm_mday:>2}"), tm
        )
        kind = draw(st.integers(min_value=0, max_value=19))
        if kind == 0:
            out.append("    continued line")
        elif kind == 1:
            out.append("")
        elif kind == 2:
            out.append(
                draw(st.sampled_from(["-- Reboot --", "░░ Subject: x", "-- Logs begin at x --", "junk"]))
            )
        elif kind == 3:
            out.append(f"{stamp} {draw(st.sampled_from(_IDENT))} hostless")
        else:
            host = "h1" if kind < 17 else "h2"
            out.append(f"{stamp} {host} {draw(st.sampled_from(_IDENT))} {draw(st.sampled_from(_MSG))}")
    return "\n".join(out)


def _run_short(text: str, vector: bool, chunk_lines: int) -> tuple[list[str], tuple[int, int]]:
    from conftest import make_context, serialise

    from postmortem.parsers.base import chunks_of
    from postmortem.parsers.journal.short import ShortState, entry_groups

    ctx = make_context(year=2025, tz="UTC")
    state = ShortState(ctx)
    if not vector:
        state.vector = None
    out = []
    for group in entry_groups(chunks_of(text.split("\n"), 1, chunk_lines)):
        out.extend(state.chunk(group))
    out.extend(state.close())
    return sorted(serialise(out)), (ctx.parsed_lines, ctx.ignored_lines)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_journal_text(), chunk_lines=st.integers(min_value=1, max_value=80))
def test_vector_path_equals_the_per_line_path(text: str, chunk_lines: int) -> None:
    import pytest

    from postmortem.parsers.journal import sink, vector

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(vector, "MIN_LINES", 0)
        mp.setattr(sink, "ENGINE_CHECK_BUDGET", 3)  # exercise the check budget within a chunk
        assert _run_short(text, True, chunk_lines) == _run_short(text, False, chunk_lines)


@settings(max_examples=200, deadline=None)
@given(
    data=st.lists(st.one_of(st.sampled_from(_EXPORT_PIECES), st.binary(max_size=10)), max_size=30).map(
        b"".join
    ),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=3),
)
def test_export_blocks_cut_anywhere(data: bytes, cuts: list[int]) -> None:
    from conftest import make_context, serialise

    from postmortem.parsers import get_parser

    parser = get_parser("journal-export")
    assert parser is not None
    points = sorted({min(c, len(data)) for c in cuts})
    blocks = [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True) if b > a]
    whole_ctx, cut_ctx = make_context(), make_context()
    whole = list(parser.parse_bytes([data], whole_ctx))  # type: ignore[attr-defined]
    parts = list(parser.parse_bytes(blocks, cut_ctx))  # type: ignore[attr-defined]
    check_accounting(cut_ctx, parts, count_lines(data))
    assert sorted(serialise(parts)) == sorted(serialise(whole))
