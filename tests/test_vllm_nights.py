"""Nights the scenario survey found wrong once it drew vLLM servers (seeds 20251205, 7 and 101,
2026-12-06), each cut from its generated night (GPU samples left out) in
tests/data/nights/vllm/<name>/, with the truth the generator wrote down. They pin the
mechanisms fixed for them:

- dying-words (seed 20251205, night 33): vLLM 0.31.0's engine core is OOM-killed; the API
  server says so and shuts down (uvicorn's ``Shutting down`` … ``Finished server process``, no
  time of their own in a file: they take the death line's). A server shutting down is no sign
  of life: the last activity is the statistics line 3 s before the kill
  (``queries/last_activity_before.sql``), as is vLLM's ``EngineDeadError`` after a CUDA OOM.
- supervisor (seed 101, night 85): the server's lines re-logged by a launcher with loguru's
  stamp (``2024-12-20 01:54:34.682 | INFO     | launcher:pump:61 - …``): a wrapper, as for
  SGLang's (``engines/vllm/lines.py``, ``LOCAL_STAMP_RE``), so the queue at the kill is read.
- worker-pid (seed 101, night 40): vLLM 0.4.3 with TP 8, a cgroup OOM kills a rank's own
  process; dmesg counts seconds since boot, no journal. "Worker VllmWorkerProcess pid 7310
  died, exit code: -9" names the victim the moment it died, as SGLang's "Subprocess
  scheduler_0 (pid=…) crashed" does: it dates the boot (``queries/anchor_monotonic.sql``, on
  the event's ``subprocess_pid``).
- engine-core-title (seed 20251205, night 62), worker-prefix (seed 101, night 28),
  minute-witness (seed 7, night 89): V1 names a dead process by name only ("Engine core proc
  EngineCore_DP0 died unexpectedly", "Worker proc VllmWorker-0 died unexpectedly") and its API
  server exits 1: systemd says nothing of a kill (cgroup v1). The line dates the kernel's
  record of the same process — by its title (``VLLM::EngineCor``, 0.10.1 on), or by its pid,
  which the dead worker's own lines carry (0.8.5, an EL7 host OOM naming no cgroup): a dmesg in
  seconds since boot (``queries/anchor_monotonic.sql``) or in ``-e`` minutes
  (``queries/anchor_minutes.sql``).
- journal-children (seed 101, night 8): the servers' stdout in a text journal (Ubuntu 24.04,
  Descriptions in the job lines). journald credits every line to the unit's main process, while
  vLLM's prefixes name its children ("(Worker_TP0 pid=35369)"): each child was a run of its own,
  and the worker's, ending with the load, took logrotate's end 89 s later, so "Fallback for
  gptoss" was learnt as logrotate.service. A journal's lines are its process's; the child's pid
  stays in the event's detail (``process_pid``) for the run's pids.
- dst-year (seed 7, night 16): New York, 2026-03-10, two days after the clocks went forward;
  the files copied 16 months later. The hand-started server's ``nohup.out`` (vLLM 0.4.3: no
  year in its lines) took the copy's year, 2027, when March 10 was still standard time; the
  dated sources moved it a year back by a fixed 365 days, an hour late. A year's move keeps
  each row's local wall time (``analysis.apply_shifts``, ``ClockOffset.years``).
- group-minute (seed 20251205, night 138): memory.oom.group kills ten processes in a ``dmesg
  -e`` minute; systemd's syslog lines, in whole seconds, date it to 06:05:13. The minute's
  first kill line now takes the witness's second (``queries/anchor_minutes.sql``: the last one
  did, leaving the victim 130 µs before it), and the last activity is bounded by every record
  of the kill (``facts.kill_bound``), as the last statistics line was: the statistics line at
  06:05:13.072 (the kill was at .795) is the last activity, not the one ten seconds before.
- oneshot-at-kill (seed 555, night 58): Debian 11 names the server's start by its Description
  only; vllm-qwen3.service's death ends its run, and sysstat-collect's oneshot, started 2 s
  after the server's last line and done at once, ended as near: the two tied and the
  Description was learnt as neither. A job that began after the run's first line (while the
  server wrote, or after its last line) ended something else (``server_units._began_after``).
"""

from __future__ import annotations

import json
import os
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data" / "nights" / "vllm"


def _build(cli: Any, tmp_path: Path, night: str, *args: str) -> list[dict[str, Any]]:
    logs = tmp_path / "logs"
    shutil.copytree(DATA / night, logs)
    db = tmp_path / "pm.duckdb"
    r = cli("build", "--logs", logs, "--db", db, "--out", tmp_path / "out", *args)
    assert r.code == 0, r
    out = cli("query", "SELECT * FROM incidents ORDER BY ts", "--db", db, "--format", "json").out
    incs: list[dict[str, Any]] = json.loads(out)
    return incs


def _utc(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def test_a_server_shutting_down_is_no_activity(cli: Any, tmp_path: Path) -> None:
    (inc,) = _build(cli, tmp_path, "dying-words", "--tz", "UTC", "--since", "2026-11-10 07:31:38")
    assert (inc["unit"], inc["cause"]) == ("vllm@llama70b.service", "host_oom")
    truth = datetime(2026, 11, 10, 8, 11, 34, 244212, tzinfo=UTC)  # its last statistics line
    assert abs((_utc(inc["last_activity_ts"]) - truth).total_seconds()) <= 1.5


def test_a_launcher_s_loguru_stamp_is_a_wrapper(cli: Any, tmp_path: Path) -> None:
    args = ("--tz", "Asia/Kolkata", "--since", "2024-12-20 01:11:04", "--host", "dgx-b7")
    (inc,) = _build(cli, tmp_path, "supervisor", *args)
    assert (inc["unit"], inc["cause"]) == ("vllm-glm46.service", "cgroup_oom")
    assert (inc["running_at_kill"], inc["queued_at_kill"]) == (116, 108)
    truth = datetime(2024, 12, 19, 20, 24, 34, 682272, tzinfo=UTC)
    assert abs((_utc(inc["last_activity_ts"]) - truth).total_seconds()) <= 1.5


def test_a_v0_worker_s_pid_dates_an_undated_kill(cli: Any, tmp_path: Path) -> None:
    (inc,) = _build(cli, tmp_path, "worker-pid", "--tz", "Asia/Kolkata", "--host", "node-31")
    assert (inc["unit"], inc["cause"], inc["victim_pid"]) == ("vllm-glm46.service", "cgroup_oom", 7310)
    truth = datetime(2026, 9, 19, 11, 57, 11, 117369, tzinfo=UTC)
    assert abs((_utc(inc["ts"]) - truth).total_seconds()) <= 2


def test_a_dead_engine_core_s_line_dates_its_undated_kill(cli: Any, tmp_path: Path) -> None:
    args = ("--tz", "America/Los_Angeles", "--since", "2026-04-09 17:20:26")
    (inc,) = _build(cli, tmp_path, "engine-core-title", *args)
    assert (inc["unit"], inc["cause"]) == ("llm-k26.service", "host_oom")
    truth = datetime(2026, 4, 10, 1, 21, 25, 544763, tzinfo=UTC)
    assert abs((_utc(inc["ts"]) - truth).total_seconds()) <= 2


def test_a_dead_worker_s_line_dates_its_undated_kill_by_the_worker_s_pid(cli: Any, tmp_path: Path) -> None:
    (inc,) = _build(cli, tmp_path, "worker-prefix", "--tz", "UTC", "--host", "gh200-r2n4")
    assert (inc["unit"], inc["cause"], inc["recovery_unit"]) == (
        "llm-llama70b.service",
        "host_oom",
        "fallback-llama70b.service",
    )
    truth = datetime(2026, 5, 4, 0, 15, 55, 174540, tzinfo=UTC)
    assert abs((_utc(inc["ts"]) - truth).total_seconds()) <= 2


def test_a_dead_engine_core_s_line_gives_a_minute_its_second(cli: Any, tmp_path: Path) -> None:
    (inc,) = _build(cli, tmp_path, "minute-witness", "--tz", "UTC", "--since", "2023-12-31 23:29:04")
    assert (inc["unit"], inc["cause"]) == ("vllm-glm46.service", "host_oom")
    truth = datetime(2024, 1, 1, 0, 32, 40, 736795, tzinfo=UTC)
    assert abs((_utc(inc["ts"]) - truth).total_seconds()) <= 2


def test_a_journal_credits_vllm_s_children_to_the_main_process(cli: Any, tmp_path: Path) -> None:
    (inc,) = _build(cli, tmp_path, "journal-children", "--tz", "Asia/Tokyo", "--since", "2024-01-01 09:00:00")
    assert (inc["unit"], inc["cause"]) == ("llm-gptoss.service", "host_oom")
    # (the text journal names the fallback's start by its Description only, and nothing
    # ties the two: the Description is a right answer, logrotate.service is not)
    assert inc["recovery_unit"] in ("fallback-gptoss.service", "Fallback for gptoss")


def test_a_year_moved_keeps_each_line_s_daylight_saving_hour(cli: Any, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    shutil.copytree(DATA / "dst-year", logs)
    copied = 1815633953  # (2027-07-15: the night's files copied off the host 16 months later)
    for f in logs.iterdir():
        os.utime(f, (copied, copied))
    db = tmp_path / "pm.duckdb"
    assert (
        cli("build", "--logs", logs, "--db", db, "--out", tmp_path / "out", "--tz", "America/New_York").code
        == 0
    )
    (inc,) = json.loads(cli("query", "SELECT * FROM incidents", "--db", db, "--format", "json").out)
    assert (inc["unit"], inc["cause"]) == ("inference.service", "cgroup_oom")
    assert abs(inc["downtime_s"] - 757.6) <= 5  # (an hour more when 2027's March 10 was standard time)


def test_a_minute_dated_by_a_whole_second_keeps_that_second_s_lines(cli: Any, tmp_path: Path) -> None:
    (inc,) = _build(cli, tmp_path, "group-minute", "--tz", "UTC")
    assert (inc["unit"], inc["cause"]) == ("inference.service", "host_oom")
    assert (inc["running_at_kill"], inc["queued_at_kill"]) == (247, 165)
    truth = datetime(2026, 6, 27, 6, 5, 13, 72965, tzinfo=UTC)  # its last statistics line
    assert abs((_utc(inc["last_activity_ts"]) - truth).total_seconds()) <= 1.5


def test_a_split_journal_s_server_keeps_its_unit_without_a_start(cli: Any, tmp_path: Path) -> None:
    """split-journal-stats (seed 2027, night 61): vLLM 0.8.5's stdout in a text journal split
    into two files. In the second file the server's first lines are V1 statistics ("Engine 000:
    Avg prompt throughput: …"), which were not known as vLLM's: its stream began only at the
    CUDA OOM's traceback, 79 s after dcgm-exporter restarted, and took that unit's start. The
    statistics line is vLLM's (``engines/vllm/lines.py``), so the stream begins at the file's
    first line and keeps its unit through the pid's lines in the first file."""
    night = DATA / "split-journal-stats"
    logs = tmp_path / "logs"
    shutil.copytree(night, logs)
    copied = datetime(2024, 1, 1, 4, 23, 46, tzinfo=UTC).timestamp()  # (the files' year: no line says it)
    for f in logs.iterdir():
        os.utime(f, (copied, copied))
    db = tmp_path / "pm.duckdb"
    r = cli("build", "--logs", logs, "--db", db, "--out", tmp_path / "out", "--tz", "Asia/Kolkata")
    assert r.code == 0, r
    out = cli("query", "SELECT * FROM incidents ORDER BY ts", "--db", db, "--format", "json").out
    (inc,) = json.loads(out)
    assert (inc["unit"], inc["cause"]) == ("llm-k26.service", "gpu_oom")
    assert (inc["running_at_kill"], inc["queued_at_kill"]) == (122, 218)
    truth = datetime(2024, 1, 1, 1, 8, 16, 500446, tzinfo=UTC)  # its last statistics line
    assert abs((_utc(inc["last_activity_ts"]) - truth).total_seconds()) <= 1.5


def test_a_oneshot_run_at_the_kill_did_not_end_the_server(cli: Any, tmp_path: Path) -> None:
    # seed 555, night 58: Debian 11's journal names the server's start by its Description
    # only; its end names vllm-qwen3.service, and sysstat-collect's oneshot, started 2 s after
    # the server's last line, ended within the same 2 s: it tied, and nothing was learnt
    (inc,) = _build(cli, tmp_path, "oneshot-at-kill", "--tz", "Asia/Tokyo")
    assert (inc["unit"], inc["cause"], inc["recovery_unit"]) == (
        "vllm-qwen3.service",
        "host_oom",
        "vllm-qwen3-fallback.service",
    )
    assert (inc["running_at_kill"], inc["queued_at_kill"]) == (387, 218)
