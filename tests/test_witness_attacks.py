"""Nights built to make two rules lie, cut from their own tests' nights (tests/data/nights/el7/
and split/, edited here): systemd's SIGKILL line of a server unit dating a kill no cgroup names
(anchor_monotonic.sql) and a split journal's server lines naming the unit of the same pid's run
in the other file (pid_units.sql). The wrong answers they gave (a kill of postgres dated as the
server's OOM kill, a stop timeout's SIGKILL taken for an OOM kill, a later boot's dmesg dated
by the old boot's line or by another host's, a pid the new boot reused taken for the unit's process) and the attacks
they already withstood."""

from __future__ import annotations

import json
import os
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

NIGHTS = Path(__file__).parent / "data" / "nights"
KILL = "Apr 05 23:54:17 gh200-r2n4 systemd[1]: sglang@k26.service: main process exited, code=killed, status=9/KILL\n"
UNDATED = "1 OOM kill(s) with no time"


def _build(cli: Any, tmp_path: Path, logs: Path, tz: str) -> tuple[list[dict[str, Any]], str]:
    db = tmp_path / "pm.duckdb"
    r = cli("build", "--logs", logs, "--db", db, "--out", tmp_path / "out", "--tz", tz)
    assert r.code == 0, r
    return json.loads(cli("incidents", "--db", db, "--format", "json").out), r.out


def _el7(tmp_path: Path, before_kill: str = "", dmesg: tuple[str, str] = ("", "")) -> Path:
    logs = tmp_path / "logs"
    shutil.copytree(NIGHTS / "el7", logs)
    journal = logs / "journal.txt"
    journal.write_text(journal.read_text().replace(KILL, before_kill + KILL))
    if dmesg[0]:
        text = (logs / "dmesg.log").read_text()
        (logs / "dmesg.log").write_text(text.replace(dmesg[0], dmesg[1]))
    return logs


def _el7_causes(cli: Any, tmp_path: Path, logs: Path) -> tuple[list[str], str]:
    incs, out = _build(cli, tmp_path, logs, "America/Los_Angeles")
    return [i["cause"] for i in incs], out


def test_a_kill_of_postgres_is_no_server_s_oom_kill(cli: Any, tmp_path: Path) -> None:
    """The kernel chose postgres; the server unit's SIGKILL (a `systemctl kill -s KILL`) at
    another time says nothing of when."""
    logs = _el7(tmp_path, dmesg=("6077 (sglang::schedul)", "7311 (postgres)"))
    causes, out = _el7_causes(cli, tmp_path, logs)
    assert UNDATED in out
    assert causes == ["signal"]


@pytest.mark.parametrize(
    "stop",
    [
        "Apr 05 23:41:47 gh200-r2n4 systemd[1]: Stopping SGLang server for k26...\n",
        "Apr 05 23:41:47 gh200-r2n4 systemd[1]: Stopping SGLang server for k26...\n"
        "Apr 05 23:54:17 gh200-r2n4 systemd[1]: sglang@k26.service stop-sigterm timed out. Killing.\n",
    ],
    ids=["stop-12min-before", "stop-timeout-line"],
)
def test_a_stop_pending_for_longer_than_10_minutes_is_no_witness(cli: Any, tmp_path: Path, stop: str) -> None:
    """TimeoutStopSec=15min: the SIGKILL ends a stop begun 12.5 minutes before."""
    causes, out = _el7_causes(cli, tmp_path, _el7(tmp_path, stop))
    assert UNDATED in out
    assert causes == ["signal"]


def test_a_finished_stop_of_another_unit_does_not_hide_the_witness(cli: Any, tmp_path: Path) -> None:
    """Held: a Description-named unit stopped (and was done) before the kill."""
    stop = (
        "Apr 05 23:41:47 gh200-r2n4 systemd[1]: Stopping User Manager for UID 1000...\n"
        "Apr 05 23:41:48 gh200-r2n4 systemd[1]: Stopped User Manager for UID 1000.\n"
    )
    causes, out = _el7_causes(cli, tmp_path, _el7(tmp_path, stop))
    assert UNDATED not in out
    assert causes == ["host_oom"]


def test_a_capture_older_than_the_witness_is_not_dated_by_it(cli: Any, tmp_path: Path) -> None:
    """Held: the dmesg was written at 23:50 PDT, before the SIGKILL line (23:54:17)."""
    logs = _el7(tmp_path)
    stamp = datetime(2024, 4, 6, 6, 50, tzinfo=UTC).timestamp()
    os.utime(logs / "dmesg.log", (stamp, stamp))
    causes, out = _el7_causes(cli, tmp_path, logs)
    assert UNDATED in out
    assert causes == ["signal"]


def test_another_host_s_line_does_not_date_a_capture_naming_no_host(cli: Any, tmp_path: Path) -> None:
    """Two hosts: the SIGKILL line is gh200-r2n5's journal's; the raw dmesg and the server's log
    name no host, so the line cannot tell which host's kill it saw."""
    logs = _el7(tmp_path)
    journal = logs / "journal.txt"
    journal.write_text(journal.read_text().replace(KILL, ""))
    (logs / "journal-r2n5.txt").write_text(
        "-- Logs begin at Fri 2024-04-05 23:50:00 PDT, end at Fri 2024-04-05 23:54:17 PDT. --\n"
        "Apr 05 23:50:00 gh200-r2n5 systemd[1]: Started Session 7 of User ops.\n"
        + KILL.replace("gh200-r2n4", "gh200-r2n5")
    )
    causes, out = _el7_causes(cli, tmp_path, logs)
    assert UNDATED in out
    assert "host_oom" not in causes


REBOOT = (
    "-- Reboot --\n"
    "Apr 06 00:10:05 gh200-r2n4 kernel: Linux version 3.10.0-1160.119.1.el7.x86_64 "
    "(mockbuild@kbuilder.bsys.centos.org) (gcc version 4.8.5 20150623 (Red Hat 4.8.5-44) (GCC) ) "
    "#1 SMP Tue Jun 4 14:43:51 UTC 2024\n"
    "Apr 06 00:30:02 gh200-r2n4 sshd[2093]: Accepted publickey for ops from 10.20.0.15 port 51900 ssh2\n"
)


def test_a_capture_of_a_later_boot_is_not_dated_by_the_old_boot_s_line(cli: Any, tmp_path: Path) -> None:
    """The host rebooted at 00:10 and the dmesg, written at 00:40, holds the new boot's ring: a
    notebook's python3 killed 1500 s after that boot, not the server's SIGKILL at 23:54:17."""
    logs = _el7(tmp_path, dmesg=("6077 (sglang::schedul)", "7311 (python3)"))
    dmesg = logs / "dmesg.log"
    dmesg.write_text(dmesg.read_text().replace("[254584.", "[ 1500."))
    journal = logs / "journal.txt"
    journal.write_text(journal.read_text() + REBOOT)
    stamp = datetime(2024, 4, 6, 7, 40, tzinfo=UTC).timestamp()
    os.utime(dmesg, (stamp, stamp))
    causes, out = _el7_causes(cli, tmp_path, logs)
    assert UNDATED in out
    assert causes == ["signal"]


BANNER = (
    "2026-03-17T10:29:40-0400 node-31 kernel: Linux version 6.8.0-52-generic (buildd@lcy02-amd64-046) "
    "(x86_64-linux-gnu-gcc-13 (Ubuntu 13.3.0-6ubuntu2~24.04) 13.3.0, GNU ld (GNU Binutils for Ubuntu) "
    "2.42) #53-Ubuntu SMP PREEMPT_DYNAMIC Sat Jan 11 00:06:25 UTC 2025\n"
    "2026-03-17T10:29:40-0400 node-31 kernel: Command line: BOOT_IMAGE=/vmlinuz-6.8.0-52-generic ro\n"
    "2026-03-17T10:29:58-0400 node-31 systemd[1]: Starting vllm@llama.service - vLLM server for llama...\n"
    "2026-03-17T10:29:58-0400 node-31 systemd[1]: Started vllm@llama.service - vLLM server for llama.\n"
)


def _split(tmp_path: Path, first_file: bool) -> Path:
    """The split night with a reboot at 10:29:40 and another unit started: at the end of the
    first file, or at the head of the second."""
    logs = tmp_path / "logs"
    shutil.copytree(NIGHTS / "split", logs)
    if first_file:
        older = logs / "journalctl.log.1"
        older.write_text(older.read_text().replace("10:28:37 EDT. --", "10:29:58 EDT. --") + BANNER)
    else:
        newer = logs / "journalctl.log"
        head, rest = newer.read_text().split("\n", 1)
        newer.write_text(head.replace("10:30:45 EDT", "10:29:40 EDT") + "\n" + BANNER + rest)
    return logs


@pytest.mark.parametrize("first_file", [True, False], ids=["boot-in-first-file", "boot-in-second-file"])
def test_a_pid_the_new_boot_reused_is_not_the_fallback_s(cli: Any, tmp_path: Path, first_file: bool) -> None:
    """The host rebooted between the files: python3[25164] of the second file is vllm@llama's
    process, not the fallback's that died with the old boot, so nothing recovered gptoss (the
    second case held before the fix: the start line sat in the same file)."""
    (inc,) = _build(cli, tmp_path, _split(tmp_path, first_file), "UTC")[0]
    assert (inc["unit"], inc["recovery_unit"], inc["recovered_ts"]) == ("sglang@gptoss.service", None, None)
