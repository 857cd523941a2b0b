"""Kernel parsers: one small case per branch of the dmesg/kmsg prefixes, the KernelStream API,
OOM record assembly and NVIDIA Xids. Expected values are read off the inputs by hand."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from conftest import check_accounting, issues_of, make_context, parse_text, records_of

from postmortem.parsers import get_parser
from postmortem.parsers.base import Head, ParseContext, TableBatch
from postmortem.parsers.kernel import KernelStream, normalise_bus_id, unit_of
from postmortem.records import GpuXid, KernelMessage, OomKill, OomTask
from postmortem.timeutil import BootAnchor, BootAnchors, Inferred

KILL_6X = (
    "Memory cgroup out of memory: Killed process 2383 (sglang::schedul) total-vm:541160kB, "
    "anon-rss:523008kB, file-rss:6500kB, shmem-rss:0kB, UID:0 pgtables:1084kB oom_score_adj:0"
)
HEADER_6X = "sglang::schedul invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0"


def messages(out: list[Any]) -> list[KernelMessage]:
    """kernel_messages rows, whether yielded as records or as TableBatch blocks (file parsers)."""
    rows: list[KernelMessage] = []
    for o in out:
        if isinstance(o, KernelMessage):
            rows.append(o)
        elif isinstance(o, TableBatch) and o.table == KernelMessage.TABLE:
            rows.extend(KernelMessage(**r) for r in o.data.to_pylist())
    return sorted(rows, key=lambda m: m.line_no)


def dmesg(text: str, **ctx: Any) -> tuple[list[Any], ParseContext]:
    out, context = parse_text("dmesg", text, **ctx)
    check_accounting(context, out, text.count("\n") + (0 if text.endswith("\n") else 1))
    return out, context


def kmsg(text: str, **ctx: Any) -> tuple[list[Any], ParseContext]:
    out, context = parse_text("kmsg", text, **ctx)
    check_accounting(context, out, text.count("\n") + (0 if text.endswith("\n") else 1))
    return out, context


def stream(messages: list[str], ctx: ParseContext | None = None, **kw: Any) -> list[Any]:
    ks = KernelStream(ctx or ParseContext())
    out: list[Any] = []
    for i, m in enumerate(messages, 1):
        args: dict[str, Any] = {
            "ts": None,
            "ts_raw": None,
            "ts_inferred": None,
            "monotonic_s": None,
            "host": None,
        }
        args.update(kw)
        out.extend(ks.feed(i, m, **args))
    out.extend(ks.close())
    return out


def kills(out: list[Any]) -> list[OomKill]:
    return records_of(out, OomKill)


def head(text: str) -> Head:
    return Head("x", text.encode(), text.split("\n")[:64])


# ------------------------------------------------------------------ prefixes, one per dmesg style


def test_default_stamp_gives_monotonic_and_no_wall_time() -> None:
    out, ctx = dmesg(f"[  152.104816] {KILL_6X}")
    (msg,) = messages(out)
    assert (msg.monotonic_s, msg.ts, msg.ts_raw, msg.message) == (152.104816, None, "152.104816", KILL_6X)
    assert ctx.parsed_lines == 1


def test_wide_default_stamp() -> None:
    (msg,) = messages(dmesg("[15180285.537297] x")[0])
    assert msg.monotonic_s == 15180285.537297


def test_ctime_stamp_is_local_time_in_tz() -> None:
    out, _ = dmesg(f"[Wed Dec  2 13:30:19 2026] {KILL_6X}", tz="America/Los_Angeles")
    (kill,) = kills(out)
    assert kill.ts == datetime(2026, 12, 2, 21, 30, 19, tzinfo=UTC)
    assert (kill.ts_raw, kill.ts_inferred, kill.monotonic_s) == (
        "Wed Dec  2 13:30:19 2026",
        Inferred.ZONE,
        None,
    )


def test_ctime_stamp_with_localised_month() -> None:
    (msg,) = messages(dmesg("[mer. déc.  2 13:30:19 2026] x", tz="UTC")[0])
    assert msg.ts == datetime(2026, 12, 2, 13, 30, 19, tzinfo=UTC)


def test_ctime_stamp_that_is_not_a_date_keeps_the_text() -> None:
    (msg,) = messages(dmesg("[Wed Xyz  2 13:30:19 2026] x")[0])
    assert (msg.ts, msg.ts_raw, msg.ts_inferred, msg.message) == (None, "Wed Xyz  2 13:30:19 2026", None, "x")


def test_iso_stamp_with_comma_and_offset() -> None:
    (msg,) = messages(dmesg("2026-12-02T13:30:19,104816+01:00 x")[0])
    assert (msg.ts, msg.ts_inferred) == (datetime(2026, 12, 2, 12, 30, 19, 104816, tzinfo=UTC), None)


def test_raw_priority_prefix_gives_level() -> None:
    (msg,) = messages(dmesg(f"<3>[  152.104816] {KILL_6X}")[0])
    assert (msg.level, msg.monotonic_s) == (3, 152.104816)


def test_raw_priority_of_another_facility_keeps_the_level_only() -> None:
    (msg,) = messages(dmesg("<30>[    4.402118] systemd[1]: Detected architecture x86-64.")[0])
    assert (msg.level, msg.message) == (6, "systemd[1]: Detected architecture x86-64.")


def test_raw_priority_without_stamp() -> None:
    (msg,) = messages(dmesg("<6>[drm] Initialized")[0])
    assert (msg.level, msg.monotonic_s, msg.message) == (6, None, "[drm] Initialized")


def test_decoded_facility_and_level() -> None:
    (msg,) = messages(dmesg(f"kern  :err   : [  152.104816] {KILL_6X}")[0])
    assert (msg.level, msg.monotonic_s, msg.message) == (3, 152.104816, KILL_6X)


def test_caller_id_after_the_stamp() -> None:
    a = messages(dmesg("[   31.935015][   T71] usb 1-1: new device")[0])[0]
    b = messages(dmesg("[   31.935015] [  C3] usb 1-1: new device")[0])[0]
    assert a.message == b.message == "usb 1-1: new device"
    assert a.monotonic_s == 31.935015


def test_delta_stamp_keeps_the_monotonic_part() -> None:
    (msg,) = messages(dmesg("[  123.456789 <    0.000123>] x")[0])
    assert msg.monotonic_s == 123.456789


@pytest.mark.parametrize("line", ["[<    0.000123>] x", "[  +0.000123] x"])
def test_stamps_without_usable_time(line: str) -> None:
    """A delta alone (no minute before it, or --time-format delta) dates nothing."""
    (msg,) = messages(dmesg(line)[0])
    assert (msg.ts, msg.monotonic_s, msg.message) == (None, None, "x")


def test_reltime_minute_then_deltas() -> None:
    a, b = messages(dmesg("[Dec 2 13:30] x\n[  +1.500000] y")[0])
    assert (a.message, a.ts_raw, a.ts_inferred, b.message, b.ts_raw) == (
        "x",
        "Dec 2 13:30",
        "minute",
        "y",
        "+1.500000",
    )
    assert a.ts is not None and b.ts is not None and (b.ts - a.ts).total_seconds() == 1.5


def test_continuation_lines_join_their_record() -> None:
    text = (
        "[  100.000001] Mem-Info:\n"
        "[  100.000002] active_anon:1 inactive_anon:2 isolated_anon:0\n"
        "                active_file:3 inactive_file:4 isolated_file:0\n"
        "                free:5 free_pcp:6 free_cma:0\n"
        "[  100.000003] next"
    )
    out, ctx = dmesg(text)
    msgs = messages(out)
    assert [m.line_no for m in msgs] == [1, 2, 5]
    assert msgs[1].message == (
        "active_anon:1 inactive_anon:2 isolated_anon:0\n active_file:3 inactive_file:4 isolated_file:0\n"
        " free:5 free_pcp:6 free_cma:0"
    )
    assert ctx.parsed_lines == 5


def test_unstamped_line_in_a_stamped_file_takes_the_previous_stamp() -> None:
    text = f"[Wed Dec  2 13:30:19 2026] a\n{KILL_6X}\n[Wed Dec  2 13:30:20 2026] c"
    out, _ = dmesg(text, tz="UTC")
    msgs = messages(out)
    assert [(m.line_no, m.ts_inferred, m.ts_raw) for m in msgs] == [
        (1, "zone", "Wed Dec  2 13:30:19 2026"),
        (2, "previous", None),
        (3, "zone", "Wed Dec  2 13:30:20 2026"),
    ]
    assert msgs[1].ts == msgs[0].ts
    assert kills(out)[0].victim_pid == 2383


def test_blank_lines_are_ignored() -> None:
    out, ctx = dmesg("[    1.000000] a\n\n   \n[    2.000000] b\n")
    assert len(messages(out)) == 2
    assert (ctx.parsed_lines, ctx.ignored_lines) == (2, 2)


def test_overlong_record_is_split() -> None:
    from postmortem.parsers.kernel.dmesg import MAX_RECORD_LINES

    text = "[    1.000000] start\n" + "\n".join(f"  line {i}" for i in range(MAX_RECORD_LINES + 5))
    out, _ = dmesg(text)
    msgs = messages(out)
    assert len(msgs) == 2
    assert msgs[0].message.count("\n") == MAX_RECORD_LINES - 1
    assert msgs[1].ts_raw is None
    assert msgs[1].monotonic_s == 1.0


def test_prefix_less_copy_is_one_record_per_line() -> None:
    text = f"{HEADER_6X}\n active_file:35 inactive_file:69\n\n{KILL_6X}"
    out, ctx = dmesg(text)
    assert [m.message for m in messages(out)][1] == " active_file:35 inactive_file:69"
    (kill,) = kills(out)
    assert (kill.ts, kill.monotonic_s, kill.header_line_no, kill.line_no) == (None, None, 1, 4)
    assert (ctx.parsed_lines, ctx.ignored_lines) == (3, 1)
    assert ctx.notes == ["dmesg copy without timestamps (dmesg -t or a stripped copy): times are NULL"]


# ------------------------------------------------------------------ /dev/kmsg


def test_kmsg_record_fields() -> None:
    out, ctx = kmsg(f"3,504,152104816,-;{KILL_6X}")
    (msg,) = messages(out)
    (kill,) = kills(out)
    assert (msg.level, msg.seq, msg.monotonic_s, msg.ts_raw) == (3, 504, 152.104816, "152104816")
    assert kill.victim_pid == 2383
    assert kill.scope == "memcg"
    assert ctx.parsed_lines == 1


def test_kmsg_extra_fields_and_continuation_flag() -> None:
    out, _ = kmsg("6,2,1234,c,caller=T0;Command line: ro\n12,3,1235,-;hello")
    msgs = messages(out)
    assert [(m.message, m.level, m.seq) for m in msgs] == [("Command line: ro", 6, 2), ("hello", 4, 3)]


def test_kmsg_escapes_are_decoded_and_split() -> None:
    out, _ = kmsg("4,903,1,-;Mem-Info:\\x0a free:20000 free_pcp:10\\x0apath C:\\x5cx caf\\xc3\\xa9")
    (msg,) = messages(out)
    assert msg.message == "Mem-Info:\n free:20000 free_pcp:10\npath C:\\x café"


def test_kmsg_dictionary_lines_ignored_and_garbage_is_an_issue() -> None:
    out, ctx = kmsg("6,1,1,-;a\n SUBSYSTEM=pci\n DEVICE=+pci:0000:00:1f.3\n\ngarbage")
    (issue,) = issues_of(out)
    assert (issue.line_no, issue.reason, issue.unparsed) == (5, "not a /dev/kmsg record", True)
    assert (ctx.parsed_lines, ctx.ignored_lines) == (1, 3)


# ------------------------------------------------------------------ sniffing


@pytest.mark.parametrize(
    ("text", "dmesg_min", "kmsg_max"),
    [
        ("[  152.104016] a\n[  152.104043] b", 90, 0),
        ("[Wed Dec  2 13:30:19 2026] a\n[Wed Dec  2 13:30:19 2026] b", 90, 0),
        ("2026-12-02T13:30:19,104016+00:00 a\n2026-12-02T13:30:19,104043+00:00 b", 90, 0),
        ("<4>[  152.104016] a\n<6>[  152.104043] b", 90, 0),
        ("kern  :warn  : [  152.104016] a\nkern  :info  : [  152.104043] b", 90, 0),
    ],
)
def test_sniff_dmesg_styles(text: str, dmesg_min: int, kmsg_max: int) -> None:
    assert get_parser("dmesg").sniff(head(text)) >= dmesg_min  # type: ignore[union-attr]
    assert get_parser("kmsg").sniff(head(text)) <= kmsg_max  # type: ignore[union-attr]


def test_sniff_kmsg() -> None:
    text = f"4,424,152104016,-;{HEADER_6X}\n SUBSYSTEM=x\n3,504,152104816,-;{KILL_6X}"
    assert get_parser("kmsg").sniff(head(text)) == 95  # type: ignore[union-attr]
    assert get_parser("dmesg").sniff(head(text)) == 0  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "text",
    [
        # journalctl -o short-monotonic (with and without hostname)
        "[10800.120000] gpu-node-7 systemd[1]: Starting x.service...\n"
        "[20525.331000] gpu-node-7 kernel: "
        + HEADER_6X
        + "\n[20525.331101] gpu-node-7 kernel:  oom_kill_process+0x8",
        "[10800.120000] systemd[1]: Starting x.service...\n[20525.331000] kernel: " + HEADER_6X,
        "[10800.120000] systemd[1]: Starting x.service...\n[10800.2] python3[5150]: hi\n[10800.3] sshd[9]: a",
        # syslog, RFC 3339 syslog (a dot, not a comma), SGLang
        "Jun 20 12:47:02 new-db1 kernel: [15180285.537297] " + HEADER_6X,
        "2026-12-02T13:30:19.104816+00:00 host kernel: " + HEADER_6X,
        "[2025-03-14 09:00:20 TP0] Load weight begin. avail mem=138.62 GB",
    ],
)
def test_sniff_refuses_lookalikes(text: str) -> None:
    assert get_parser("dmesg").sniff(head(text)) <= 5  # type: ignore[union-attr]
    assert get_parser("kmsg").sniff(head(text)) == 0  # type: ignore[union-attr]


def test_sniff_prefix_less_copy() -> None:
    text = f"docker0: port 2(veth1) entered blocking state\n{HEADER_6X}\nCall Trace:\n{KILL_6X}"
    assert get_parser("dmesg").sniff(head(text)) == 40  # type: ignore[union-attr]
    with_systemd = f"Started foo.service - Foo.\n{HEADER_6X}\n{KILL_6X}"
    assert get_parser("dmesg").sniff(head(with_systemd)) == 10  # type: ignore[union-attr]
    assert get_parser("dmesg").sniff(head("hello world\nnothing kernel here")) == 0  # type: ignore[union-attr]
    assert get_parser("dmesg").sniff(head("")) == 0  # type: ignore[union-attr]


# ------------------------------------------------------------------ KernelStream API


def test_stream_inner_stamp_gives_monotonic_and_keeps_wall_time() -> None:
    wall = datetime(2025, 6, 20, 12, 47, 4, tzinfo=UTC)
    out = stream(["[15180286.180369] " + KILL_6X], ts=wall, ts_raw="Jun 20 12:47:04", ts_inferred="year")
    msg, kill = out
    assert (msg.monotonic_s, msg.ts, msg.ts_inferred, msg.message) == (15180286.180369, wall, "year", KILL_6X)
    assert (kill.monotonic_s, kill.ts, kill.ts_raw) == (15180286.180369, wall, "Jun 20 12:47:04")


def test_stream_callers_monotonic_wins_over_inner_stamp() -> None:
    (msg,) = stream(["[    9.000000] [    T12] hello"], monotonic_s=1.5)
    assert (msg.monotonic_s, msg.message) == (1.5, "hello")


def test_stream_rsyslog_escapes() -> None:
    out = stream(
        [
            HEADER_6X,
            "Mem-Info:",
            "active_anon:33632 inactive_anon:1327714 isolated_anon:0#012 active_file:43#012 free:23902 free_pcp:1055",
            "Node 0 Normal free:37372kB min:35588kB low:44484kB high:53380kB",
            KILL_6X.replace("Memory cgroup out", "Out"),
        ]
    )
    msg = messages(out)[2]
    assert (
        msg.message
        == "active_anon:33632 inactive_anon:1327714 isolated_anon:0\n active_file:43\n free:23902 free_pcp:1055"
    )
    (kill,) = kills(out)
    assert (kill.free_pages, kill.free_kb, kill.scope) == (23902, 37372, "global")


def test_stream_journald_multi_line_message_with_task_table() -> None:
    table = (
        "Tasks state (memory values in pages):\n"
        "[  pid  ]   uid  tgid total_vm      rss pgtables_bytes swapents oom_score_adj name\n"
        "[   2383]     0  2383   135290   132377  1110016        0          -900 sglang::schedul"
    )
    out = stream([HEADER_6X, table, KILL_6X.replace(" oom_score_adj:0", "")], boot_id="b1", level=6)
    (task,) = records_of(out, OomTask)
    assert (task.line_no, task.pid, task.pgtables_bytes, task.oom_score_adj) == (2, 2383, 1110016, -900)
    (kill,) = kills(out)
    assert kill.oom_score_adj == -900  # from the task table: this kill line has none
    assert messages(out)[1].boot_id == "b1"


def test_stream_never_touches_counters() -> None:
    ctx = ParseContext()
    stream([HEADER_6X, KILL_6X, "garbage"], ctx)
    assert (ctx.parsed_lines, ctx.ignored_lines) == (0, 0)


def test_stream_anchor_by_boot_id() -> None:
    anchors = BootAnchors(
        [
            BootAnchor("b1", "h", datetime(2026, 12, 2, 13, 27, 47, tzinfo=UTC), "journal"),
            BootAnchor("b2", "h", datetime(2026, 12, 9, 0, 0, 0, tzinfo=UTC), "journal"),
        ]
    )
    ctx = ParseContext(anchors=anchors, boot_time=datetime(2020, 1, 1, tzinfo=UTC))
    msg, kill = stream([KILL_6X], ctx, monotonic_s=152.104816, boot_id="b1", host="h")
    assert (msg.ts, msg.ts_inferred) == (datetime(2026, 12, 2, 13, 30, 19, 104816, tzinfo=UTC), Inferred.BOOT)
    assert (kill.ts, kill.ts_inferred) == (msg.ts, Inferred.BOOT)


def test_stream_boot_id_without_anchor_uses_boot_time_never_another_boot() -> None:
    anchors = BootAnchors([BootAnchor("b2", "h", datetime(2026, 12, 9, tzinfo=UTC), "journal")])
    ctx = ParseContext(anchors=anchors)
    (msg,) = stream(["x"], ctx, monotonic_s=10.0, boot_id="b1", host="h")
    assert (msg.ts, msg.ts_inferred) == (None, None)
    ctx = ParseContext(anchors=anchors, boot_time=datetime(2026, 1, 1, tzinfo=UTC))
    (msg,) = stream(["x"], ctx, monotonic_s=10.0, boot_id="b1", host="h")
    assert msg.ts == datetime(2026, 1, 1, 0, 0, 10, tzinfo=UTC)


def test_dmesg_file_boot_time_beats_a_guessed_anchor() -> None:
    text = "[   10.000000] x"
    anchors = BootAnchors([BootAnchor("b2", None, datetime(2026, 12, 9, tzinfo=UTC), "journal")])
    ctx = make_context(boot_time="2026-01-01T00:00:00+00:00", anchors=anchors)
    from postmortem.parsers.base import run_parser

    out, _ = run_parser(get_parser("dmesg"), text, ctx)  # type: ignore[arg-type]
    assert messages(out)[0].ts == datetime(2026, 1, 1, 0, 0, 10, tzinfo=UTC)
    out, _ = run_parser(get_parser("dmesg"), text, make_context(anchors=anchors))  # type: ignore[arg-type]
    assert (messages(out)[0].ts, messages(out)[0].ts_inferred) == (
        datetime(2026, 12, 9, 0, 0, 10, tzinfo=UTC),
        "boot",
    )


def test_no_anchor_leaves_ts_null() -> None:
    out, ctx = dmesg("[   10.000000] x")
    assert ctx.notes == [
        "boot-relative kernel stamps and no boot time known: ts stays NULL until a journal of "
        "that boot is ingested — with boot ids (-o export or json) or the same OOM or Xid "
        "kernel lines — and the build is run, or --boot-time gives that boot's start (uptime -s)"
    ]
    assert (messages(out)[0].ts, messages(out)[0].ts_inferred, messages(out)[0].monotonic_s) == (
        None,
        None,
        10.0,
    )


# ------------------------------------------------------------------ OOM assembly, one case per branch


def test_kill_line_alone_is_a_kill_with_header_fields_null() -> None:
    (kill,) = kills(stream([KILL_6X]))
    assert (kill.victim_pid, kill.victim_comm, kill.victim_uid, kill.anon_rss_kb) == (
        2383,
        "sglang::schedul",
        0,
        523008,
    )
    assert (kill.file_rss_kb, kill.shmem_rss_kb, kill.pgtables_kb, kill.total_vm_kb) == (
        6500,
        0,
        1084,
        541160,
    )
    assert (kill.scope, kill.unit, kill.header_line_no, kill.invoker_comm, kill.gfp_mask) == (
        "memcg",
        None,
        None,
        None,
        None,
    )
    assert kill.oom_id == ParseContext().make_id(1)
    assert kill.killer == "kernel"


def test_storm_gives_one_row_per_kill() -> None:
    lines = [
        "oom_kill_process: 70 callbacks suppressed",
        KILL_6X,
        KILL_6X.replace("2383", "2384"),
        "oom_reaper: reaped process 2383 (sglang::schedul), now anon-rss:0kB, file-rss:0kB, shmem-rss:0kB",
        KILL_6X.replace("2383", "2385"),
    ]
    rows = kills(stream(lines))
    assert [k.victim_pid for k in rows] == [2383, 2384, 2385]
    assert len({k.oom_id for k in rows}) == 3


def test_group_kills_share_the_event() -> None:
    lines = [
        HEADER_6X,
        "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,"
        "oom_memcg=/system.slice/a.service,task_memcg=/system.slice/a.service/worker,task=x,pid=2383,uid=0",
        KILL_6X,
        "Tasks in /system.slice/a.service are going to be killed due to memory.oom.group set",
        KILL_6X.replace("2383", "2390"),
    ]
    a, b = kills(stream(lines))
    assert a.oom_id == b.oom_id == ParseContext().make_id(1)
    assert (a.cgroup, a.unit) == ("/system.slice/a.service/worker", "a.service")
    assert (b.victim_pid, b.cgroup, b.unit, b.header_line_no) == (
        2390,
        "/system.slice/a.service",
        "a.service",
        1,
    )


def test_a_group_kill_names_the_chosen_victim_again_and_it_is_one_kill() -> None:
    """memory.oom.group: the kernel kills the chosen victim, then every task of the cgroup,
    the victim among them (its second line is no second kill; scenario finding F08)."""
    lines = [
        HEADER_6X,
        KILL_6X,
        "Tasks in /system.slice/a.service are going to be killed due to memory.oom.group set",
        KILL_6X,
        KILL_6X.replace("2383", "2390"),
    ]
    rows = kills(stream(lines))
    assert [k.victim_pid for k in rows] == [2383, 2390]


def test_group_ends_at_the_first_line_that_is_not_a_group_kill() -> None:
    lines = [
        HEADER_6X,
        KILL_6X,
        "Tasks in /system.slice/a.service are going to be killed due to memory.oom.group set",
        KILL_6X.replace("2383", "2390"),
        "oom_reaper: reaped process 2383 (sglang::schedul), now anon-rss:0kB, file-rss:0kB, shmem-rss:0kB",
        KILL_6X.replace("2383", "2391"),  # a later kill whose dump was ratelimited: an event of its own
    ]
    a, b, c = kills(stream(lines))
    assert a.oom_id == b.oom_id != c.oom_id
    assert (c.victim_pid, c.header_line_no, c.cgroup, c.invoker_comm) == (2391, None, None, None)


def test_header_alone_gives_a_row_without_victim() -> None:
    (kill,) = kills(
        stream([HEADER_6X, "CPU: 0 UID: 0 PID: 2383 Comm: sglang::schedul Not tainted 6.18.44 #1"])
    )
    assert (kill.victim_pid, kill.line_no, kill.header_line_no, kill.message) == (None, 1, 1, HEADER_6X)
    assert (kill.invoker_comm, kill.invoker_pid, kill.kernel_release, kill.alloc_order) == (
        "sglang::schedul",
        2383,
        "6.18.44",
        0,
    )
    assert kill.gfp_mask == "0xcc0(GFP_KERNEL)"


def test_summary_without_kill_line_names_the_victim() -> None:
    summary = (
        "oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,"
        "task_memcg=/system.slice/varnish.service,task=cache-main,pid=3117813,uid=991"
    )
    (kill,) = kills(stream([HEADER_6X, summary]))
    assert (kill.victim_pid, kill.victim_comm, kill.victim_uid, kill.scope, kill.unit) == (
        3117813,
        "cache-main",
        991,
        "global",
        "varnish.service",
    )
    assert (kill.line_no, kill.anon_rss_kb) == (2, None)


def test_choice_line_without_kill_line() -> None:
    (kill,) = kills(stream(["Out of memory: Kill process 1532 (badsysprogram) score 919 or sacrifice child"]))
    assert (kill.victim_pid, kill.victim_comm, kill.scope) == (1532, "badsysprogram", "global")


def test_sacrificed_child_is_the_victim() -> None:
    lines = [
        "Memory cgroup out of memory: Kill process 5000 (httpd) score 300 or sacrifice child",
        "Killed process 5001 (httpd) total-vm:400000kB, anon-rss:200000kB, file-rss:100kB",
    ]
    (kill,) = kills(stream(lines))
    assert (kill.victim_pid, kill.scope, kill.anon_rss_kb, kill.shmem_rss_kb) == (5001, "memcg", 200000, None)


def test_no_killable_processes() -> None:
    rows = kills(stream([HEADER_6X, "Out of memory and no killable processes...", KILL_6X]))
    assert [(k.victim_pid, k.message, k.scope) for k in rows] == [
        (None, "Out of memory and no killable processes...", "global"),
        (2383, KILL_6X, "memcg"),
    ]


def test_new_header_ends_an_event_without_kill() -> None:
    rows = kills(stream([HEADER_6X, HEADER_6X.replace("sglang::schedul", "python3"), KILL_6X]))
    assert [(k.invoker_comm, k.victim_pid) for k in rows] == [("sglang::schedul", None), ("python3", 2383)]


def test_event_window_ends_a_stale_event() -> None:
    ks = KernelStream(ParseContext())
    out = list(ks.feed(1, HEADER_6X, ts=None, ts_raw=None, ts_inferred=None, monotonic_s=10.0, host=None))
    out += ks.feed(2, KILL_6X, ts=None, ts_raw=None, ts_inferred=None, monotonic_s=500.0, host=None)
    rows = kills(out)
    assert [(k.victim_pid, k.header_line_no) for k in rows] == [(None, 1), (2383, None)]


@pytest.mark.parametrize(
    ("line", "pid", "comm", "uid", "vm", "anon", "file_", "shmem", "pgt", "osa"),
    [
        # RHEL 6
        (
            "Killed process 40738, UID 27, (mysqld) total-vm:6424316kB, anon-rss:13128kB, file-rss:4kB",
            40738, "mysqld", 27, 6424316, 13128, 4, None, None, None,
        ),
        # RHEL 7
        (
            "Killed process 4242 (python3), UID 0, total-vm:100kB, anon-rss:90kB, file-rss:0kB, shmem-rss:0kB",
            4242, "python3", 0, 100, 90, 0, 0, None, None,
        ),
        # 2.6.32–2.6.35
        ("Killed process 1 (a b) vsz:100kB, anon-rss:90kB, file-rss:5kB", 1, "a b", None, 100, 90, 5, None, None, None),
        # 2.6.2x
        ("Out of memory: Killed process 4100 (postgres).", 4100, "postgres", None, None, None, None, None, None, None),
        # ≈5.1–5.3
        (
            "Out of memory: Killed process 9 (x) total-vm:10kB, anon-rss:8kB, file-rss:1kB, shmem-rss:0kB, UID:1000",
            9, "x", 1000, 10, 8, 1, 0, None, None,
        ),
        # names with parentheses, spaces and colons
        (
            "Out of memory: Killed process 7 (((resolved))) total-vm:1kB, anon-rss:1kB, file-rss:0kB, shmem-rss:0kB, "
            "UID:0 pgtables:4kB oom_score_adj:-1000",
            7, "((resolved))", 0, 1, 1, 0, 0, 4, -1000,
        ),
        (
            "Out of memory: Killed process 8 (tmux: client) total-vm:1kB, anon-rss:2kB, file-rss:0kB, shmem-rss:0kB",
            8, "tmux: client", None, 1, 2, 0, 0, None, None,
        ),
    ],
)  # fmt: skip
def test_kill_line_variants(
    line: str, pid: int, comm: str, uid: int | None, vm: int | None, anon: int | None,
    file_: int | None, shmem: int | None, pgt: int | None, osa: int | None,
) -> None:  # fmt: skip
    (kill,) = kills(stream([line]))
    got = (kill.victim_pid, kill.victim_comm, kill.victim_uid, kill.total_vm_kb, kill.anon_rss_kb)
    assert got == (pid, comm, uid, vm, anon)
    assert (kill.file_rss_kb, kill.shmem_rss_kb, kill.pgtables_kb, kill.oom_score_adj) == (
        file_,
        shmem,
        pgt,
        osa,
    )


@pytest.mark.parametrize(
    ("header", "comm", "gfp", "order", "osa"),
    [
        ("postgres invoked oom-killer: gfp_mask=0x1201d2, order=0, oomkilladj=0", "postgres", "0x1201d2", 0, None),
        ("php-fpm invoked oom-killer: gfp_mask=0x280da, order=0, oom_adj=0, oom_score_adj=-17", "php-fpm", "0x280da", 0, -17),
        ("kswapd0 invoked oom-killer: gfp_mask=0xd0, order=2, oom_score_adj=0", "kswapd0", "0xd0", 2, 0),
        (
            "in:imjournal invoked oom-killer: gfp_mask=0x14200ca(GFP_HIGHUSER_MOVABLE), nodemask=(null), order=0, "
            "oom_score_adj=0",
            "in:imjournal", "0x14200ca(GFP_HIGHUSER_MOVABLE)", 0, 0,
        ),
        ("bash invoked oom-killer: gfp_mask=0x0(), order=-1, oom_score_adj=0", "bash", "0x0()", -1, 0),
    ],
)  # fmt: skip
def test_header_variants(header: str, comm: str, gfp: str, order: int, osa: int | None) -> None:
    # the invoker's oom_score_adj only reaches the row when the invoker is the victim
    lines = [
        header,
        f"CPU: 0 PID: 77 Comm: {comm} Not tainted 5.4.0 #1",
        f"Killed process 77 ({comm}).",
    ]
    (kill,) = kills(stream(lines))
    assert (kill.invoker_comm, kill.gfp_mask, kill.alloc_order, kill.oom_score_adj) == (comm, gfp, order, osa)


def test_bad_oom_lines_are_warnings_and_still_stored() -> None:
    lines = [
        "x invoked oom-killer: gfp_mask=garbage",
        "Killed process abc (x)",
        "oom-kill:constraint=CONSTRAINT_NONE,garbage",
        "NVRM: Xid (PCI:0000:9b:00): notanumber",
    ]
    out = stream(lines)
    issues = issues_of(out)
    assert [(i.line_no, i.reason, i.unparsed) for i in issues] == [
        (1, "OOM header not understood", False),
        (2, "OOM kill line not understood", False),
        (3, "oom-kill summary not understood", False),
        (4, "NVIDIA Xid line not understood", False),
    ]
    assert len(messages(out)) == 4
    assert not kills(out)


def test_memcg_counters_and_unlimited_limits() -> None:
    lines = [
        HEADER_6X,
        "memory: usage 524288kB, limit 524288kB, failcnt 0",
        "memory+swap: usage 524288kB, limit 18014398509481983kB, failcnt 0",
        "swap: usage 1024kB, limit 9007199254740988kB, failcnt 0",
        "kmem: usage 1144kB, limit 9007199254740988kB, failcnt 0",
        KILL_6X,
    ]
    (kill,) = kills(stream(lines))
    assert (kill.memcg_usage_kb, kill.memcg_limit_kb, kill.memsw_usage_kb, kill.memsw_limit_kb) == (
        524288,
        524288,
        524288,
        None,
    )
    assert (kill.swap_usage_kb, kill.swap_limit_kb) == (1024, None)


def test_task_in_line_of_old_memcg_ooms() -> None:
    lines = [
        "Task in /docker/2e08 killed as a result of limit of /docker",
        "Memory cgroup out of memory: Kill process 1381 (gunpowder-memho) score 1046 or sacrifice child",
        "Killed process 1381 (gunpowder-memho) total-vm:2121528kB, anon-rss:18624kB, file-rss:2140kB, shmem-rss:0kB",
    ]
    (kill,) = kills(stream(lines))
    assert (kill.cgroup, kill.oom_memcg, kill.unit, kill.scope) == (
        "/docker/2e08",
        "/docker",
        "/docker/2e08",
        "memcg",
    )


def test_memory_limit_reached_line() -> None:
    (kill,) = kills(stream(["Memory limit reached of cgroup /mem2", "Killed process 5 (x)."]))
    assert (kill.oom_memcg, kill.scope, kill.unit) == ("/mem2", "memcg", "/mem2")


def test_cpuset_gives_the_unit_of_old_global_ooms() -> None:
    lines = [
        "a invoked oom-killer: gfp_mask=0xd0, order=0, oom_score_adj=0",
        "a cpuset=6c6fcab8 mems_allowed=0",
        "Killed process 5 (a).",
    ]
    (kill,) = kills(stream(lines))
    assert (kill.cpuset, kill.unit) == ("6c6fcab8", "6c6fcab8")


@pytest.mark.parametrize(
    ("constraint", "scope"),
    [
        ("CONSTRAINT_NONE", "global"),
        ("CONSTRAINT_MEMCG", "memcg"),
        ("CONSTRAINT_CPUSET", "cpuset"),
        ("CONSTRAINT_MEMORY_POLICY", "mempolicy"),
    ],
)
def test_scope_from_constraint(constraint: str, scope: str) -> None:
    summary = f"oom-kill:constraint={constraint},nodemask=0-1,cpuset=/,mems_allowed=0-1,global_oom,task_memcg=/,task=a,b,pid=5,uid=7"
    (kill,) = kills(stream([summary, "Killed process 5 (a,b)."]))
    assert (kill.scope, kill.victim_uid, kill.unit, kill.cgroup) == (scope, 7, None, "/")


def test_seven_digit_pids_and_names_with_spaces_in_the_task_table() -> None:
    lines = [
        "[  pid  ]   uid  tgid total_vm      rss pgtables_bytes swapents oom_score_adj name",
        "[3117813]   991 3117813  2926359  1214746 22183936        0             0 cache main worker",
        "[   xyz ] not a row",
        "[ 12]  1  2",
    ]
    out = stream(lines)
    (task,) = records_of(out, OomTask)
    assert (task.pid, task.uid, task.tgid, task.rss_pages, task.pgtables_bytes, task.name) == (
        3117813,
        991,
        3117813,
        1214746,
        22183936,
        "cache main worker",
    )


def test_rhel6_task_table_columns() -> None:
    lines = [
        "[ pid ]   uid  tgid total_vm      rss cpu oom_adj oom_score_adj name",
        "[  788]     0   788     2671        1   7     -17         -1000 udevd",
    ]
    (task,) = records_of(stream(lines), OomTask)
    assert (task.pid, task.cpu, task.oom_adj, task.oom_score_adj, task.rss_pages, task.nr_ptes) == (
        788,
        7,
        -17,
        -1000,
        1,
        None,
    )


def test_nr_pmds_task_table_columns() -> None:
    lines = [
        "[ pid ]   uid  tgid total_vm      rss nr_ptes nr_pmds swapents oom_score_adj name",
        "[ 1381]     0  1381   530382     5191      34       4     5489             0 gunpowder-memho",
    ]
    (task,) = records_of(stream(lines), OomTask)
    assert (task.nr_ptes, task.nr_pmds, task.swapents, task.name) == (34, 4, 5489, "gunpowder-memho")


def test_global_meminfo_fields() -> None:
    lines = [
        HEADER_6X,
        "Mem-Info:",
        "active_anon:405991 inactive_anon:57 isolated_anon:0\n free:12929 slab_reclaimable:1635",
        "Node 0 DMA free:7124kB min:412kB low:512kB high:616kB",
        "Node 0 DMA32 free:44592kB boost:0kB min:44640kB low:55800kB high:66960kB",
        "Node 0 DMA32: 74*4kB (UEM) 125*8kB (UEM) = 44592kB",
        "Free swap  = -4kB",
        "Total swap = 2097148kB",
        "445340 pages RAM",
        "Out of memory: Killed process 1 (x).",
    ]
    (kill,) = kills(stream(lines))
    assert (kill.free_pages, kill.free_kb, kill.free_swap_kb, kill.total_swap_kb, kill.ram_pages) == (
        12929,
        7124 + 44592,
        -4,
        2097148,
        445340,
    )


def test_unrelated_lines_inside_a_dump_change_nothing() -> None:
    lines = [
        HEADER_6X,
        "CPU: 3 PID: 1 Comm: other Not tainted 6.1 #1",
        "CPU: 0 PID: 9 Comm: late Not tainted 6.2 #1",
        KILL_6X,
    ]
    (kill,) = kills(stream(lines))
    assert (kill.invoker_pid, kill.kernel_release) == (1, "6.1")


# ------------------------------------------------------------------ units


@pytest.mark.parametrize(
    ("cgroup", "unit"),
    [
        ("/system.slice/foo.service", "foo.service"),
        ("/system.slice/foo.service/payload", "foo.service"),
        ("/system.slice/docker-4f2e.scope", "docker-4f2e.scope"),
        ("/kubepods.slice/kubepods-burstable.slice/cri-containerd-ab12.scope", "cri-containerd-ab12.scope"),
        ("/docker/2e088fe4", "/docker/2e088fe4"),
        ("/", None),
        ("", None),
        (None, None),
    ],
)
def test_unit_of(cgroup: str | None, unit: str | None) -> None:
    assert unit_of(cgroup) == unit


# ------------------------------------------------------------------ NVIDIA Xids


@pytest.mark.parametrize(
    ("line", "bus", "xid", "pid", "name", "message"),
    [
        (
            "NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, Timeout after 6s of waiting",
            "0000:9b:00", 119, 2024380, "nvidia-smi", "Timeout after 6s of waiting",
        ),
        ("NVRM: Xid (PCI:0000:0a:00): 45, pid='<unknown>', name=<unknown>, Ch 00000008", "0000:0a:00", 45, None, None, "Ch 00000008"),
        ("NVRM: Xid (PCI:0000:02:00): 79, GPU has fallen off the bus.", "0000:02:00", 79, None, None, "GPU has fallen off the bus."),
        ("NVRM: Xid (0000:03:00): 14, Channel 00000001", "0000:03:00", 14, None, None, "Channel 00000001"),
        ("NVRM: Xid (PCI:0018:01:00): 149, NETIR_LINK_EVT Fatal XC0", "0018:01:00", 149, None, None, "NETIR_LINK_EVT Fatal XC0"),
        ("nvidia-gpu: NVRM: Xid (PCI:0000:CB:00): 109, pid=1, name=pt_main_thread, Ch 8", "0000:cb:00", 109, 1, "pt_main_thread", "Ch 8"),
    ],
)  # fmt: skip
def test_xid_forms(line: str, bus: str, xid: int, pid: int | None, name: str | None, message: str) -> None:
    wall = datetime(2025, 2, 23, 16, 24, 18, tzinfo=UTC)
    (row,) = records_of(stream([line], ts=wall, ts_raw="r", ts_inferred="zone"), GpuXid)
    assert (row.bus_id, row.xid, row.pid, row.process_name, row.message) == (bus, xid, pid, name, message)
    assert (row.ts, row.ts_raw, row.ts_inferred, row.line_no) == (wall, "r", "zone", 1)


def test_gpu_at_line_is_a_kernel_message_only() -> None:
    out = stream(["NVRM: GPU at PCI:0000:9b:00: GPU-509665ad-b600-ac93-3616-d754b23d636d"])
    assert [type(o).__name__ for o in out] == ["KernelMessage"]


def test_fallen_off_the_bus_sentences() -> None:
    lines = [
        "NVRM: The NVIDIA GPU 0000:b3:00.0",
        "NVRM: (PCI ID: 10de:26b5) installed in this system has",
        "NVRM: fallen off the bus and is not responding to commands.",
        "NVRM: GPU 0000:b3:00.0: GPU has fallen off the bus.",  # same GPU, same minute: one event
        "NVRM: fallen off the bus and is not responding to commands.",  # no first line: nothing
    ]
    rows = records_of(stream(lines, monotonic_s=10.0), GpuXid)
    assert [(r.line_no, r.bus_id, r.xid, r.pid) for r in rows] == [(3, "0000:b3:00", 79, None)]


def test_normalise_bus_id() -> None:
    assert normalise_bus_id("00000000:9B:00.0") == "0000:9b:00"
    assert normalise_bus_id("zz:yy") == "zz:yy"


# ------------------------------------------------------------------ golden inputs are ours, not copies


def test_fixtures_are_not_copies_of_real_samples() -> None:
    from conftest import DATA, REAL_SAMPLES

    if not REAL_SAMPLES.is_dir():
        pytest.skip("no real samples")
    real = {p.read_bytes() for p in REAL_SAMPLES.rglob("*") if p.is_file()}
    mine = [p for d in ("dmesg", "kmsg") for p in (DATA / d).iterdir() if not p.name.endswith(".jsonl")]
    assert mine
    assert not any(Path(p).read_bytes() in real for p in mine)


def test_dmesg_file_never_takes_a_boot_that_started_after_the_file_was_written() -> None:
    from postmortem.parsers.base import run_parser

    anchors = BootAnchors(
        [
            BootAnchor("b1", "h", datetime(2026, 12, 1, tzinfo=UTC), "journal"),
            BootAnchor("b2", "h", datetime(2026, 12, 9, tzinfo=UTC), "journal"),
        ]
    )
    ctx = make_context(host="h", anchors=anchors, mtime="2026-12-02T00:00:00+00:00")
    out, _ = run_parser(get_parser("dmesg"), "[   10.000000] x", ctx)  # type: ignore[arg-type]
    assert messages(out)[0].ts == datetime(2026, 12, 1, 0, 0, 10, tzinfo=UTC)


def test_a_previous_boots_dmesg_is_not_dated_by_the_boot_its_first_lines_would_fit(tmp_path: Path) -> None:
    """A dmesg saved before a reboot and copied after it: its first stamps would fit the new
    boot (started before the file's mtime), its last ones not — a capture cannot hold records
    newer than itself. The ingest leaves it undated for the build's anchoring, which knows every
    stamp, instead of moving an OOM kill days into the future. A file whose stamps all fit its
    mtime is dated as before."""
    import gzip
    import os

    from postmortem.parsers.base import run_parser

    anchors = BootAnchors(
        [
            BootAnchor("b1", "h", datetime(2026, 3, 16, 8, tzinfo=UTC), "journal"),
            BootAnchor("b2", "h", datetime(2026, 3, 18, 14, 14, 2, tzinfo=UTC), "journal"),
        ]
    )
    mtime = datetime(2026, 3, 18, 14, 40, tzinfo=UTC)
    text = "[    0.000000] Linux version 6.8.0\n[194537.431000] Out of memory: Killed process 48305 (x)\n"
    old = tmp_path / "dmesg-before-reboot.txt"
    old.write_text(text)
    os.utime(old, (mtime.timestamp(), mtime.timestamp()))
    ctx = make_context(host="h", anchors=anchors, mtime=mtime, path=str(old))
    out, _ = run_parser(get_parser("dmesg"), text, ctx)  # type: ignore[arg-type]
    # both boots known: the one before, whose start plus the last stamp is before the mtime
    assert messages(out)[1].ts == datetime(2026, 3, 18, 14, 2, 17, 431000, tzinfo=UTC)
    # only the new boot known (a journal of the current boot): undated, not days ahead
    ctx = make_context(host="h", anchors=BootAnchors(anchors.anchors[1:]), mtime=mtime, path=str(old))
    out, _ = run_parser(get_parser("dmesg"), text, ctx)  # type: ignore[arg-type]
    assert [m.ts for m in messages(out)] == [None, None]
    # the same stamps of a boot that fits: dated by that boot
    short = "[    0.000000] Linux version 6.8.0\n[  900.000000] x\n"
    cur = tmp_path / "dmesg.txt"
    cur.write_text(short)
    ctx = make_context(host="h", anchors=anchors, mtime=mtime, path=str(cur))
    out, _ = run_parser(get_parser("dmesg"), short, ctx)  # type: ignore[arg-type]
    assert messages(out)[1].ts == datetime(2026, 3, 18, 14, 29, 2, tzinfo=UTC)
    # a compressed copy: its last stamp is not read ahead, so the build dates it
    packed = tmp_path / "dmesg.txt.gz"
    packed.write_bytes(gzip.compress(short.encode()))
    ctx = make_context(host="h", anchors=anchors, mtime=mtime, path=str(packed))
    out, _ = run_parser(get_parser("dmesg"), short, ctx)  # type: ignore[arg-type]
    assert messages(out)[1].ts is None


def test_another_logs_lines_in_a_dmesg_file_are_parse_issues() -> None:
    """A journal's, syslog's or a server's stamped line in a dmesg file (files concatenated) is
    not a kernel message with the previous line's seconds since boot: an unparsed parse issue,
    its record ended — so an OOM record of the journal part is not given the dmesg's time."""
    text = (
        "[  517.923918] Out of memory: Killed process 48305 (python3) total-vm:1kB, anon-rss:1kB, "
        "file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:1kB oom_score_adj:0\n"
        "2025-03-14T11:42:05+0000 gpu-node-7 kernel: Memory cgroup out of memory: Killed process 2383 (x)\n"
        "May 25 20:17:19 gpu-node-7 systemd[1]: llm.service: Failed with result 'oom-kill'.\n"
        "[2025-05-12 09:44:02 TP0] Prefill batch. #new-seq: 1\n"
        "[  518.000001] next kernel line\n"
    )
    out, ctx = parse_text("dmesg", text, tz="UTC")
    assert [(i.line_no, i.unparsed) for i in issues_of(out)] == [(2, True), (3, True), (4, True)]
    assert [m.line_no for m in messages(out)] == [1, 5]
    assert ctx.parsed_lines == 2


def test_dmesg_ctime_stamps_in_the_repeated_hour_are_read_in_order() -> None:
    """dmesg -T in Berlin when summer time ends: 02:40 (CEST) then 02:03 — the second time
    round, in CET, after the first: an hour later in UTC, not an hour earlier."""
    text = "[Sun Oct 26 02:40:15 2025] first\n[Sun Oct 26 02:03:00 2025] second\n[Sun Oct 26 03:10:00 2025] third\n"
    out, _ = parse_text("dmesg", text, tz="Europe/Berlin")
    assert [m.ts.strftime("%H:%M:%S") for m in messages(out)] == ["00:40:15", "01:03:00", "02:10:00"]
