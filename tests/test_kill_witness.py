"""An EL7 night (kernel 3.10, systemd 219): the kernel's OOM record, in seconds since boot,
names no cgroup, and the journal is a text file without boot ids. systemd's line about the
server unit's SIGKILL, the only one of the host, dates the kill (anchor_monotonic.sql); a
stop's SIGKILL, or two candidate lines, date nothing. Inputs in tests/data/nights/el7/, cut
from a generated night (scenario seed 7, night 116)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data" / "nights" / "el7"
KILL = "Apr 05 23:54:17 gh200-r2n4 systemd[1]: sglang@k26.service: main process exited, code=killed, status=9/KILL\n"


def _build(cli: Any, tmp_path: Path, journal_extra: str = "") -> tuple[list[dict[str, Any]], str]:
    logs = tmp_path / "logs"
    shutil.copytree(DATA, logs)
    if journal_extra:
        text = (logs / "journal.txt").read_text().replace(KILL, journal_extra)
        (logs / "journal.txt").write_text(text)
    db = tmp_path / "pm.duckdb"
    r = cli("build", "--logs", logs, "--db", db, "--out", tmp_path / "out", "--tz", "America/Los_Angeles")
    assert r.code == 0, r
    return json.loads(cli("incidents", "--db", db, "--format", "json").out), r.out


def test_systemd_s_kill_line_dates_a_kill_no_cgroup_names(cli: Any, tmp_path: Path) -> None:
    incs, out = _build(cli, tmp_path)
    assert [(i["unit"], i["cause"], i["ts"][:19]) for i in incs] == [
        ("sglang@k26.service", "host_oom", "2024-04-06T06:54:17")
    ]
    assert "with no time" not in out
    (report,) = (p for p in (tmp_path / "out").glob("*.md") if p.name != "index.md")
    assert "The kernel killed sglang::schedul (pid 6077" in report.read_text()


def test_a_stop_s_sigkill_is_no_witness(cli: Any, tmp_path: Path) -> None:
    """systemd was stopping the unit: its SIGKILL (a stop timeout) says nothing of the OOM kill."""
    stop = "Apr 05 23:52:47 gh200-r2n4 systemd[1]: Stopping SGLang server for k26...\n"
    incs, out = _build(cli, tmp_path, stop + KILL)
    assert "1 OOM kill(s) with no time" in out
    assert all(i["cause"] != "host_oom" for i in incs)


def test_two_candidate_lines_date_nothing(cli: Any, tmp_path: Path) -> None:
    """Two SIGKILL lines of server units 30 s apart: the kill cannot be told to be either."""
    again = KILL.replace("23:54:17", "23:54:47")
    incs, out = _build(cli, tmp_path, KILL + again)
    assert "1 OOM kill(s) with no time" in out
    assert all(i["cause"] != "host_oom" for i in incs)


def test_a_stop_done_in_its_own_second_leaves_the_witness(cli: Any, tmp_path: Path) -> None:
    """systemd 219 names a unit it stops by its Description; "Stopping" and "Stopped" of a
    neighbour in the same whole second (line order says which came first) is a stop that
    ended, not one still pending at the kill (scenario seed 101, nights 28 and 138)."""
    neighbour = (
        "Apr 05 23:50:02 gh200-r2n4 systemd[1]: Stopping NVIDIA DCGM exporter...\n"
        "Apr 05 23:50:02 gh200-r2n4 systemd[1]: Stopped NVIDIA DCGM exporter.\n"
        "Apr 05 23:50:02 gh200-r2n4 systemd[1]: Starting NVIDIA DCGM exporter...\n"
        "Apr 05 23:50:02 gh200-r2n4 systemd[1]: Started NVIDIA DCGM exporter.\n"
    )
    incs, out = _build(cli, tmp_path, neighbour + KILL)
    assert "with no time" not in out
    assert [(i["unit"], i["cause"]) for i in incs] == [("sglang@k26.service", "host_oom")]


def test_a_stop_after_the_kill_in_its_second_is_no_stop_pending(cli: Any, tmp_path: Path) -> None:
    """The same, the other way round: "Stopped" logged in the stop's second but on an earlier
    line than "Stopping" cannot end it (the stop stays pending: no witness)."""
    pending = (
        "Apr 05 23:50:02 gh200-r2n4 systemd[1]: Stopped SGLang server for k26.\n"
        "Apr 05 23:50:02 gh200-r2n4 systemd[1]: Stopping SGLang server for k26...\n"
    )
    incs, out = _build(cli, tmp_path, pending + KILL)
    assert "1 OOM kill(s) with no time" in out
    assert all(i["cause"] != "host_oom" for i in incs)


def test_the_advice_names_the_memory_setting_systemd_219_has(cli: Any, tmp_path: Path) -> None:
    """systemd 219 has MemoryLimit= (MemoryMax= came in v231) and no OOMPolicy= (v243): its
    wording ("main process exited", "holdoff time over") says so; a boot line naming the
    version wins."""
    _build(cli, tmp_path / "a")
    (report,) = (p for p in (tmp_path / "a" / "out").glob("*.md") if p.name != "index.md")
    text = report.read_text()
    assert "Put `sglang@k26.service` under MemoryLimit=" in text and "OOMPolicy=" not in text
    boot = "Apr 05 20:00:00 gh200-r2n4 systemd[1]: systemd 245 running in system mode. (+PAM +AUDIT)\n"
    _build(cli, tmp_path / "b", boot + KILL)
    (report,) = (p for p in (tmp_path / "b" / "out").glob("*.md") if p.name != "index.md")
    assert "Put `sglang@k26.service` under MemoryMax=" in report.read_text()
