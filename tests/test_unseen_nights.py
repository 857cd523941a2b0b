"""Nights the scenario survey found wrong with seeds nobody had run (101 and 2027), each cut from
its generated night (GPU samples left out) in tests/data/nights/unseen/<name>/, each with the
truth the generator wrote down. They pin the mechanisms fixed for them:

- oneshot-at-start (seed 2027, night 114): logrotate's oneshot starts 0.35 s after the fallback
  server's first line and is done a second later: a unit that ended while the server went on
  writing ran something else (``analysis/server_units.py``, ``_ended_before``), also when its
  "Started" line comes after its end (systemd before 246).
- session-scope (seed 101, night 22): the operator logs in and starts a server by hand minutes
  later; "Started Session 42 of User ops." is a login session's scope, no server's start
  (``queries/unit_marks.sql``).
- monotonic-split (seed 101, night 185): a ``-o short-monotonic`` journal rotated into two files;
  the kill in the first dates its boot, the fallback's start is in the second, whose monotonic
  clock goes on from the first's (``queries/anchor_journal.sql``); the operator's command names
  the unit of the fallback's Description (``queries/operator_descriptions.sql``).
- restart-after-end (seed 2027, night 65): a CUDA OOM, and the operator starts the unit again
  14 minutes later; that later start does not make the unit's death "started while the server
  ran" (``_vote_marks``).
- failed-oneshot (seed 2027, night 196): EL7 names jobs by Description; a GPU health check fails
  one second before the CUDA OOM. "Starting GPU health check..." … "gpu-healthcheck.service:
  main process exited" … "Failed to start GPU health check." teaches that Description's unit
  (``queries/oneshot_descriptions.sql``), so its end is not the server's.
- minute-kill (seed 8080, night 33): ``dmesg -H`` alone dates the kill to its minute; the
  unlinked server log's last line is in that minute. A kill's minute counts whole as its time
  when linking (``unit_marks.sql``'s ``span_s``), and the minute moves up to the linked run's
  last line once the runs are linked (``anchor_minutes.sql`` run again after the link).
- minute-journal-copy (seed 20261206, night 59): the kill in ``dmesg -e`` and in the journal's
  kernel lines, systemd saying only "status=1/FAILURE" (cgroup v1): the journal's copy of the
  kill's own line dates the minute (``anchor_minutes.sql``).
- cuda-loop-undated (seed 99, night 80): a CUDA OOM traceback has no stamp of its own; its
  unit's death, stamped by systemd seconds later, dates it (``incidents._undated_until_death``).
- oneshot-beside-kill (seed 99, night 86): a failed oneshot's start and end with the killed
  server's lines between them still teach its Description (``oneshot_descriptions.sql``).
- onfailure-beside-oneshot (seed 2468, night 125): an EL7 oneshot's start a second before an
  OnFailure= fallback's, in one whole-second source: the earlier stamp is the farther start
  (``server_units._stamped_before``).
- concurrent-streams (seed 2718, night 14): a second server's process, running when the data
  begins, prints its first line 8 s after the killed server's unit started; one unit's output
  is one journal stream, so the process with more evidence keeps the unit
  (``server_units._one_process_each``).
- oneshot-beside-restart (seed 2718, night 141): logrotate starts 2 s after a restarted unit,
  in the second of the new process's first line, and is done a second later; the journal
  parser no longer gives a text mode's process the unit started last, ``build`` links it.
- task-table-pid (seed 2718, night 11): kernel 4.15 and no journal; the victim is an SGLang
  scheduler, and the OOM record's task table lists the pid the server's log names as its own
  (``queries/task_table_units.sql``); the operator's recovery in sglang-manual.log, which no
  source ties to a unit, is a row of the loads table (``load_stats.stats_of``).
- vllm-engine-first (seed 161803, night 0): vLLM 0.31 in a CRI file; the engine core's
  "Initializing a V1 LLM engine … with config:" comes 2 ms before its API server's version and
  args lines: one start, one configuration (``engines/vllm/stream.py``, ``_joins_ahead``).


  (``queries/task_table_units.sql``).
- cat-kill-lines (seed 8128, night 10): ``journalctl -o cat`` holds the unit's OOM lines and,
  after them, the operator's ``systemctl restart``; the kill is dated by dmesg. Lines after
  the kill's own lines in the file came after the kill (``analysis/undated.py``); edited, it
  is also seed 496's night 7 (left failed, no restart) and a journal that cannot be placed.
- stop-before-failure (seed 8128, night 32): a ``systemctl restart`` stops the serving run and
  the new one fails at once; GPU memory fell after systemd's "Stopped …", so the release is
  the stop's, not the failure's (``analysis/release_stop.py``).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).parent / "data" / "nights" / "unseen"


def _build(
    cli: Any,
    tmp_path: Path,
    night: str,
    zone: str,
    edit: Callable[[Path], None] | None = None,
    year: int | None = None,
) -> list[dict[str, Any]]:
    """The night's build; ``edit``: a change to its copied logs first; ``year``: for logs that
    print none (a fresh clone's files are dated the day of the checkout)."""
    logs = tmp_path / "logs"
    shutil.copytree(DATA / night, logs)
    if edit is not None:
        edit(logs)
    db = tmp_path / "pm.duckdb"
    extra = ["--year", str(year)] if year is not None else []
    r = cli("build", "--logs", logs, "--db", db, "--out", tmp_path / "out", "--tz", zone, *extra)
    assert r.code == 0, r
    # (the store's own rows: the recovery's load and the queue at the kill are not in `incidents`)
    out = cli("query", "SELECT * FROM incidents ORDER BY ts", "--db", db, "--format", "json").out
    incs: list[dict[str, Any]] = json.loads(out)
    return incs


def test_a_oneshot_done_while_the_server_loads_is_not_its_unit(cli: Any, tmp_path: Path) -> None:
    (inc,) = _build(cli, tmp_path, "oneshot-at-start", "Asia/Tokyo")
    # (the year-less journal takes its year from its header, not from the copy's mtime; the
    # fallback's unit is named by its file and the operator's `sudo systemctl start` line)
    assert (inc["unit"], inc["cause"], inc["recovery_unit"]) == (
        "sglang@qwen3.service",
        "host_oom",
        "sglang@qwen3-fallback.service",
    )


def test_a_login_session_is_no_server_s_start(cli: Any, tmp_path: Path) -> None:
    (inc,) = _build(cli, tmp_path, "session-scope", "America/Los_Angeles")
    assert inc["recovery_unit"] in (None, "", "unknown")
    assert inc["recovery_load_s"] == pytest.approx(276, abs=2)  # from the server's first line


def test_a_rotated_monotonic_journal_keeps_its_boot(cli: Any, tmp_path: Path) -> None:
    (inc,) = _build(cli, tmp_path, "monotonic-split", "Europe/Berlin")
    # (EL7's journal names the fallback's start by its Description only, and its log,
    # gptoss.log, names no unit: the operator's `sudo systemctl start` a second before
    # "Starting Fallback for gptoss..." teaches that Description's unit)
    assert (inc["unit"], inc["recovery_unit"]) == ("serve-gptoss.service", "serve-gptoss-fallback.service")
    assert inc["downtime_s"] == pytest.approx(1364.8, abs=1)  # the truth: 1364.79 s


def test_a_later_restart_does_not_hide_the_unit_s_death(cli: Any, tmp_path: Path) -> None:
    (inc,) = _build(cli, tmp_path, "restart-after-end", "America/New_York")
    assert (inc["unit"], inc["cause"], inc["recovery_unit"]) == (
        "inference.service",
        "gpu_oom",
        "inference.service",
    )
    assert (inc["running_at_kill"], inc["queued_at_kill"]) == (386, 148)


def test_a_failed_oneshot_teaches_its_description(cli: Any, tmp_path: Path) -> None:
    (inc,) = _build(cli, tmp_path, "failed-oneshot", "Asia/Tokyo")
    assert (inc["unit"], inc["cause"], inc["recovery_unit"]) == (
        "sglang-qwen3.service",
        "gpu_oom",
        "sglang-qwen3.service",
    )


def test_a_journal_copied_years_later_takes_the_servers_year(cli: Any, tmp_path: Path) -> None:
    """The same night without the journal's header: its year-less stamps take the copy's
    mtime's year (2026), two years late; the servers' dated lines say the year."""

    def headless(logs: Path) -> None:
        journal = logs / "journal-1.txt"
        journal.write_text(journal.read_text().split("\n", 1)[1])  # (the header line gone)
        copied = datetime(2026, 12, 6, tzinfo=UTC).timestamp()  # (copied off the host in 2026)
        os.utime(journal, (copied, copied))

    (inc,) = _build(cli, tmp_path, "oneshot-at-start", "Asia/Tokyo", headless)
    assert (inc["ts"][:19], inc["recovery_unit"]) == ("2024-01-01T00:31:04", "sglang@qwen3-fallback.service")


def test_an_operator_s_command_in_a_cat_journal_names_the_fallback(cli: Any, tmp_path: Path) -> None:
    """``journalctl -o cat`` (seed 7, night 178): no times and no identifiers, so sudo's line
    is known by its own layout only; the unit its ``systemctl start`` names is the one the
    fallback's log file is named after."""
    (inc,) = _build(cli, tmp_path, "cat-operator", "Asia/Tokyo")
    assert (inc["unit"], inc["recovery_unit"]) == ("inference.service", "fallback-glm46.service")


def test_a_kill_dated_to_its_minute_links_and_dates_its_server(cli: Any, tmp_path: Path) -> None:
    # seed 8080, night 33: EL9, `dmesg -H` only (the kill known to its minute, 12:24), no
    # journal; sglang.log names no unit and ends at 12:24:46.9. The kill's minute holds the
    # run's last line: it ends that run (sglang-k26.service, the kill's cgroup), and the kill
    # then moves up to that line, so the queue at the kill is the last line's, not one 47 s
    # earlier
    (inc,) = _build(cli, tmp_path, "minute-kill", "UTC")
    assert (inc["unit"], inc["cause"]) == ("sglang-k26.service", "host_oom")
    assert (inc["running_at_kill"], inc["queued_at_kill"]) == (254, 256)
    kill = datetime.fromisoformat(inc["ts"]).astimezone(UTC)
    # (the truth: 12:24:46.89; the server's lines print whole seconds)
    assert datetime(2025, 7, 31, 12, 24, 46, tzinfo=UTC) <= kill < datetime(2025, 7, 31, 12, 25, tzinfo=UTC)


def test_a_kill_dated_to_its_minute_takes_the_journal_s_copy_of_its_line(cli: Any, tmp_path: Path) -> None:
    # seed 20261206, night 59: Ubuntu 18.04 (cgroup v1), vLLM 0.8.5; the kill is in `dmesg -e`
    # (14:43, minute only) and in the journal's kernel lines (14:43:02 JST); systemd says only
    # "code=exited, status=1/FAILURE", no kill to witness. The journal's copy of the kill's own
    # line dates the minute: the kill was reported at 05:43:00.0003 UTC, 2.3 s early
    (inc,) = _build(cli, tmp_path, "minute-journal-copy", "Asia/Tokyo")
    assert inc["unit"] == "llm-qwen3.service"
    kill = datetime.fromisoformat(inc["ts"]).astimezone(UTC)
    # (the truth: 05:43:02.343; the journal prints whole seconds)
    assert datetime(2024, 8, 31, 5, 43, 2, tzinfo=UTC) <= kill < datetime(2024, 8, 31, 5, 43, 3, tzinfo=UTC)


def test_an_undated_cuda_oom_is_dated_by_its_unit_s_death(cli: Any, tmp_path: Path) -> None:
    # seed 99, night 80: vLLM 0.4.3 dies of a CUDA OOM while loading, again and again; the
    # traceback's lines have no stamp, so the OOM took the last stamped line's time (01:06:10,
    # "Loading model weights took"), 2.9 s before systemd's stamp of the death (01:06:12.9)
    (first, *_) = _build(cli, tmp_path, "cuda-loop-undated", "UTC", year=2024)
    assert (first["unit"], first["cause"]) == ("inference.service", "gpu_oom")
    kill = datetime.fromisoformat(first["ts"]).astimezone(UTC)
    assert abs((kill - datetime(2024, 2, 14, 1, 6, 12, 886893, tzinfo=UTC)).total_seconds()) <= 1


def test_a_failed_oneshot_logged_beside_the_kill_is_learnt(cli: Any, tmp_path: Path) -> None:
    # seed 99, night 86: EL8 syslog names jobs by Description; "Starting GPU health check..." comes
    # in the kill's second, then the killed server's own lines, then the health check's failure
    # and "Failed to start GPU health check." Another unit's lines between the oneshot's start and
    # its end kept it unlearnt, so its end tied with the server's: the server's Description was
    # learnt as neither unit, and the restart became a second incident
    incs = _build(cli, tmp_path, "oneshot-beside-kill", "America/New_York")
    assert [(i["unit"], i["recovery_unit"]) for i in incs] == [
        ("sglang-gptoss.service", "sglang-gptoss.service")
    ]
    assert (incs[0]["running_at_kill"], incs[0]["queued_at_kill"]) == (232, 288)


def test_a_fallback_a_second_after_an_el7_oneshot_takes_the_start(cli: Any, tmp_path: Path) -> None:
    # seed 2468, night 125: EL7 syslog in whole seconds; "Starting/Started system activity
    # accounting tool" at 15:55:11 (systemd 219 logs no end for a oneshot), OnFailure='s
    # "Starting/Started Fallback for gptoss" at :12, the fallback's first line at :14.19. Both
    # starts were within the 2 s slack of the nearest and tied; within one source a start
    # stamped a whole second earlier is surely the farther one
    logs = tmp_path / "logs"
    shutil.copytree(DATA / "onfailure-beside-oneshot", logs)
    db = tmp_path / "pm.duckdb"
    args = ("--tz", "Europe/Berlin", "--since", "2024-07-06 15:19:20", "--host", "infer-12")
    assert cli("build", "--logs", logs, "--db", db, "--out", tmp_path / "out", *args).code == 0
    out = cli("query", "SELECT * FROM incidents", "--db", db, "--format", "json").out
    (inc,) = json.loads(out)
    assert inc["unit"] == "llm-gptoss.service"
    # (EL7 names the fallback by its Description only; nothing ties it to its unit's name)
    assert inc["recovery_unit"] in ("llm-gptoss-fallback.service", "Fallback for gptoss")


def test_a_process_running_beside_the_killed_one_is_not_its_unit(cli: Any, tmp_path: Path) -> None:
    # seed 2718, night 14: Ubuntu 24.04 syslog, two SGLang servers as `python3[pid]`; the data
    # begins while gpt-oss (pid 33179) loads, 8 s after "Started SGLang server for glm46", whose
    # process (33131) prints its first line 2 s after it. Both took that start; 33179's lines
    # were then glm46's, and the queue at the kill was gpt-oss's last line (89 running, 0
    # queued, 3 s later) instead of glm46's own (170, 76). One unit's output is one stream:
    # the process with more evidence (its pid in the OOM task table, its end) keeps the unit
    (inc,) = _build(cli, tmp_path, "concurrent-streams", "Asia/Kolkata", year=2026)
    assert (inc["unit"], inc["cause"]) == ("sglang@glm46.service", "cgroup_oom")
    assert (inc["running_at_kill"], inc["queued_at_kill"]) == (170, 76)
    assert inc["last_activity_ts"][:19] == "2026-11-13T10:21:10"
    # systemd's "Consumed …, 439.2G memory peak." is the killed run's own (stamped in the kill's
    # second): no "previous run" peaked at 1417 % of the 31 GiB limit
    (report,) = (tmp_path / "out").glob("*glm46.service.md")
    assert "previous run" not in report.read_text(encoding="utf-8")


def test_a_oneshot_started_beside_a_restart_is_not_its_unit(cli: Any, tmp_path: Path) -> None:
    # seed 2718, night 141: Debian 13 `-o short`, vLLM 0.4.3 OOM-killed in its cgroup and
    # restarted by systemd 30 s later; "Starting logrotate.service..." comes 2 s after "Started
    # inference.service.", in the second of the new process's first line, and logrotate is done
    # a second later. The journal parser gave a new process the unit started last before its
    # first line, logrotate's, and the recovery read "logrotate.service". `build` links it,
    # with the unit's end in view (a unit that ended while the server wrote ran something else)
    (inc,) = _build(cli, tmp_path, "oneshot-beside-restart", "America/Los_Angeles", year=2026)
    assert (inc["unit"], inc["cause"], inc["recovery_unit"]) == (
        "inference.service",
        "cgroup_oom",
        "inference.service",
    )
    assert inc["recovery_load_s"] == pytest.approx(447, abs=2)  # the truth: 446.8 s


def test_a_kill_no_cgroup_names_takes_the_unit_of_the_pid_in_its_task_table(cli: Any, tmp_path: Path) -> None:
    # seed 2718, night 11: Ubuntu 18.04 (kernel 4.15: a host-wide OOM record names no cgroup),
    # no journal; the kernel kills sglang::schedul (pid 7248). sglang-glm46.service.log names
    # its unit and its own pid ("Started server process [7247]"), which the record's task table
    # lists beside the victim. Nothing tied the kill to the server: the report read "process
    # killed on unknown-host", no queue at the kill (task_table_units.sql)
    (inc,) = _build(cli, tmp_path, "task-table-pid", "Asia/Tokyo", year=2025)
    assert (inc["unit"], inc["cause"], inc["victim_pid"]) == ("sglang-glm46.service", "host_oom", 7248)
    assert (inc["running_at_kill"], inc["queued_at_kill"]) == (84, 7)
    assert inc["last_activity_ts"][:19] == "2025-08-27T17:50:00"  # (the log prints whole seconds)


def test_a_neighbour_s_kill_is_not_given_the_server_s_unit(cli: Any, tmp_path: Path) -> None:
    """The same night with the victim a plain ``python3`` (a batch job beside the server): the
    server's pid in the task table says the server was alive, not that the victim was its."""

    def neighbour(logs: Path) -> None:
        kernel = logs / "kernel.log"
        kernel.write_text(kernel.read_text().replace("7248 (sglang::schedul)", "9911 (python3)"))

    (inc,) = _build(cli, tmp_path, "task-table-pid", "Asia/Tokyo", neighbour, year=2025)
    assert inc["unit"] is None
    assert inc["victim_pid"] == 9911


def test_a_recovery_no_unit_names_is_said_to_have_come_back(cli: Any, tmp_path: Path) -> None:
    """The operator's server in sglang-manual.log, whose unit no source names, brought service
    back: the Summary and Resolution said no source showed it back while Impact named it."""
    _build(cli, tmp_path, "task-table-pid", "Asia/Tokyo", year=2025)
    (report,) = (tmp_path / "out").glob("*sglang-glm46.service.md")
    text = report.read_text(encoding="utf-8")
    assert "No source shows the service coming back" not in text
    assert "until a server whose unit no source names, started at 02:59:50 JST" in text
    assert "The server writing sglang-manual.log (no source names its unit), started at 17:59:50 UTC" in text
    index = (tmp_path / "out" / "index.md").read_text(encoding="utf-8")
    assert "| 16 min 52 s | a server of no known unit, writing sglang-manual.log |" in index
    assert "| Kill → that server started | 9 min 46 s |" in text
    listed = cli("incidents", "--db", tmp_path / "pm.duckdb").out
    assert "16 min 52 s  a server of no known unit" in listed


def test_a_crashed_server_no_unit_names_keeps_its_signals(cli: Any, tmp_path: Path) -> None:
    # seed 314159, night 19: SGLang 0.5.10 writes llm-qwen3.log by hand (no journal, no unit)
    # and dies of a CUDA OOM. The timeline's statistics were read by unit only: no throughput
    # (no "Tokens not generated"), rows reading "None: last batch line before the crash",
    # "`?`" in the loads tables and a Summary starting "a process (…)"
    (inc,) = _build(cli, tmp_path, "unitless-crash", "Asia/Kolkata")
    assert (inc["unit"], inc["cause"]) == (None, "gpu_oom")
    (report,) = (tmp_path / "out").glob("*unknown-unit.md")
    text = report.read_text(encoding="utf-8")
    assert "None:" not in text and "`?`" not in text
    assert "\nA process (/models/Qwen3-235B-A22B) crashed on " in text
    assert "SGLang: last batch line before the crash (running 208, queued 104, KV usage 0.98)" in text
    assert "SGLang: requests begin to wait in the queue (up to 104 before the crash)" in text
    assert "| Tokens not generated | ≈ " in text
    assert "| — (no unit named) | crashed instance |" in text


def test_a_recovery_no_unit_names_is_a_row_of_the_loads_table(cli: Any, tmp_path: Path) -> None:
    """The Summary and Resolution told the hand-started recovery's load and Appendix E its
    phases, but Appendix D listed only its unit's loads: the killed unit's (seeds 314159 and
    161803, nights 1, 13, 16; 2, 5, 18, 19). Every load the report tells is in its table."""
    _build(cli, tmp_path, "task-table-pid", "Asia/Tokyo", year=2025)
    (report,) = (tmp_path / "out").glob("*sglang-glm46.service.md")
    text = report.read_text(encoding="utf-8")
    loads = text.split("## D. Service loads", 1)[1].split("\n## ", 1)[0]
    assert (
        "| `sglang-glm46.service` | killed instance | 2025-08-27 16:39:23 | 2025-08-27 16:46:28 | 7 min 5 s |"
        in loads
    )
    assert (
        "| — (no unit named) | recovery load | 2025-08-27 17:59:50 | 2025-08-27 18:06:56 | 7 min 6 s |"
        in loads
    )
    assert "| — (no unit named) | `/models/GLM-4.6` | — | 1 | 7 min 6 s |" in loads


def test_a_vllm_engine_line_ahead_of_its_api_args_is_one_start(cli: Any, tmp_path: Path) -> None:
    """The engine core's configuration line, 2 ms before the API server's version line, was
    read as a start of its own: it took systemd's "Starting" (journal.txt:5) and never got
    ready (a phantom "history … incomplete" row), and the killed run started at its args line,
    3 s late; the Summary row said "Loads 2" over three rows."""
    _build(cli, tmp_path, "vllm-engine-first", "America/Los_Angeles")
    sql = "SELECT start_source, start_line_no, outcome, load_s FROM service_loads ORDER BY load_id"
    out = cli("query", sql, "--db", tmp_path / "pm.duckdb", "--format", "json").out
    rows = [
        (r["start_source"], r["start_line_no"], r["outcome"], round(r["load_s"] or -1))
        for r in json.loads(out)
    ]
    assert rows == [("systemd_starting", 5, "ready", 359), ("systemd_starting", 69, "ready", 359)]
    (report,) = (tmp_path / "out").glob("*vllm-llama70b.service.md")
    text = report.read_text(encoding="utf-8")
    assert "| killed instance | 2024-11-07 04:03:17 | 2024-11-07 04:09:16 | 5 min 59 s |" in text
    assert "| history |" not in text


def _report(tmp_path: Path) -> str:
    (report,) = (tmp_path / "out").glob("*Z-*.md")
    return report.read_text(encoding="utf-8")


def _coverage_row(text: str, name: str) -> str:
    return next(line for line in text.splitlines() if line.startswith("| ") and f"/{name} |" in line)


def test_an_operator_s_command_after_a_cat_journal_s_kill_lines_came_after_the_kill(
    cli: Any, tmp_path: Path
) -> None:
    # seed 8128, night 10: `journalctl -o cat` (no times), the kill dated by dmesg. The journal's
    # "Failed with result 'oom-kill'" (lines 26-30) is the kill's own; the operator's `systemctl
    # restart` at line 37 comes after it. The report said "No operator action after the kill
    # appears in the logs", not that the operator started the restart, and "Covers the kill: no"
    (inc,) = _build(cli, tmp_path, "cat-kill-lines", "America/New_York")
    assert (inc["unit"], inc["recovery_unit"]) == ("sglang-llama70b.service", "sglang-llama70b.service")
    text = _report(tmp_path)
    assert "No operator action after the kill" not in text
    assert (
        "The first operator action after the kill was `/usr/bin/systemctl restart sglang-llama70b.service` ("
        in text
    )
    assert (
        "journalctl.log:37); its journal has no timestamps (journalctl -o cat), so when is not known" in text
    )
    assert "only that it came after the kill's own lines there (lines 26–30)." in text
    assert "A restart of sglang-llama70b.service, started by the operator at 05:58:50 UTC" in text
    row = _coverage_row(text, "journalctl.log")
    assert row.endswith(
        "| — | — | yes | no timestamps (journalctl -o cat); placed by line order around the kill's own lines"
        " (lines 26–30) |"
    )
    assert "ts NULL" not in text
    # a journal with no times has no window to be silent in
    assert "journal: no data in the window before the kill" not in text


@pytest.mark.parametrize("change", ["kill lines gone", "an earlier death"])
def test_a_cat_journal_that_cannot_be_lined_up_with_the_kill_says_so(
    cli: Any, tmp_path: Path, change: str
) -> None:
    """The same journal without the kill's own lines, or with another death of the unit before
    them (two deaths where the dated sources know one): its lines cannot be placed, and the
    operator's command is not said to come after the kill, nor to be missing."""

    def edit(logs: Path) -> None:
        journal = logs / "journalctl.log"
        lines = journal.read_text().splitlines(keepends=True)
        kill = lines[25:30]
        lines = lines[:25] + lines[30:] if change == "kill lines gone" else lines[:3] + kill + lines[3:]
        journal.write_text("".join(lines))

    _build(cli, tmp_path, "cat-kill-lines", "America/New_York", edit)
    text = _report(tmp_path)
    assert "No operator action after the kill appears" not in text
    assert "The first operator action" not in text
    assert "No dated operator action after the kill appears in the logs; " in text
    assert (
        "journalctl.log has no timestamps (journalctl -o cat) and its lines cannot be placed around the kill,"
        " so whether the operator command there came after it is not known." in text
    )
    assert "started by the operator" not in text
    row = _coverage_row(text, "journalctl.log")
    assert row.endswith(
        "| — | — | no | no timestamps (journalctl -o cat); its lines cannot be placed before or after the kill |"
    )


def test_a_cat_journal_s_unit_left_failed_gets_the_restart_advice(cli: Any, tmp_path: Path) -> None:
    # seed 496, night 7, in night 10's data: `journalctl -o cat` shows "Failed with result
    # 'oom-kill'" and nothing started the unit again (no restart job, no operator, no server
    # back). Its lines had no time, so systemd's account of the death was not seen: no advice
    # to set Restart= or to reset the failed state, which other nights left down get

    def left_down(logs: Path) -> None:
        journal = logs / "journalctl.log"
        lines = journal.read_text().splitlines(keepends=True)
        journal.write_text("".join(lines[:30] + lines[39:]))  # (no login, sudo, start)
        server = logs / "server.log"
        server.write_text(
            "".join(x for x in server.read_text().splitlines(keepends=True) if "pid=21136" not in x)
        )

    (inc,) = _build(cli, tmp_path, "cat-kill-lines", "America/New_York", left_down)
    assert inc["recovered_ts"] is None
    text = _report(tmp_path)
    assert "**Set Restart= on sglang-llama70b.service: nothing restarted it**" in text
    assert "| Run `systemctl reset-failed sglang-llama70b.service` before its next start |" in text


def test_gpu_memory_freed_by_a_stop_before_a_failed_start_is_the_stop_s(cli: Any, tmp_path: Path) -> None:
    # seed 8128, night 32: the operator's `systemctl restart` stops the serving run ("Stopped
    # Serve gpt-oss-120b." at 06:38:53 IST), the new one fails at 06:38:57 reading its config;
    # nvidia-smi shows 75794 MiB at 06:38:52 and 1 MiB at 06:38:57. The report credited the
    # failure: "GPU memory was released: all 4 GPUs within a second of the failure", also under
    # "What went well"
    (inc,) = _build(cli, tmp_path, "stop-before-failure", "Asia/Kolkata")
    assert (inc["unit"], inc["cause"]) == ("serve-gptoss.service", "crash")
    text = _report(tmp_path)
    assert "GPU memory was released" not in text
    assert "**What went well**" not in text
    assert (
        "**GPU memory was freed by systemd's stop of serve-gptoss.service at 01:08:53 UTC, not by the failure**"
        in text
    )
    assert (
        "GPU memory released on all 4 GPUs (nvidia-smi): freed by the stop at 01:08:53 UTC, not by the failure"
        in text
    )


def test_gpu_memory_freed_with_no_stop_before_the_failure_is_the_failure_s(cli: Any, tmp_path: Path) -> None:
    """The same night without systemd's "Stopped …" line (its "Stopping …" came before the last
    sample that showed the memory held): the release is the failure's again."""

    def no_stop(logs: Path) -> None:
        journal = logs / "node7-journal.log"
        journal.write_text(
            "".join(
                x
                for x in journal.read_text().splitlines(keepends=True)
                if "06:38:53+0530" not in x or "Stopped" not in x
            )
        )

    _build(cli, tmp_path, "stop-before-failure", "Asia/Kolkata", no_stop)
    text = _report(tmp_path)
    assert "**GPU memory was released: all 4 GPUs within a second of the failure**" in text
    assert "freed by the stop" not in text
