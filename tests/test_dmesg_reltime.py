"""``dmesg -e``/``-H`` (issue #27, finding F06): the local minute on a line whose minute changed,
else the seconds since the line before. Its OOM record is dated to the minute and joined with
systemd's lines about the same kill, which give it its seconds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

UNIT = "llm.service"
#: the kill: 0.200077 s after its minute's first line; systemd logs it at 22:00:11 (UTC here)
DMESG = """\
[Oct 2 10:01] Linux version 6.8.0-49-generic (buildd@lcy02-amd64-054) (gcc 13.2.0) #49-Ubuntu SMP
[  +0.000001] Command line: BOOT_IMAGE=/vmlinuz-6.8.0-49-generic root=UUID=5f0c2e1d ro
[Oct15 21:58] nvidia-nvswitch0: open (major=505)
[Oct15 22:00] python3 invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0
[  +0.000010] memory: usage 340094212kB, limit 340787200kB, failcnt 9790
[  +0.000009] [  pid  ]   uid  tgid total_vm      rss pgtables_bytes swapents oom_score_adj name
[  +0.000009] [  58078]  1001 58078 19471225 10812920  9000000        0             0 python3
[  +0.100000] oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0-1,\
oom_memcg=/system.slice/llm.service,task_memcg=/system.slice/llm.service,task=python3,pid=58078,uid=1001
[  +0.100049] Memory cgroup out of memory: Killed process 58078 (python3) total-vm:77884900kB, \
anon-rss:42779824kB, file-rss:419428kB, shmem-rss:52428kB, UID:1001 pgtables:8789kB oom_score_adj:0
"""
SYSLOG = f"""\
Oct 15 21:50:00 gpu7 systemd[1]: Started {UNIT} - LLM server.
Oct 15 22:00:11 gpu7 systemd[1]: {UNIT}: A process of this unit has been killed by the OOM killer.
Oct 15 22:00:11 gpu7 systemd[1]: {UNIT}: Main process exited, code=killed, status=9/KILL
Oct 15 22:00:11 gpu7 systemd[1]: {UNIT}: Failed with result 'oom-kill'.
"""


def _build(cli: Any, tmp_path: Path, *, journal: bool) -> tuple[list[dict[str, Any]], list[Any]]:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "dmesg-H.txt").write_text(DMESG)
    if journal:
        (logs / "messages").write_text(SYSLOG)
    db = tmp_path / "pm.duckdb"
    r = cli("build", "--logs", logs, "--db", db, "--out", tmp_path / "out", "--tz", "UTC", "--year", "2026")
    assert r.code == 0, r
    incs = json.loads(cli("incidents", "--db", db, "--format", "json").out)
    rows = json.loads(
        cli(
            "query",
            "--db",
            db,
            "--format",
            "json",
            "SELECT strftime(ts, '%H:%M:%S.%f') AS t, ts_inferred, victim_pid FROM oom_kills",
        ).out
    )
    return incs, rows


def test_the_kill_takes_its_seconds_from_systemds_lines(cli: Any, tmp_path: Path) -> None:
    incs, kills = _build(cli, tmp_path, journal=True)
    # the minute's rows moved together, the kill to systemd's second (the earliest it can be)
    assert [(k["t"], k["ts_inferred"], k["victim_pid"]) for k in kills] == [
        ("22:00:11.000000", "witness", 58078)
    ]
    assert [(i["unit"], i["cause"], i["ts"][:19]) for i in incs] == [
        (UNIT, "cgroup_oom", "2026-10-15T22:00:11")
    ]


def test_without_systemds_lines_the_kill_is_dated_to_its_minute(cli: Any, tmp_path: Path) -> None:
    incs, kills = _build(cli, tmp_path, journal=False)
    assert [(k["t"], k["ts_inferred"]) for k in kills] == [("22:00:00.200077", "minute")]
    assert [i["ts"][:16] for i in incs] == ["2026-10-15T22:00"]


@pytest.mark.parametrize(
    ("line", "raw", "ts"),
    [
        ("[Oct 2 10:01] x", "Oct 2 10:01", "2026-10-02 10:01:00+00:00"),
        ("[Oct15 22:00] x", "Oct15 22:00", "2026-10-15 22:00:00+00:00"),
        ("[Dez 9 08:15] x", "Dez 9 08:15", "2026-12-09 08:15:00+00:00"),  # a German locale
        ("[Oct15 22:00][  T1234] x", "Oct15 22:00", "2026-10-15 22:00:00+00:00"),  # caller id
    ],
)
def test_minute_stamps(line: str, raw: str, ts: str) -> None:
    from postmortem.parsers.base import ParseContext
    from postmortem.parsers.kernel.dmesg import Reltime, split_prefix

    ctx = ParseContext(year=2026)
    st = split_prefix(line, ctx, Reltime(ctx))
    assert st is not None and (str(st[0]), st[1], st[2]) == (ts, raw, "minute")
    assert line[st[5] :] == "x"


def test_a_delta_before_any_minute_has_no_time_and_a_bad_minute_is_none() -> None:
    from postmortem.parsers.base import ParseContext
    from postmortem.parsers.kernel.dmesg import Reltime

    clock = Reltime(ParseContext(year=2026))
    st = clock.stamp("[  +0.000009] x", 0, None)
    assert st is not None and st[0] is None
    assert clock.stamp("[Foo 31 10:01] x", 0, None) is None
    assert clock.stamp("[Feb 31 10:01] x", 0, None) is None


def test_deltas_summed_past_the_year_9999_leave_lines_undated_not_a_traceback() -> None:
    from postmortem.parsers.base import run_parser
    from postmortem.parsers.kernel.dmesg import DmesgParser

    text = "[Dec31 23:59] a\n" + "[ +9999999999.999999] b\n" * 400_000
    out, ctx = run_parser(DmesgParser(), text)
    assert ctx.parsed_lines == 400_001
    rows = [r for o in out if getattr(o, "table", None) == "kernel_messages" for r in o.data.to_pylist()]
    assert rows[0]["ts"] is not None and rows[-1]["ts"] is None
