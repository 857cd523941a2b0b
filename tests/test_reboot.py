"""GPU memory left behind by a kill: when it was freed (an operator's kill -9), or that a reboot
freed it — and the reboot itself, which the report tells (timeline, summary, impact, advice)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

T0 = datetime(2026, 3, 18, 13, 50, tzinfo=UTC)
KILL = datetime(2026, 3, 18, 14, 2, 17, tzinfo=UTC)
UNIT = "llm.service"


def _stamp(ts: datetime) -> str:
    return ts.strftime("%Y-%m-%dT%H:%M:%S+0000")


def _journal(lines: list[tuple[datetime, str]], boot_marker_at: datetime | None = None) -> str:
    out = []
    marked = False
    for ts, text in sorted(lines, key=lambda p: p[0]):
        if boot_marker_at is not None and not marked and ts >= boot_marker_at:
            out.append("-- Boot 0f1e2d3c4b5a69788796a5b4c3d2e1f0 --")
            marked = True
        out.append(f"{_stamp(ts)} gpu1 {text}")
    return "\n".join(out) + "\n"


def _gpu_csv(samples: list[tuple[datetime, int]]) -> str:
    head = "timestamp, index, pci.bus_id, memory.total [MiB], memory.used [MiB]"
    rows = [
        f"{ts:%Y/%m/%d %H:%M:%S}.000, {i}, 00000000:{0x18 + i:02X}:00.0, 81559 MiB, {used} MiB"
        for ts, used in samples
        for i in range(2)
    ]
    return "\n".join([head, *rows]) + "\n"


def _kill_lines() -> list[tuple[datetime, str]]:
    return [
        (T0, f"systemd[1]: Started {UNIT} - LLM server."),
        (T0 + timedelta(seconds=5), "python3[6021]: [2026-03-18 13:50:05] server_args=ServerArgs(model_path='/m', tp_size=2, port=30000)"),
        (KILL, "kernel: python3 invoked oom-killer: gfp_mask=0x140dca(GFP_HIGHUSER_MOVABLE|__GFP_COMP|__GFP_ZERO), order=0, oom_score_adj=0"),
        (KILL, f"kernel: oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0-1,global_oom,task_memcg=/system.slice/{UNIT},task=python3,pid=6021,uid=998"),
        (KILL, "kernel: Out of memory: Killed process 6021 (python3) total-vm:209715200kB, anon-rss:167160004kB, file-rss:608156kB, shmem-rss:4000kB, UID:998 pgtables:328125kB oom_score_adj:0"),
        (KILL, f"systemd[1]: {UNIT}: A process of this unit has been killed by the OOM killer."),
        (KILL, f"systemd[1]: {UNIT}: Main process exited, code=killed, status=9/KILL"),
        (KILL, f"systemd[1]: {UNIT}: Failed with result 'oom-kill'."),
        (KILL, f"systemd[1]: {UNIT}: Unit process 6028 (sglang::schedul) remains running after unit stopped."),
        (KILL, f"systemd[1]: {UNIT}: Unit process 6029 (sglang::schedul) remains running after unit stopped."),
    ]  # fmt: skip


def _build(cli: Any, tmp_path: Path, journal: str, gpu: str) -> str:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "journal.txt").write_text(journal)
    (logs / "gpu.csv").write_text(gpu)
    out = tmp_path / "reports"
    r = cli("build", "--logs", logs, "--db", tmp_path / "pm.duckdb", "--out", out, "--tz", "UTC")
    assert r.code == 0, r
    (report,) = [p for p in out.glob("*.md") if p.name != "index.md"]
    return report.read_text()


def test_memory_left_behind_is_freed_by_the_operators_kill(cli: Any, tmp_path: Path) -> None:
    freed = KILL + timedelta(seconds=143)
    lines = [
        *_kill_lines(),
        (freed - timedelta(seconds=5), "sudo[7001]:      bob : TTY=pts/0 ; PWD=/home/bob ; USER=root ; COMMAND=/usr/bin/kill -9 6028 6029"),
        (freed + timedelta(seconds=20), f"systemd[1]: Started {UNIT} - LLM server."),
    ]  # fmt: skip
    samples = [(T0 + timedelta(seconds=5 * k), 76000) for k in range(int((freed - T0).total_seconds()) // 5)]
    samples += [(freed + timedelta(seconds=5 * k), 0) for k in range(4)]
    report = _build(cli, tmp_path, _journal(lines), _gpu_csv(samples))
    full = report.split("## E. Full timeline", 1)[1]
    row = next(ln for ln in full.splitlines() if "left behind by the killed run released" in ln)
    assert row.startswith("| 2026-03-18 14:04:40 | gpu |") and "2 min 23 s after the kill" in row
    assert (
        "The memory was freed at 14:04:40 UTC (2 min 23 s after the kill, nvidia-smi), after the " in report
    )
    assert "operator ran `kill -9 6028 6029` at 14:04:35 UTC" in report
    assert "until 14:04:40 UTC, 143 s (2 min 23 s) after it" in report
    assert "host rebooted" not in report.lower()


def test_a_gap_in_the_samples_tells_no_release_time(cli: Any, tmp_path: Path) -> None:
    """nvidia-smi stopped for ten minutes (it hung with the driver): its first sample at 0 MiB
    after that says the memory was freed some time in the gap, not when."""
    samples = [
        (T0 + timedelta(seconds=5 * k), 76000) for k in range(int((KILL - T0).total_seconds()) // 5 + 24)
    ]
    later = KILL + timedelta(minutes=12)
    samples += [(later + timedelta(seconds=5 * k), 0) for k in range(4)]
    report = _build(cli, tmp_path, _journal(_kill_lines()), _gpu_csv(samples))
    assert "left behind by the killed run released" not in report
    assert "The memory was freed" not in report


def test_the_reboot_after_a_hang_is_told(cli: Any, tmp_path: Path) -> None:
    up = KILL + timedelta(minutes=12)
    lines = [
        *_kill_lines(),
        (KILL + timedelta(seconds=1), f"systemd[1]: {UNIT}: Processes still around after final SIGKILL. Entering failed mode."),
        (KILL + timedelta(minutes=2), "kernel: INFO: task sglang::schedul:6028 blocked for more than 122 seconds."),
        (KILL + timedelta(minutes=8), "systemd[1]: Stopping user@1000.service - User Manager for UID 1000..."),
        (up, "kernel: Linux version 6.8.0-60-generic (buildd@lcy02-amd64-054) #63-Ubuntu SMP"),
        (up + timedelta(seconds=45), f"systemd[1]: Started {UNIT} - LLM server."),
        (up + timedelta(seconds=50), "python3[2001]: [2026-03-18 14:15:07] server_args=ServerArgs(model_path='/m', tp_size=2, port=30000)"),
        (up + timedelta(seconds=400), "python3[2001]: [2026-03-18 14:20:57] The server is fired up and ready to roll!"),
    ]  # fmt: skip
    samples = [
        (T0 + timedelta(seconds=5 * k), 76000) for k in range(int((KILL - T0).total_seconds()) // 5 + 24)
    ]
    samples += [(up + timedelta(seconds=40 + 5 * k), 0) for k in range(4)]
    report = _build(cli, tmp_path, _journal(lines, boot_marker_at=up), _gpu_csv(samples))
    full = report.split("## E. Full timeline", 1)[1]
    row = next(ln for ln in full.splitlines() if "| host |" in ln)
    assert row.startswith(
        "| 2026-03-18 14:14:17 | host | host rebooted: first line of boot 0f1e2d3c, 12 min after"
    )
    assert "(the previous boot's last line at 14:10:17 UTC)" in row
    assert "The host was rebooted: the first line of boot 0f1e2d3c is at 14:14:17 UTC" in report
    assert "before it the kernel reported tasks hung" in report
    assert "until the host was rebooted" in report and "The memory was freed" not in report
    assert (
        "| Host rebooted | up again at 2026-03-18 14:14:17 UTC (its first line 12 min after the kill;"
        in report
    )
    assert "**The host hung after the kill and was rebooted** (high)" in report
    assert "Verify with nvidia-smi before starting a replacement" not in report
    assert "Set Restart=" not in report  # it came back with the boot, not by a restart


def test_a_previous_boots_oom_kill_is_dated_by_the_servers_report_of_its_victim(
    cli: Any, tmp_path: Path
) -> None:
    """A dmesg saved before a reboot, and no journal of that boot: nothing dates its seconds
    since boot — but SGLang logged the death of the OOM killer's victim by its pid the moment it
    died. That line dates the file (the same pid and unit), and the kill is an OOM kill with its
    record, not "a signal with no OOM record"."""
    import os

    logs = tmp_path / "logs"
    logs.mkdir()
    boot = datetime(2026, 3, 16, 8, 0, tzinfo=UTC)
    mono = (KILL - boot).total_seconds() + 0.431
    dmesg = logs / "dmesg-before-reboot.txt"
    dmesg.write_text(
        "[    0.000000] Linux version 6.8.0-60-generic (buildd@lcy02-amd64-054) #63-Ubuntu SMP\n"
        f"[{mono - 0.2:13.6f}] python3 invoked oom-killer: gfp_mask=0x140dca(GFP_HIGHUSER_MOVABLE|__GFP_COMP|__GFP_ZERO), order=0, oom_score_adj=0\n"
        f"[{mono:13.6f}] oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0-1,global_oom,task_memcg=/system.slice/{UNIT},task=sglang::schedul,pid=48305,uid=998\n"
        f"[{mono:13.6f}] Out of memory: Killed process 48305 (sglang::schedul) total-vm:209715200kB, anon-rss:137160004kB, file-rss:608156kB, shmem-rss:4000kB, UID:998 pgtables:328125kB oom_score_adj:0\n"
    )  # fmt: skip
    written = (KILL + timedelta(minutes=7)).timestamp()
    os.utime(dmesg, (written, written))
    (logs / "llm.log").write_text(
        "[2026-03-18 13:50:05] server_args=ServerArgs(model_path='/m', tp_size=2, port=30000)\n"
        "[2026-03-18 13:55:00] The server is fired up and ready to roll!\n"
        "[2026-03-18 14:02:17] Subprocess scheduler_0 (pid=48305) crashed with exit code -9. Triggering SIGQUIT for cleanup...\n"
    )  # fmt: skip
    out = tmp_path / "reports"
    r = cli("build", "--logs", logs, "--db", tmp_path / "pm.duckdb", "--out", out, "--tz", "UTC")
    assert r.code == 0, r
    r = cli("incidents", "--db", tmp_path / "pm.duckdb", "--format", "json")
    (inc,) = json.loads(r.out)
    assert (inc["cause"], inc["victim_pid"], inc["unit"]) == ("host_oom", 48305, UNIT)
    # dated within the second SGLang's whole-second stamp leaves: 14:02:17.5 for 14:02:17.431
    assert inc["ts"].startswith("2026-03-18T14:02:17")


def test_a_dmesg_in_seconds_since_boot_is_dated_by_systemds_lines_about_the_same_kill(
    cli: Any, tmp_path: Path
) -> None:
    """dmesg in seconds since boot holding two nights' OOM records of a unit, and the journal
    as a text file with only systemd's lines about those kills (no kernel lines, no boot id):
    each (kill, systemd line) pair proposes a boot time, and the one both kills agree on dates
    the file. The records join their incidents: OOM kills with their victims, not "a signal"."""
    logs = tmp_path / "logs"
    logs.mkdir()
    boot = datetime(2026, 3, 16, 8, 0, tzinfo=UTC)
    nights = [KILL, KILL + timedelta(days=1, minutes=43)]
    dmesg, journal = [], []
    for n, kill in enumerate(nights):
        mono = (kill - boot).total_seconds()
        pid = 6021 + n
        dmesg += [
            f"[{mono - 0.1:13.6f}] python3 invoked oom-killer: gfp_mask=0x140dca(GFP_HIGHUSER_MOVABLE|__GFP_COMP|__GFP_ZERO), order=0, oom_score_adj=0",
            f"[{mono:13.6f}] oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0-1,oom_memcg=/system.slice/{UNIT},task_memcg=/system.slice/{UNIT},task=python3,pid={pid},uid=998",
            f"[{mono:13.6f}] Memory cgroup out of memory: Killed process {pid} (python3) total-vm:209715200kB, anon-rss:167160004kB, file-rss:608156kB, shmem-rss:4000kB, UID:998 pgtables:328125kB oom_score_adj:0",
        ]  # fmt: skip
        journal += [
            (kill + timedelta(seconds=0.3), f"systemd[1]: {UNIT}: A process of this unit has been killed by the OOM killer."),
            (kill + timedelta(seconds=0.9), f"systemd[1]: {UNIT}: Main process exited, code=killed, status=9/KILL"),
            (kill + timedelta(seconds=0.9), f"systemd[1]: {UNIT}: Failed with result 'oom-kill'."),
        ]  # fmt: skip
    (logs / "dmesg.txt").write_text("\n".join(dmesg) + "\n")
    (logs / "journal.txt").write_text(_journal(journal))
    db = tmp_path / "pm.duckdb"
    r = cli("build", "--logs", logs, "--db", db, "--out", tmp_path / "reports", "--tz", "UTC")
    assert r.code == 0, r
    r = cli("incidents", "--db", db, "--format", "json")
    got = [(i["cause"], i["victim_pid"], i["ts"][:19]) for i in json.loads(r.out)]
    assert got == [
        ("cgroup_oom", 6021 + n, kill.strftime("%Y-%m-%dT%H:%M:%S")) for n, kill in enumerate(nights)
    ]


def test_a_dmesg_holding_two_nights_gives_no_clock_offset_from_their_lookalike_lines(
    cli: Any, tmp_path: Path
) -> None:
    """A dmesg of the same boot holds every night's OOM record; a record's lines read the same
    each night (the same process names and pids after a restart). Paired across nights by their
    text, they gave the dmesg file half the nights' distance as a clock offset, which moved its
    kills half a day and made phantom incidents. Only a line printed once in each source pairs."""
    logs = tmp_path / "logs"
    logs.mkdir()
    boot = datetime(2026, 3, 16, 8, 0, tzinfo=UTC)
    nights = [KILL, KILL + timedelta(days=1, minutes=43)]
    record = [
        "python3 invoked oom-killer: gfp_mask=0x140dca(GFP_HIGHUSER_MOVABLE|__GFP_COMP|__GFP_ZERO), order=0, oom_score_adj=0",
        f"oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0-1,global_oom,task_memcg=/system.slice/{UNIT},task=python3,pid=6021,uid=998",
        "Out of memory: Killed process 6021 (python3) total-vm:209715200kB, anon-rss:167160004kB, file-rss:608156kB, shmem-rss:4000kB, UID:998 pgtables:328125kB oom_score_adj:0",
    ]  # fmt: skip
    dmesg = []
    for n, kill in enumerate(nights):
        mono = (kill - boot).total_seconds()
        dmesg += [f"[{mono:13.6f}] {line}" for line in record]
        journal = [(kill, f"kernel: {line}") for line in record] + [
            (kill, f"systemd[1]: {UNIT}: A process of this unit has been killed by the OOM killer."),
            (kill, f"systemd[1]: {UNIT}: Failed with result 'oom-kill'."),
        ]
        (logs / f"journal-{n}.txt").write_text(_journal(journal))
    (logs / "dmesg.txt").write_text("\n".join(dmesg) + "\n")
    db = tmp_path / "pm.duckdb"
    out = tmp_path / "reports"
    r = cli("ingest", logs / "dmesg.txt", "--db", db, "--tz", "UTC", "--boot-time", "2026-03-16 08:00")
    assert r.code == 0, r
    r = cli("build", "--logs", logs, "--db", db, "--out", out, "--tz", "UTC")
    assert r.code == 0, r
    r = cli("incidents", "--db", db, "--format", "json")
    assert [i["ts"][:19] for i in json.loads(r.out)] == ["2026-03-18T14:02:17", "2026-03-19T14:45:17"]
    r = cli("query", "--db", db, "--format", "json", "SELECT offset_s FROM clock_offsets")
    assert all(abs(o["offset_s"]) < 1 for o in json.loads(r.out)), r.out
    # the second night's report says it is a repeat, the first's does not
    first, second = sorted(p for p in out.glob("*.md") if p.name != "index.md")
    assert "kill of this unit on this host in 7 days" not in first.read_text()
    text = second.read_text()
    assert (
        "It is the second kill of this unit on this host in 7 days — the last, 24 h 43 min before, at "
        "2026-03-18 14:02:17 UTC, the same cause." in text
    )
    assert (
        "| Earlier kills of this unit in the 7 days before | 1 — 2026-03-18 14:02 UTC (host RAM exhausted"
        in text
    )


def test_a_slow_load_without_an_incident_is_in_the_index(cli: Any, tmp_path: Path) -> None:
    """A planned restart that loaded in 15 min where the unit's loads took 9–10 min: no kill, no
    report — but the index lists it, judged against the loads before it only."""
    logs = tmp_path / "logs"
    logs.mkdir()
    lines = []
    for day, load_s in ((1, 570), (2, 590), (3, 575), (4, 900)):
        start = datetime(2025, 5, day, 9, 0, tzinfo=UTC)
        ready = start + timedelta(seconds=load_s)
        lines += [
            f"[{start:%Y-%m-%d %H:%M:%S}] server_args=ServerArgs(model_path='/m', tp_size=8, port=30000)",
            f"[{ready:%Y-%m-%d %H:%M:%S}] The server is fired up and ready to roll!",
        ]
    (logs / "sglang-k26.log").write_text("\n".join(lines) + "\n")
    db, out = tmp_path / "pm.duckdb", tmp_path / "reports"
    r = cli("build", "--logs", logs, "--db", db, "--out", out, "--tz", "UTC", "--since", "2025-05-04")
    assert r.code == 0, r
    index = (out / "index.md").read_text()
    assert "## Slow loads" in index
    row = next(ln for ln in index.splitlines() if ln.startswith("| 2025-05-04 09:00:00"))
    # (no journal names a unit: the file's name is not made into one)
    assert "| — | 15 min | 9 min 35 s | 3 | " in row and "sglang-k26.log:7" in row, row
    # a window of the usual loads lists none
    window = ("--since", "2025-05-02", "--until", "2025-05-03 12:00")
    r = cli("build", "--no-ingest", "--db", db, "--out", tmp_path / "b", *window)
    assert r.code == 0 and "## Slow loads" not in (tmp_path / "b" / "index.md").read_text()
