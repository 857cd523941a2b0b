"""A journal read with ``-o short-monotonic`` has no wall-clock times, but the SGLang lines in it
carry their own (issue #27, finding F05): queries/anchor_journal.sql dates each of its boots
from them, so systemd's lines about units (a restart's start) can be put beside the servers'."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

UNIT = "llm.service"
#: two boots (after a reboot monotonic_s starts again); SGLang's whole-second stamps are truncated
JOURNAL = f"""\
-- Logs begin at Thu 2025-05-01 12:00:00 UTC, end at Fri 2025-05-02 08:10:00 UTC. --
[  100.000000] gpu7 systemd[1]: Started {UNIT} - LLM server.
[  102.300000] gpu7 python3[4242]: [2025-05-01 12:01:42] server_args=ServerArgs(model_path='/m', tp_size=8, port=30000)
[  110.700000] gpu7 python3[4242]: [2025-05-01 12:01:50 TP0] Decode batch, #running-req: 3, #token: 100, \
token usage: 0.10, cuda graph: True, gen throughput (token/s): 50.00, #queue-req: 0
[  111.700000] gpu7 python3[4242]: [2025-05-01 12:01:51 TP0] Decode batch, #running-req: 4, #token: 120, \
token usage: 0.11, cuda graph: True, gen throughput (token/s): 51.00, #queue-req: 0
-- Reboot --
[   30.000000] gpu7 systemd[1]: Started {UNIT} - LLM server.
[   32.500000] gpu7 python3[1717]: [2025-05-02 08:00:32] server_args=ServerArgs(model_path='/m', tp_size=8, port=30000)
"""


def test_each_boot_of_a_monotonic_journal_is_dated_by_its_server_lines(cli: Any, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "journal.txt").write_text(JOURNAL)
    db = tmp_path / "pm.duckdb"
    r = cli("build", "--logs", logs, "--db", db, "--out", tmp_path / "out", "--tz", "UTC")
    assert r.code == 0, r
    sql = (
        "SELECT line_no, strftime(ts, '%Y-%m-%d %H:%M:%S.%f') AS t, ts_inferred FROM unit_events "
        "WHERE action = 'started' ORDER BY line_no"
    )
    rows = json.loads(cli("query", "--db", db, "--format", "json", sql).out)
    # boot = median(stamp - monotonic) + 0.5 s: 11:59:59.3 + 0.5 (boot 1), 07:59:59.5 + 0.5 (boot 2)
    assert [(x["t"], x["ts_inferred"]) for x in rows] == [
        ("2025-05-01 12:01:39.800000", "boot"),
        ("2025-05-02 08:00:30.000000", "boot"),
    ]
    again = cli("build", "--db", db, "--out", tmp_path / "out", "--tz", "UTC", "--no-ingest")
    assert again.code == 0, again
    assert json.loads(cli("query", "--db", db, "--format", "json", sql).out) == rows  # idempotent


# ----------------------------------------------------------------------------- the kill as a bound

#: the kernel's record of a cgroup OOM kill, dated by dmesg --time-format iso (QA night 161803/5):
#: the host booted at 2026-07-29T08:00:01.817541Z; "Killed process" is 559300.027389 s after it
DMESG_ISO = """\
2026-07-29T10:00:01,817541+02:00 Linux version 5.15.0-126-generic (buildd@lcy02-amd64-054) (gcc 13.3.0) #1 SMP
2026-08-04T21:21:41,844611+02:00 python3 invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), \
order=0, oom_score_adj=0
2026-08-04T21:21:41,844737+02:00 memory: usage 205870848kB, limit 206569472kB, failcnt 8696
2026-08-04T21:21:41,844755+02:00 Memory cgroup stats for /system.slice/llm.service:
2026-08-04T21:21:41,844773+02:00 Tasks state (memory values in pages):
2026-08-04T21:21:41,844782+02:00 [  pid  ]   uid  tgid total_vm      rss pgtables_bytes swapents oom_score_adj name
2026-08-04T21:21:41,844791+02:00 [  27397]  1001 27397 12599564  6518132   128000        0             0 python3
2026-08-04T21:21:41,844881+02:00 oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0-1,\
oom_memcg=/system.slice/llm.service,task_memcg=/system.slice/llm.service,task=python3,pid=27397,uid=1001
2026-08-04T21:21:41,844930+02:00 Memory cgroup out of memory: Killed process 27397 (python3) total-vm:50398256kB, \
anon-rss:25600672kB, file-rss:419428kB, shmem-rss:52428kB, UID:1001 pgtables:125kB oom_score_adj:0
"""
BOOT_UTC = "2026-07-29 08:00:01.817541"
#: systemd's lines of that kill in a short-monotonic journal: the OOM notice 1.9 ms after the
#: kill, the main process's exit 1.1 s after it
SYSTEMD_OOM = f"""\
[556932.862480] gpu7 systemd[1]: Started {UNIT} - LLM server.
[559300.029289] gpu7 systemd[1]: {UNIT}: A process of this unit has been killed by the OOM killer.
[559301.127389] gpu7 systemd[1]: {UNIT}: Main process exited, code=killed, status=9/KILL
[559301.129389] gpu7 systemd[1]: {UNIT}: Failed with result 'oom-kill'.
"""


def _times(cli: Any, tmp_path: Path, files: dict[str, str]) -> dict[str, Any]:
    """Build ``files``; the journal's dated lines (line → time) and its boot as the store has it."""
    logs = tmp_path / "logs"
    logs.mkdir()
    for name, text in files.items():
        (logs / name).write_text(text)
    db = tmp_path / "pm.duckdb"
    r = cli("build", "--logs", logs, "--db", db, "--out", tmp_path / "out", "--tz", "Europe/Berlin")
    assert r.code == 0, r
    sql = (
        "SELECT j.line_no, strftime(j.ts, '%Y-%m-%d %H:%M:%S.%f') AS t, "
        "strftime(j.ts - to_microseconds(CAST(round(j.monotonic_s * 1e6) AS BIGINT)), "
        "'%Y-%m-%d %H:%M:%S.%f') AS boot, s.notes "
        "FROM journal_entries AS j JOIN sources AS s USING (source_id) "
        "WHERE s.path LIKE '%journal.txt' ORDER BY j.line_no"
    )
    rows = json.loads(cli("query", "--db", db, "--format", "json", sql).out)
    return {
        "lines": {x["line_no"]: x["t"] for x in rows},
        "boots": sorted({x["boot"] for x in rows if x["boot"]}),
        "notes": rows[0]["notes"] if rows else None,
    }


def test_systemd_s_exit_line_is_no_anchor_of_the_kill(cli: Any, tmp_path: Path) -> None:
    """QA night 161803/5: the journal was dated by pairing the main process's exit, 1.1 s after the
    kill, with the kill, which put systemd's OOM notice 1.1 s before the kill. The pairs are lower
    bounds of the boot: the highest (the notice's) dates it, 1 µs after the kill at the least."""
    got = _times(cli, tmp_path, {"journal.txt": SYSTEMD_OOM, "dmesg.log": DMESG_ISO})
    # the truth: boot 08:00:01.817541, the notice at 19:21:41.846830, the exit at 19:21:42.944930
    assert got["lines"][2] == "2026-08-04 19:21:41.844931"  # the kill's µs + 1: not before it
    assert got["lines"][3] == "2026-08-04 19:21:42.943031"
    assert got["boots"] == ["2026-07-29 08:00:01.815642"]  # 1.9 ms early: a bound, at most that
    assert got["notes"] == (
        "seconds since boot, dated by systemd's lines of an OOM kill the kernel dated (no earlier than the kill)"
    )


def test_a_kill_whose_exit_came_late_is_bounded_by_its_first_line(cli: Any, tmp_path: Path) -> None:
    """The main process reaped 6 s after the kill (a stop timeout): one kill's lines are one
    event, bounded by its first line — not two events that tie, the earlier bound taken."""
    late = SYSTEMD_OOM.replace("[559301.127389]", "[559306.127389]").replace(
        "[559301.129389]", "[559306.129389]"
    )
    got = _times(cli, tmp_path, {"journal.txt": late, "dmesg.log": DMESG_ISO})
    assert got["lines"][2] == "2026-08-04 19:21:41.844931"


# ----------------------------------------------------------------------------- exact anchors

#: the kill as journald shows it: the kernel's lines with dmesg's own stamps (seconds since boot)
KERNEL_OOM = """\
[559300.027070] gpu7 kernel: python3 invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), \
order=0, oom_score_adj=0
[559300.027196] gpu7 kernel: memory: usage 205870848kB, limit 206569472kB, failcnt 8696
[559300.027340] gpu7 kernel: oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0-1,\
oom_memcg=/system.slice/llm.service,task_memcg=/system.slice/llm.service,task=python3,pid=27397,uid=1001
[559300.027389] gpu7 kernel: Memory cgroup out of memory: Killed process 27397 (python3) total-vm:50398256kB, \
anon-rss:25600672kB, file-rss:419428kB, shmem-rss:52428kB, UID:1001 pgtables:125kB oom_score_adj:0
"""


def test_kernel_lines_a_dated_dmesg_also_holds_date_the_journal_exactly(cli: Any, tmp_path: Path) -> None:
    """The journal's kernel lines carry dmesg's stamps: the same line dated in dmesg gives the
    boot to the microsecond, before systemd's lines of the kill (a bound) are looked at."""
    head, tail = SYSTEMD_OOM.split("\n", 1)
    journal = f"{head}\n{KERNEL_OOM}{tail}"
    got = _times(cli, tmp_path, {"journal.txt": journal, "dmesg.log": DMESG_ISO})
    assert got["boots"] == [BOOT_UTC]
    assert got["lines"][5] == "2026-08-04 19:21:41.844930"  # "Killed process", as dmesg dates it
    assert got["lines"][6] == "2026-08-04 19:21:41.846830"  # systemd's notice, 1.9 ms on
    assert (
        got["notes"]
        == "seconds since boot, dated by its kernel lines, as a dated kernel log has them (exact)"
    )


# ----------------------------------------------------------------------------- the header

HEADER = "-- Journal begins at Tue 2026-08-04 20:37:31 CEST, ends at Tue 2026-08-04 21:47:31 CEST. --\n"
#: the journal's first and last entries (18:37:31.680021 and 19:47:31.680021 UTC, truly)
FIRST = "[556649.862480] gpu7 CRON[1200]: (root) CMD (true)\n"
LAST = "[560849.862480] gpu7 CRON[1201]: (root) CMD (true)\n"


def test_a_whole_journal_s_header_dates_it_to_the_second(cli: Any, tmp_path: Path) -> None:
    """No line of a dated source: the header's first and last times (whole seconds) put the boot
    within a second, the middle of it taken; Data coverage's first line agrees with the header."""
    got = _times(cli, tmp_path, {"journal.txt": HEADER + FIRST + SYSTEMD_OOM + LAST})
    assert got["boots"] == ["2026-07-29 08:00:01.637520"]  # the truth: 08:00:01.817541
    assert got["lines"][2] == "2026-08-04 18:37:31.500000"  # "Journal begins at … 20:37:31 CEST"
    assert got["lines"][7] == "2026-08-04 19:47:31.500000"
    assert got["notes"] == "seconds since boot, dated by its header's first and last times (to the second)"


def test_a_filtered_journal_s_header_dates_nothing(cli: Any, tmp_path: Path) -> None:
    """journalctl -u/-b/--since prints the whole journal's times in the header: the file's first
    line is not the journal's first, and the two times do not agree on a boot."""
    early = HEADER.replace("20:37:31", "08:02:11")
    got = _times(cli, tmp_path, {"journal.txt": early + FIRST + SYSTEMD_OOM + LAST})
    assert got["boots"] == []


def test_the_kill_s_bound_raises_a_boot_the_header_dates(cli: Any, tmp_path: Path) -> None:
    """The header says the boot to a second; systemd's notice of the kill says it is no earlier
    than 1.9 ms before the truth: the bound, within that second, wins (QA night 161803/5)."""
    files = {"journal.txt": HEADER + FIRST + SYSTEMD_OOM + LAST, "dmesg.log": DMESG_ISO}
    got = _times(cli, tmp_path, files)
    assert got["boots"] == ["2026-07-29 08:00:01.815642"]
    assert got["lines"][2] == "2026-08-04 18:37:31.678122"  # Data coverage's first: 18:37:31
    assert got["lines"][4] == "2026-08-04 19:21:41.844931"  # after the kill
    assert got["notes"] == (
        "seconds since boot, dated by its header's first and last times (to the second), "
        "no earlier than the OOM kill systemd's lines report"
    )


def test_the_kill_s_bound_raises_a_boot_server_lines_date(cli: Any, tmp_path: Path) -> None:
    """A server's whole-second stamps put the boot within a second (the middle taken: 0.32 s
    early here, its line written 0.82 s into its second), which would put systemd's notice before
    the kill; the notice's bound, within 2 s above, raises it."""
    batch = (
        "[559290.000000] gpu7 python3[4242]: [2026-08-04 21:21:31 TP0] Decode batch, #running-req: 3, "
        "#token: 100, token usage: 0.10, cuda graph: True, gen throughput (token/s): 50.00, #queue-req: 0\n"
    )
    head, tail = SYSTEMD_OOM.split("\n", 1)
    got = _times(cli, tmp_path, {"journal.txt": f"{head}\n{batch}{tail}", "dmesg.log": DMESG_ISO})
    assert got["boots"] == ["2026-07-29 08:00:01.815642"]  # not 08:00:01.500000
    assert got["lines"][3] == "2026-08-04 19:21:41.844931"
