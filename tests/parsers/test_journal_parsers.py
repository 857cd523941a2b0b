"""One small inline case per branch of the journal parsers, their sniffers, and the sink's
routing (with stand-in streams, so these tests do not depend on the kernel/SGLang modules)."""

from __future__ import annotations

import struct
from datetime import UTC, datetime
from typing import Any, ClassVar

import pytest
from conftest import check_accounting, count_lines, issues_of, make_context, parse_text, records_of

from postmortem.engines import Engine
from postmortem.io import Head
from postmortem.parsers import get_parser
from postmortem.parsers.base import LineChunk, ParseIssue, TableBatch
from postmortem.parsers.journal import sink as sink_mod
from postmortem.parsers.journal.sink import JournalSink
from postmortem.records import Boot, JournalHeader, OomKill, UnitEvent
from postmortem.timeutil import BootAnchor, BootAnchors


def rows(outputs: list[Any]) -> list[dict[str, Any]]:
    return [
        r
        for o in outputs
        if isinstance(o, TableBatch) and o.table == "journal_entries"
        for r in o.data.to_pylist()
    ]


def run(parser: str, text: str | bytes, **ctx: Any) -> tuple[list[Any], Any]:
    outputs, context = parse_text(parser, text, **ctx)
    data = text.encode() if isinstance(text, str) else text
    check_accounting(context, outputs, count_lines(data))
    return outputs, context


def head(text: str | bytes) -> Head:
    data = text.encode() if isinstance(text, str) else text
    return Head("x", data, data.decode("utf-8", "replace").split("\n"))


def utc(*a: int) -> datetime:
    return datetime(*a, tzinfo=UTC)  # type: ignore[misc]


# ----------------------------------------------------------------------------- journal-short


def test_short_blank_and_meta_lines_are_ignored() -> None:
    text = (
        "-- Logs begin at Fri 2025-03-14 09:00:00 UTC, end at Fri 2025-03-14 11:48:43 UTC. --\n"
        "\n"
        "-- No entries --\n"
        "-- Reboot --\n"
        "--\n"
        "-- Subject: A start job for unit sglang-demo.service has finished successfully\n"
    )
    out, ctx = run("journal-short", text)
    # (the header's times are kept: they date a short-monotonic file printed whole)
    assert out == [JournalHeader(1, utc(2025, 3, 14, 9), utc(2025, 3, 14, 11, 48, 43), None)]
    assert (ctx.parsed_lines, ctx.ignored_lines) == (0, 6)


def test_short_unusable_lines_are_issues() -> None:
    text = (
        "   indented before any entry\n"
        "garbage without a stamp\n"
        "Feb 30 10:00:00 host app[1]: no such day\n"
        "2025-03-14T09:00:00+0000\n"
        "[notanumber] host app: x\n"
    )
    out, _ = run("journal-short", text, year=2025)
    assert [(i.line_no, i.reason) for i in issues_of(out)] == [
        (1, "continuation line before any entry"),
        (2, "no journal/syslog timestamp"),
        (3, "no journal/syslog timestamp"),
        (4, "no journal/syslog timestamp"),
        (5, "no journal/syslog timestamp"),
    ]


def test_short_continuation_lines_join_the_previous_message() -> None:
    text = (
        "Mar 14 11:42:05 gpu-node-7 kernel: Mem-Info:\n"
        "                                   active_anon:1 inactive_anon:2\n"
        "                                    free:3\n"
        "\tand a tab-indented line\n"
        "Mar 14 11:42:06 gpu-node-7 app[1]: next\n"
    )
    out, ctx = run("journal-short", text, year=2025)
    got = rows(out)
    assert [r["message"] for r in got] == [
        "Mem-Info:\nactive_anon:1 inactive_anon:2\n free:3\nand a tab-indented line",
        "next",
    ]
    assert ctx.parsed_lines == 5


def test_short_overlong_message_stops_growing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sink_mod, "MAX_MESSAGE_CHARS", 40)
    text = "Mar 14 11:42:05 h app[1]: start\n" + "    more text that does not fit\n" * 3
    out, ctx = run("journal-short", text, year=2025)
    assert rows(out)[0]["message"] == "start\nmore text that does not fit"
    assert ctx.parsed_lines == 4


def test_short_year_from_the_journal_header_beats_the_mtime() -> None:
    text = (
        "-- Logs begin at Mon 2024-12-30 10:00:00 UTC, end at Thu 2025-01-02 10:00:00 UTC. --\n"
        "Dec 31 23:00:00 h app[1]: old year\n"
        "Jan 01 01:00:00 h app[1]: new year\n"
    )
    out, _ = run("journal-short", text, mtime="2030-06-01T00:00:00+00:00")
    assert [r["ts"] for r in rows(out)] == [utc(2024, 12, 31, 23), utc(2025, 1, 1, 1)]


def test_short_header_year_is_read_before_the_vectorised_stamps(monkeypatch: pytest.MonkeyPatch) -> None:
    """The vectorised pass reads a chunk's stamps before its other lines: the header that opens
    the file must give the year first, or a copied file's mtime does (scenario seed 2027, night
    114: a 2024 journal read as 2026)."""
    from postmortem.parsers.journal import vector

    monkeypatch.setattr(vector, "MIN_LINES", 0)
    header = "-- Logs begin at Mon 2024-01-01 08:29:01 JST, end at Mon 2024-01-01 09:36:51 JST. --\n"
    lines = "".join(f"Jan 01 08:{m:02d}:01 h app[1]: tick {m}\n" for m in range(30, 60))
    out, ctx = run("journal-short", header + lines, mtime="2026-12-06T00:00:00+00:00")
    assert {r["ts"].year for r in rows(out)} == {2024}
    assert "from the file's modification time" not in " ".join(ctx.notes)


@pytest.mark.parametrize(
    ("first", "dated", "years"),
    [
        # a later line's SGLang prefix names the year
        (
            "Mar 14 08:59:00",
            "Mar 14 09:00:02 h python3[5150]: [2023-03-14 09:00:02] server_args=x",
            (2023, 2023),
        ),
        # the file began in December: the dated January line is the year after the first line
        (
            "Dec 31 23:00:00",
            "Jan 01 00:10:00 h python3[5150]: [2024-01-01 00:10:00 TP0] Decode batch",
            (2023, 2024),
        ),
        # a Python logging stamp, one day off (the host's zone against the logger's)
        ("Mar 14 08:59:00", "Mar 14 23:59:59 h app[9]: 2022-03-15 00:00:00,001 INFO up", (2022, 2022)),
        # short-precise stamps
        (
            "Mar 14 02:00:00.120000",
            "Mar 14 02:00:02.120000 h python3[5150]: [2021-03-14 09:00:02] up",
            (2021, 2021),
        ),
    ],
)
def test_short_year_from_a_full_date_in_the_messages_beats_the_mtime(
    first: str, dated: str, years: tuple[int, int]
) -> None:
    text = f"{first} h app[1]: before\n{dated}\n"
    out, ctx = run("journal-short", text, mtime="2030-06-01T00:00:00+00:00")
    assert tuple(r["ts"].year for r in rows(out)) == years
    assert any("from the full date line 2 carries" in n for n in ctx.notes)


def test_short_year_from_mtime_when_nothing_else() -> None:
    text = "Dec 31 23:00:00 h app[1]: a\nJan 01 01:00:00 h app[1]: b\n"
    out, _ = run("journal-short", text, mtime="2026-01-01T05:00:00+00:00")
    assert [r["ts"] for r in rows(out)] == [utc(2025, 12, 31, 23), utc(2026, 1, 1, 1)]


def test_short_new_year_in_a_zone_ahead_of_utc() -> None:
    # rendered with TZ=Asia/Tokyo: 23:30 JST on Dec 31 is 14:30 UTC; 01:00 JST on Jan 1 is still
    # Dec 31 in UTC — the year belongs to the local date, not the UTC one
    text = (
        "Dec 31 23:30:00 h app[1]: before\nJan 01 00:30:00 h app[1]: after\nJan 01 10:00:00 h app[1]: later\n"
    )
    out, _ = run("journal-short", text, year=2025, tz="Asia/Tokyo")
    assert [(r["ts"], r["ts_inferred"]) for r in rows(out)] == [
        (utc(2025, 12, 31, 14, 30), "year"),
        (utc(2025, 12, 31, 15, 30), "year"),
        (utc(2026, 1, 1, 1, 0), "year"),
    ]


def test_short_host_falls_back_to_the_given_host() -> None:
    out, _ = run("journal-short", "Mar 14 09:00:00 kernel: no host printed\n", year=2025, host="gpu-9")
    assert (rows(out)[0]["host"], rows(out)[0]["ident"]) == ("gpu-9", "kernel")


def test_short_monotonic_uses_the_boot_anchor_of_its_boot_id() -> None:
    anchors = BootAnchors(
        [
            BootAnchor("aa" * 16, "h", utc(2025, 1, 1), "journal"),
            BootAnchor("bb" * 16, "h", utc(2025, 2, 1), "journal"),
        ]
    )
    text = f"-- Boot {'aa' * 16} --\n[   10.000000] h app[1]: in boot aa\n-- Boot {'cc' * 16} --\n[   10.000000] h app[1]: no anchor\n"
    out, _ = run("journal-short", text, anchors=anchors)
    got = rows(out)
    assert [(r["ts"], r["ts_inferred"], r["monotonic_s"]) for r in got] == [
        (utc(2025, 1, 1, 0, 0, 10), "boot", 10.0),
        (None, None, 10.0),
    ]


def test_short_monotonic_without_boot_id_takes_the_hosts_latest_boot() -> None:
    anchors = BootAnchors([BootAnchor("aa" * 16, "h", utc(2025, 1, 1), "journal")])
    out, _ = run("journal-short", "[    1.500000] h app[1]: x\n", anchors=anchors)
    assert rows(out)[0]["ts"] == utc(2025, 1, 1, 0, 0, 1, 500000)


def test_short_with_unit_ident_is_the_unit() -> None:
    out, _ = run("journal-short", "Fri 2025-03-14 09:00:02 UTC gpu-node-7 sglang-qwen.service[5150]: hi\n")
    r = rows(out)[0]
    assert (r["ident"], r["unit"], r["pid"]) == ("sglang-qwen.service", "sglang-qwen.service", 5150)


def test_short_description_only_job_messages_learn_the_unit_name() -> None:
    text = (
        "Mar 14 09:00:00 h systemd[1]: Started sglang-demo.service - SGLang demo server.\n"
        "Mar 14 10:00:00 h systemd[1]: Stopped SGLang demo server.\n"
        "Mar 14 10:00:01 h systemd[1]: Started Some Other Thing.\n"
    )
    out, _ = run("journal-short", text, year=2025)
    events = records_of(out, UnitEvent)
    assert [(e.unit, e.action, e.description) for e in events] == [
        ("sglang-demo.service", "started", "SGLang demo server"),
        ("sglang-demo.service", "stopped", "SGLang demo server"),
        ("Some Other Thing", "started", "Some Other Thing"),
    ]


def test_short_rsyslog_escapes() -> None:
    out, _ = run("journal-short", "Sep 29 08:12:34 h app: a#012 b#011c\n", year=2024)
    assert rows(out)[0]["message"] == "a\n b\tc"


# ----------------------------------------------------------------------------- sniffing


@pytest.mark.parametrize(
    ("text", "parser"),
    [
        (
            "Mar 14 09:00:00 gpu-node-7 systemd[1]: Started x.\nMar 14 09:00:01 gpu-node-7 app[2]: y\n",
            "journal-short",
        ),
        ("2025-03-14T09:00:00+00:00 h app[2]: y\n2025-03-14T09:00:01+00:00 h app[2]: z\n", "journal-short"),
        (
            "Jun 20 12:47:02 new-db1 kernel: [15180285.537297] php-fpm invoked oom-killer: gfp_mask=0x280da\n",
            "journal-short",
        ),
        (
            "[10800.120000] gpu-node-7 systemd[1]: x\n[10800.160000] gpu-node-7 systemd[1]: y\n",
            "journal-short",
        ),
        (
            "[10800.120000] systemd[1]: Starting x.service...\n[10800.2] python3[5150]: hi\n[10800.3] sshd[9]: a\n",
            "journal-short",
        ),
        ('{"__CURSOR":"s=1","__REALTIME_TIMESTAMP":"1","MESSAGE":"x"}\n', "journal-json"),
        ('\x1e{"__REALTIME_TIMESTAMP":"1","MESSAGE":"x"}\n', "journal-json"),
        ('data: {"__REALTIME_TIMESTAMP":"1","MESSAGE":"x"}\n\n', "journal-json"),
        ('{\n\t"__CURSOR" : "s=1",\n\t"MESSAGE" : "x"\n}\n', "journal-json"),
        ("__CURSOR=s=1\n__REALTIME_TIMESTAMP=1\nMESSAGE=x\n\n", "journal-export"),
        (
            "Fri 2025-03-14 09:00:00.120000 UTC [s=1;i=1;b=2;m=3;t=4;x=5]\n    _PID=1\n    MESSAGE=x\n",
            "journal-verbose",
        ),
        (
            "Starting sglang-demo.service - SGLang demo server...\nStarted sglang-demo.service - SGLang demo server.\n"
            "[2025-03-14 09:00:02] server_args=ServerArgs(model_path='/m')\n"
            "[2025-03-14 09:00:20 TP0] Load weight begin. avail mem=138.62 GB\n",
            "journal-cat",
        ),
    ],
)
def test_sniff_picks_the_right_journal_parser(text: str, parser: str) -> None:
    from postmortem.parsers import detect

    found, score = detect(head(text))
    assert found is not None
    assert (found.name, score >= 60) == (parser, True)


@pytest.mark.parametrize(
    "text",
    [
        "[  152.104016] sglang::schedul invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0\n[  152.104100] CPU: 0 UID: 0 PID: 4242\n",
        "[    1.000000] usb 1-1: new high-speed USB device\n[    1.100000] ACPI: Added _OSI\n[    1.2] audit: type=1400\n",
        "2026-12-02T13:30:19,104016+00:00 sglang::schedul invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL)\n2026-12-02T13:30:19,104100+00:00 CPU: 0 UID: 0 PID: 4242 Comm: x\n",
        "6,1207,152104816,-;Memory cgroup out of memory: Killed process 4242 (python3)\n",
        "[2025-03-14 09:00:20 TP0] Load weight begin. avail mem=138.62 GB\n",
        "timestamp, name, pci.bus_id\n2024/01/16 14:44:16.977, NVIDIA H100, 00000000:18:00.0\n",
        "hello world\nthis is text\n",
        "",
    ],
)
def test_journal_sniffers_leave_other_formats_alone(text: str) -> None:
    h = head(text)
    for name in ("journal-short", "journal-json", "journal-export", "journal-verbose", "journal-cat"):
        parser = get_parser(name)
        assert parser is not None
        assert parser.sniff(h) < 30, name


# ----------------------------------------------------------------------------- journal-json


def test_json_branches() -> None:
    text = (
        '{"__REALTIME_TIMESTAMP":"1741942800120000","MESSAGE":[104,105,255],"_PID":"x","PRIORITY":"6"}\n'
        "\n"
        '{"MESSAGE":null,"SYSLOG_IDENTIFIER":"app"}\n'
        "-- Boot 0123456789abcdef0123456789abcdef --\n"
        '{"MESSAGE":"x"\n'
        "[1]\n"
        "plain text\n"
    )
    out, ctx = run("journal-json", text)
    got = rows(out)
    assert [(r["message"], r["pid"], r["ts"]) for r in got] == [
        ("hi\ufffd", None, utc(2025, 3, 14, 9, 0, 0, 120000)),
        ("", None, None),
    ]
    assert [(i.line_no, i.reason) for i in issues_of(out)] == [
        (5, "invalid JSON"),
        (6, "not a journal JSON object"),
        (7, "not a journal JSON object"),
    ]
    assert any("MESSAGE values were null" in n for n in ctx.notes)
    assert ctx.ignored_lines == 2


def test_json_pretty_invalid_and_truncated_objects() -> None:
    text = '{\n\t"MESSAGE" : "ok",\n\t"_PID" : "3"\n}\n{\n\t"MESSAGE" : broken\n}\n{\n\t"MESSAGE" : "cut",\n'
    out, ctx = run("journal-json", text)
    assert [r["message"] for r in rows(out)] == ["ok", "cut"]
    assert [(i.line_no, i.reason) for i in issues_of(out)] == [(5, "invalid json-pretty object (3 lines)")]
    assert (ctx.parsed_lines, ctx.ignored_lines) == (6, 2)


# ----------------------------------------------------------------------------- journal-export


def _bin(name: bytes, value: bytes) -> bytes:
    return name + b"\n" + struct.pack("<Q", len(value)) + value + b"\n"


def test_export_binary_length_with_newline_bytes_is_counted() -> None:
    # length 10 is the byte 0x0a: the length itself contains a "line break"
    data = b"_PID=3\n" + _bin(b"MESSAGE", b"0123456789") + b"\n"
    out, ctx = run("journal-export", data)
    assert rows(out)[0]["message"] == "0123456789"
    assert (ctx.parsed_lines, ctx.ignored_lines) == (4, 1)  # _PID, MESSAGE, 0x0a, value


def test_export_garbage_and_oversized_fields_are_issues() -> None:
    data = b"lower case line\n" + b"MESSAGE\n" + struct.pack("<Q", 1 << 40) + b"x\n\n"
    out, _ = run("journal-export", data)
    assert [i.reason for i in issues_of(out)][:2] == [
        "not an export field",
        f"binary field MESSAGE too long ({1 << 40} bytes)",
    ]


def test_export_last_line_without_newline_and_name_only() -> None:
    out, _ = run("journal-export", b"SYSLOG_IDENTIFIER=a\nMESSAGE=last")
    assert rows(out)[0]["message"] == "last"
    out, _ = run("journal-export", b"SYSLOG_IDENTIFIER=a\nMESSAGE")
    assert [i.reason for i in issues_of(out)] == ["field MESSAGE without a value at the end"]
    assert [i.unparsed for i in issues_of(out)] == [False]


def test_export_truncated_binary_value_keeps_what_arrived() -> None:
    data = b"SYSLOG_IDENTIFIER=a\n" + b"MESSAGE\n" + struct.pack("<Q", 100) + b"part\nof it"
    out, ctx = run("journal-export", data)
    assert rows(out)[0]["message"] == "part\nof it"
    assert [i.reason for i in issues_of(out)] == ["binary field MESSAGE truncated at the end of the stream"]
    assert ctx.parsed_lines == 4


def test_export_rows_cite_the_message_line() -> None:
    """An export entry's row points at its MESSAGE line (text or binary form), the line a
    reader wants to open; an entry without MESSAGE at its first line."""
    data = (
        b"__CURSOR=s=1\n__REALTIME_TIMESTAMP=1741942800120000\n_PID=1\nMESSAGE=first\n_COMM=a\n\n"
        + b"__CURSOR=s=2\n__REALTIME_TIMESTAMP=1741942800160000\n"
        + _bin(b"MESSAGE", b"two\nlines")
        + b"\n__CURSOR=s=3\n__REALTIME_TIMESTAMP=1741942800170000\n_PID=3\n\n"
    )
    out, _ = run("journal-export", data)
    assert [(r["line_no"], r["message"]) for r in rows(out)] == [(4, "first"), (9, "two\nlines"), (13, "")]


def test_export_blocks_split_anywhere_give_the_same_result() -> None:
    parser = get_parser("journal-export")
    assert parser is not None
    data = (
        b"__REALTIME_TIMESTAMP=1741942800120000\n_PID=1\n"
        + _bin(b"MESSAGE", b"a\nb")
        + b"\n__REALTIME_TIMESTAMP=1741942800160000\nMESSAGE=two\n\n"
    )
    whole = list(parser.parse_bytes([data], make_context()))  # type: ignore[attr-defined]
    for cut in range(1, len(data)):
        ctx = make_context()
        parts = list(parser.parse_bytes([data[:cut], data[cut:]], ctx))  # type: ignore[attr-defined]
        assert rows(parts) == rows(whole), cut
        check_accounting(ctx, parts, count_lines(data))


# ----------------------------------------------------------------------------- verbose, cat


def test_verbose_branches() -> None:
    text = (
        "    MESSAGE=before any header\n"
        "Fri 2025-03-14 02:00:00.120000 PDT [s=1;i=1;b=3f1c2b9a8e7d4c6b9a1f2e3d4c5b6a79;m=3;x=1]\n"
        "    SYSLOG_IDENTIFIER=app\n"
        "    MESSAGE=one\n"
        "            two\n"
        "unindented stray line\n"
        "-- Reboot --\n"
    )
    out, ctx = run("journal-verbose", text, tz="America/Los_Angeles")
    r = rows(out)[0]
    assert (r["ts"], r["ts_raw"], r["message"], r["monotonic_s"]) == (
        utc(2025, 3, 14, 9, 0, 0, 120000),
        "Fri 2025-03-14 02:00:00.120000 PDT",
        "one\ntwo",
        3e-6,
    )
    assert [(i.line_no, i.reason) for i in issues_of(out)] == [
        (1, "not a journalctl verbose entry"),
        (6, "not a journalctl verbose field"),
    ]
    assert ctx.ignored_lines == 1


def test_cat_notes_and_ignores_blank_lines() -> None:
    out, ctx = run("journal-cat", "one\n\n-- Boot 0123 --\ntwo\n")
    assert [r["message"] for r in rows(out)] == ["one", "two"]
    assert [r["ts"] for r in rows(out)] == [None, None]
    assert ctx.notes == ["no timestamps (journalctl -o cat)"]


# ----------------------------------------------------------------------------- sink routing


class FakeKernel:
    instances: ClassVar[list[FakeKernel]] = []

    def __init__(self, ctx: Any) -> None:
        self.fed: list[tuple[int, str, dict[str, Any]]] = []
        self.closed = False
        FakeKernel.instances.append(self)

    def feed(self, line_no: int, message: str, **kw: Any) -> list[Any]:
        self.fed.append((line_no, message, kw))
        return []

    def close(self) -> list[Any]:
        self.closed = True
        return [ParseIssue(0, "closed", "", False)]


class FakeSglang:
    instances: ClassVar[list[FakeSglang]] = []

    def __init__(self, ctx: Any, *, host: Any = None, unit: Any = None, pid: Any = None) -> None:
        self.unit, self.pid, self.host = unit, pid, host
        self.fed: list[tuple[int, str, dict[str, Any]]] = []
        FakeSglang.instances.append(self)

    def feed(self, line_no: int, message: str, **kw: Any) -> list[Any]:
        self.fed.append((line_no, message, kw))
        return []

    def close(self) -> list[Any]:
        return []


class FakeEngine(Engine):
    """An engine whose lines start with ``[sg]`` (and whose units are named after SGLang)."""

    name = "fake"
    name_hints = ("sglang",)
    start_markers = ("[sg]", "server_args=")

    def looks_like(self, message: str) -> bool:
        return message.startswith("[sg]") or "server_args=" in message

    def new_stream(self, ctx: Any, *, host: Any, unit: Any, pid: Any) -> Any:
        return FakeSglang(ctx, host=host, unit=unit, pid=pid)


def fake_sink(**ctx: Any) -> JournalSink:
    FakeKernel.instances.clear()
    FakeSglang.instances.clear()
    s = JournalSink(make_context(**ctx))
    s._kernel_checked, s._kernel_cls = True, FakeKernel
    s._engines = (FakeEngine(),)
    return s


def add(s: JournalSink, line_no: int, ident: str | None, message: str, **kw: Any) -> None:
    defaults: dict[str, Any] = {
        "ts": None,
        "ts_raw": None,
        "ts_inferred": None,
        "monotonic_s": None,
        "host": "h",
        "pid": None,
        "unit": None,
        "priority": None,
        "transport": None,
        "boot_id": None,
    }
    defaults.update(kw)
    d = defaults
    s.entry(
        line_no,
        d["ts"],
        d["ts_raw"],
        d["ts_inferred"],
        d["monotonic_s"],
        d["host"],
        ident,
        d["pid"],
        d["unit"],
        d["priority"],
        d["transport"],
        d["boot_id"],
        message,
    )


def test_kernel_entries_get_one_stream_per_host_and_boot() -> None:
    s = fake_sink()
    add(s, 1, "kernel", "a", boot_id="b1", priority=4)
    add(s, 2, "kernel", "b", boot_id="b1")
    add(s, 3, "kernel", "c", boot_id="b2")
    add(s, 4, "kernel", "d", boot_id="b2", host="other")
    add(s, 5, "app", "not kernel", transport="stdout")
    add(s, 6, "fake", "kernel by transport", transport="kernel")
    out = list(s.close())
    k = FakeKernel.instances
    assert [[f[1] for f in inst.fed] for inst in k] == [["a", "b"], ["c"], ["d"], ["kernel by transport"]]
    assert k[0].fed[0][2]["level"] == 4
    assert all(inst.closed for inst in k)
    assert sum(1 for o in out if isinstance(o, ParseIssue)) == 4  # each stream flushed once
    assert len(rows(out)) == 6


def test_sglang_routing_by_unit_and_by_ident_pid() -> None:
    s = fake_sink()
    add(s, 1, "python3", "warming up", pid=5, unit="sglang-a.service")  # unit name says SGLang
    add(s, 2, "python3", "Traceback (most recent call last):", pid=5, unit="sglang-a.service")
    add(s, 3, "python3", "not yet", pid=7)
    add(s, 4, "python3", "[sg] now it is", pid=7)
    add(s, 5, "python3", "continuation of pid 7", pid=7)
    add(s, 6, "python3", "server_args=ServerArgs(port=1)", pid=8)
    list(s.close())
    by_key = {(i.unit, i.pid): [f[0] for f in i.fed] for i in FakeSglang.instances}
    assert by_key == {("sglang-a.service", 5): [1, 2], (None, 7): [4, 5], (None, 8): [6]}


def test_sglang_check_budget_stops_checking(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sink_mod, "ENGINE_CHECK_BUDGET", 2)
    s = fake_sink()
    for n in range(1, 4):
        add(s, n, "sshd", "hello", pid=9)
    add(s, 4, "sshd", "[sg] too late", pid=9)
    list(s.close())
    assert FakeSglang.instances == []


def test_text_mode_sglang_stream_claims_no_unit_while_parsing() -> None:
    """(``build`` links a text mode's server process to its unit, with the lines after its
    start in view: a oneshot started beside it ends while the server writes on.)"""
    s = fake_sink()
    t0 = utc(2025, 3, 14, 9, 0, 0)
    t1 = utc(2025, 3, 14, 9, 0, 2)
    t2 = utc(2025, 3, 14, 9, 10, 0)
    add(s, 1, "systemd", "Started sglang-x.service - X.", ts=t0, pid=1)
    add(s, 2, "python3", "[sg] first", ts=t1, pid=5)
    add(s, 3, "python3", "[sg] other process, nothing left to claim", ts=t1, pid=6)
    add(s, 4, "python3", "[sg] too long after any start", ts=t2, pid=7)
    list(s.close())
    assert [(i.pid, i.unit) for i in FakeSglang.instances] == [(5, None), (6, None), (7, None)]


def test_holdoff_sentence_folds_into_the_counter_sentence() -> None:
    s = fake_sink()
    t = utc(2025, 1, 1)
    add(s, 1, "systemd", "a.service: Service RestartSec=100ms expired, scheduling restart.", ts=t)
    add(s, 2, "systemd", "a.service: Scheduled restart job, restart counter is at 5.", ts=t)
    add(s, 3, "systemd", "b.service: Service hold-off time over, scheduling restart.", ts=t)
    add(s, 4, "systemd", "b.service: Stopped.", ts=t)
    out = list(s.close())
    events = [(e.line_no, e.unit, e.action, e.restart_count) for e in records_of(out, UnitEvent)]
    assert events == [(2, "a.service", "restart_scheduled", 5), (3, "b.service", "restart_scheduled", None)]


def test_earlyoom_sigterm_then_sigkill_is_one_kill() -> None:
    s = fake_sink()
    t = utc(2025, 1, 1)
    msg = 'sending {} to process 42 uid 0 "python3": badness 900, VmRSS 100 MiB'
    add(s, 1, "earlyoom", msg.format("SIGTERM"), ts=t)
    add(s, 2, "earlyoom", msg.format("SIGKILL"), ts=utc(2025, 1, 1, 0, 0, 1))
    add(s, 3, "earlyoom", msg.format("SIGTERM"), ts=utc(2025, 1, 1, 1))
    out = list(s.close())
    kills = records_of(out, OomKill)
    assert [(k.line_no, k.killer, k.victim_pid, k.scope) for k in kills] == [
        (1, "earlyoom", 42, None),
        (3, "earlyoom", 42, None),
    ]
    assert kills[0].oom_id == make_context().make_id(1)


def test_boot_median_over_a_decimated_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sink_mod, "BOOT_SAMPLES", 8)
    s = fake_sink()
    base = 1_741_932_000_000_000
    for i in range(100):
        jitter = 5_000_000 if i % 10 == 0 else 0  # a few entries after a clock step
        s.boot_sample("b1", "h", i + 1, base + i * 1000 + jitter, i * 1000)
    out = list(s.close())
    assert [(b.boot_id, b.line_no, b.boot_ts) for b in records_of(out, Boot)] == [
        ("b1", 1, datetime(2025, 3, 14, 6, 0, tzinfo=UTC))
    ]


# ----------------------------------------------------------------------------- vectorised path


def _short_state(vector_on: bool) -> Any:
    from postmortem.parsers.journal.short import ShortState

    state = ShortState(make_context(year=2025))
    if not vector_on:
        state.vector = None
    state.sink._kernel_checked, state.sink._kernel_cls = True, FakeKernel
    state.sink._engines = (FakeEngine(),)
    return state


@pytest.mark.parametrize("vector_on", [True, False])
def test_candidate_that_turns_sglang_gets_every_later_line(
    monkeypatch: pytest.MonkeyPatch, vector_on: bool
) -> None:
    from postmortem.parsers.journal import vector

    monkeypatch.setattr(vector, "MIN_LINES", 0)
    monkeypatch.setattr(sink_mod, "ENGINE_CHECK_BUDGET", 3)
    FakeSglang.instances.clear()
    lines = [
        "2025-03-14T09:00:00+0000 h python3[5]: warming up",
        "2025-03-14T09:00:01+0000 h python3[5]: [sg] hello",
    ]
    lines += [f"2025-03-14T09:00:{i + 2:02d}+0000 h python3[5]: line {i}" for i in range(20)]
    lines += [f"2025-03-14T09:01:{i:02d}+0000 h other[6]: not sglang {i}" for i in range(20)]
    state = _short_state(vector_on)
    list(state.chunk(LineChunk(1, "\n".join(lines))))
    list(state.close())
    assert [(i.pid, [f[0] for f in i.fed]) for i in FakeSglang.instances] == [(5, list(range(2, 23)))]
    if vector_on:
        assert state.vector is not None
        assert state.vector.layout == (1, -1)


def test_short_year_from_the_files_own_word_beats_since() -> None:
    """A header, then a dated message, are the file's own statement of its year; --since is only
    the window asked for."""
    header = "-- Logs begin at Mon 2024-03-11 10:00:00 UTC, end at Thu 2024-03-14 10:00:00 UTC. --\n"
    dated = "Mar 14 09:00:02 h python3[5]: [2023-03-14 09:00:02] up\n"
    line = "Mar 14 09:00:00 h app[1]: a\n"
    out, _ = run("journal-short", header + line, since="2026-01-01T00:00:00+00:00")
    assert [r["ts"].year for r in rows(out)] == [2024]
    out, _ = run("journal-short", line + dated, since="2026-01-01T00:00:00+00:00")
    assert [r["ts"].year for r in rows(out)] == [2023, 2023]


def test_export_saved_with_crlf_line_ends_reads_the_same() -> None:
    """An export passed through a Windows tool ends its lines with CRLF: every entry ran into the
    next (one record for the whole file). Text fields never hold a CR, so it is read past."""
    text = (
        "__REALTIME_TIMESTAMP=1741943205120000\n_HOSTNAME=h\nSYSLOG_IDENTIFIER=app\n_PID=7\nMESSAGE=one\n\n"
        "__REALTIME_TIMESTAMP=1741943206120000\n_HOSTNAME=h\nSYSLOG_IDENTIFIER=app\n_PID=7\nMESSAGE=two\n\n"
    )
    lf, _ = run("journal-export", text.encode())
    crlf, _ = run("journal-export", text.replace("\n", "\r\n").encode())
    assert [r["message"] for r in rows(crlf)] == ["one", "two"] == [r["message"] for r in rows(lf)]
    assert rows(crlf) == rows(lf)


@pytest.mark.parametrize(
    "fmt", ["%b %d %H:%M:%S", "%b %d %H:%M:%S.%f", "%Y-%m-%dT%H:%M:%S"], ids=["short", "precise", "iso"]
)
def test_short_the_hour_that_repeats_when_clocks_go_back_is_read_in_line_order(fmt: str) -> None:
    """Los Angeles, 2025-11-02: 01:00–01:59 is printed twice (PDT, then PST) by ``journalctl -o
    short`` and by syslog files with zone-less stamps. Lines in order keep their order in UTC:
    the vectorised path hands a chunk holding that hour to the per-line one, which reads it in
    line order; the hour before it and the one after stay on the vectorised path."""
    from datetime import timedelta

    from postmortem.parsers.base import LineChunk
    from postmortem.timeutil import get_zone

    zone = get_zone("America/Los_Angeles")
    start = utc(2025, 11, 2, 7, 0)  # 00:00 PDT
    want = [start + timedelta(seconds=20 * i) for i in range(4 * 180)]  # four hours, every 20 s
    lines = [f"{t.astimezone(zone):{fmt}} gpu1 app[42]: tick {i}" for i, t in enumerate(want)]
    parser = get_parser("journal-short")
    assert parser is not None
    # one chunk an hour: before, first 01:xx, second 01:xx, after
    chunks = [LineChunk.from_lines(1 + h * 180, lines[h * 180 : (h + 1) * 180]) for h in range(4)]
    ctx = make_context(tz="America/Los_Angeles", year=2025)
    out = list(parser.parse(chunks, ctx))
    assert [r["ts"] for r in rows(out)] == want
    assert ctx.parsed_lines == len(lines)


def test_an_export_entry_without_message_is_not_called_a_null_one() -> None:
    """Export has no null: an entry without MESSAGE (cut short at the end of a truncated file)
    is noted as such, not as a value over journalctl's 4096-byte limit to render with --all."""
    text = (
        "__REALTIME_TIMESTAMP=1741942800120000\nMESSAGE=hi\nSYSLOG_IDENTIFIER=app\n\n"
        "__REALTIME_TIMESTAMP=1741942801120000\nSYSLOG_IDENTIFIER=app\n"
    )
    out, ctx = run("journal-export", text)
    assert [r["message"] for r in rows(out)] == ["hi", ""]
    assert any("1 entry had no MESSAGE field (an entry cut short" in n for n in ctx.notes), ctx.notes
    assert not any("4096" in n for n in ctx.notes)


def test_a_year_less_syslog_that_begins_on_29_february_is_of_a_leap_year(tmp_path: Any) -> None:
    """A syslog of 29 February 2024, copied since (its mtime in 2025): every line failed as
    "no journal/syslog timestamp", as 29 February 2025 is no date (seed 246810, n108)."""
    import os

    from postmortem.ingest import IngestOptions, ingest_paths
    from postmortem.store.db import Store
    from postmortem.timeutil import get_zone

    log = tmp_path / "syslog"
    log.write_text(
        "Feb 29 13:56:52 gpu-node-7 systemd[1]: Starting LLM inference...\n"
        "Mar  1 00:00:01 gpu-node-7 systemd[1]: Started LLM inference.\n"
    )
    when = datetime(2025, 6, 23, tzinfo=UTC).timestamp()
    os.utime(log, (when, when))
    store = Store.memory()
    ingest_paths(store, [log], IngestOptions(zone=get_zone("UTC"), zone_given=True))
    years = [r[0].year for r in store.execute("SELECT ts FROM journal_entries ORDER BY line_no").fetchall()]
    issues = store.execute("SELECT count(*) FROM parse_issues").fetchone()
    store.close()
    assert years == [2024, 2024] and issues == (0,)
