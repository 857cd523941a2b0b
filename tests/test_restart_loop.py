"""A server in a restart loop killed by its cgroup's OOM killer dozens of times, never ready
between: one incident, and a report a person can read — the summary names the first kills and
counts the rest, the killed-process table shows the first and last rows and how many between,
while the JSON report keeps every one."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from postmortem.analysis.model import Victim

T0 = datetime(2026, 3, 18, 13, 50, tzinfo=UTC)
UNIT = "llm.service"
KILLS = 40
EVERY = timedelta(seconds=37)


def _journal(kills: int = KILLS) -> str:
    lines = [(T0, f"systemd[1]: Started {UNIT} - LLM server.")]
    for k in range(kills):
        at = T0 + timedelta(minutes=2) + EVERY * k
        pid = 6000 + k
        lines += [
            (at, "kernel: python3 invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, oom_score_adj=0"),
            (at, f"kernel: memory: usage 671088640kB, limit 671088640kB, failcnt {k + 1}"),
            (at, f"kernel: oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0-1,oom_memcg=/system.slice/{UNIT},task_memcg=/system.slice/{UNIT},task=python3,pid={pid},uid=998"),
            (at, f"kernel: Memory cgroup out of memory: Killed process {pid} (python3) total-vm:285017324kB, anon-rss:79572404kB, file-rss:757768kB, shmem-rss:1048576kB, UID:998 pgtables:167968kB oom_score_adj:0"),
            (at, f"systemd[1]: {UNIT}: A process of this unit has been killed by the OOM killer."),
            (at, f"systemd[1]: {UNIT}: Main process exited, code=killed, status=9/KILL"),
            (at, f"systemd[1]: {UNIT}: Failed with result 'oom-kill'."),
            (at + timedelta(seconds=5), f"systemd[1]: Started {UNIT} - LLM server."),
        ]  # fmt: skip
    return "".join(f"{ts:%Y-%m-%dT%H:%M:%S+0000} gpu1 {text}\n" for ts, text in lines)


def _report(cli: Any, where: Path, journal: str, *formats: str) -> str:
    """Build over ``journal`` (in its own directory under ``where``) and return the incident's
    Markdown report; ``formats``: more builds of the same store, each in another format."""
    logs, out = where / "logs", where / "reports"
    logs.mkdir(parents=True)
    (logs / "journal.txt").write_text(journal)
    for fmt in ("markdown", *formats):
        r = cli(
            "build", "--logs", logs, "--db", where / "pm.duckdb", "--out", out, "--tz", "UTC", "--format", fmt
        )
        assert r.code == 0, r
    (report,) = [p for p in out.glob("*.md") if p.name != "index.md"]
    return report.read_text()


def test_a_restart_loops_report_counts_the_kills_it_does_not_list(cli: Any, tmp_path: Path) -> None:
    text = _report(cli, tmp_path, _journal(), "json")
    out = tmp_path / "reports"
    summary = text.split("\n\n## ", 2)[1]
    assert summary.count("later it killed") == 3
    last = (EVERY * (KILLS - 1)).total_seconds()
    assert f"then {KILLS - 4} more processes of the unit, each in a record of its own, the last" in summary
    assert f"{int(last // 60)} min" in summary.split("the last ")[1][:20]
    count, table = text.split("Killed processes (")[1].split("\n\n")[:2]
    assert count == f"{KILLS}):"
    rows = [ln for ln in table.splitlines() if ln.startswith("| ") and not ln.startswith("| PID")]
    assert len(rows) == 13  # the first ten, the count, the last two
    assert f"{KILLS - 12} more processes (every one in the JSON report)" in rows[10]
    assert rows[-1].startswith(f"| {6000 + KILLS - 1} |")
    # the short timeline: the first three kills, one row counting the rest, the last one
    body = text.split("\n## Timeline\n")[1].split("\n---\n")[0]
    kills = [ln for ln in body.splitlines() if "Killed process" in ln]
    assert len(kills) == 4
    (count,) = [ln for ln in body.splitlines() if "more OOM kills" in ln]
    appendix = text.split("## E. Full timeline")[1].split("## F.")[0]
    shown = [ln for ln in appendix.splitlines() if "Killed process" in ln]
    assert (
        f"| {len(shown) - 4} more OOM kills of {UNIT}, each with systemd's lines about it, the last at"
        in count
    )
    assert "more OOM kills" not in appendix
    # the data keeps every kill
    (data,) = [p for p in out.glob("*.json") if p.name != "index.json"]
    assert len(json.loads(data.read_text())["victims"]) == KILLS
    assert len(text) < 40_000


def _rows(times: list[int]) -> tuple[list[Any], list[Any]]:
    from postmortem.report.context.timeline import _Meta
    from postmortem.report.context.types import TimelineRow

    rows, metas = [], []
    for k, sec in enumerate(times):
        ts = T0 + timedelta(seconds=sec)
        for origin, kind in (("kernel", "oom_kill"), ("systemd", "failed")):
            rows.append(TimelineRow(f"{ts:%Y-%m-%d %H:%M:%S}", "", origin, f"{kind} {k}", f"j:{k}"))
            metas.append(_Meta(ts, origin, kind, UNIT, ""))
    return rows, metas


def test_one_group_kill_is_not_a_loop() -> None:
    """Eight processes killed in one record (memory.oom.group) are one kill, in the same second:
    nothing is folded; six kills at six times are a loop."""
    from postmortem.report.context.timeline import _fold_loop

    rows, metas = _rows([0] * 8)
    assert _fold_loop(list(rows), metas, UNIT, "2026-03-18") == rows
    rows, metas = _rows([0, 37, 74, 111, 148, 185])
    folded = _fold_loop(list(rows), metas, UNIT, "2026-03-18")
    assert [r.event for r in folded if r.key] == [
        "oom_kill 0", "failed 0", "oom_kill 1", "failed 1", "oom_kill 2", "failed 2",
        f"2 more OOM kills of {UNIT}, each with systemd's lines about it, the last at 13:52:28 (every one in the full timeline)",
        "oom_kill 5", "failed 5",
    ]  # fmt: skip
    assert [r.event for r in folded if r.full] == [r.event for r in rows]


def test_a_loop_past_midnight_dates_its_last_folded_kill() -> None:
    """The short timeline's times leave out the kill's date; the count row's 'the last at'
    kill on the next day gives its date, or it reads as earlier than the first kill."""
    from postmortem.report.context.timeline import _fold_loop

    rows, metas = _rows([0, 37, 74, 111, 148, 185])  # the first kill at 13:50:00 on 03-18
    day = "2026-03-17"  # as if the incident's kill were the day before
    (count,) = [r.event for r in _fold_loop(list(rows), metas, UNIT, day) if not r.full]
    assert "the last at 2026-03-18 13:52:28 (every one" in count


def test_another_units_kills_are_neither_counted_nor_folded() -> None:
    """Two units killed in turn: the loop's count is its own unit's kills, and the other
    unit's kills (and systemd's rows about them) stay in the short timeline."""
    from postmortem.report.context.timeline import _fold_loop

    rows, metas = _rows([0, 37, 74, 111, 148, 185])
    for i in range(len(metas)):
        if i // 2 % 2:  # every other kill is embed.service's
            metas[i] = dataclasses.replace(metas[i], unit="embed.service")
    assert _fold_loop(list(rows), metas, UNIT, "2026-03-18") == rows  # three kills each
    rows, metas = _rows([0, 37, 74, 111, 148, 185, 222, 259, 296])
    metas[8] = dataclasses.replace(metas[8], unit="embed.service")  # kill 4's systemd row
    metas[9] = dataclasses.replace(metas[9], unit="embed.service")
    folded = _fold_loop(list(rows), metas, UNIT, "2026-03-18")
    shown = [r.event for r in folded if r.key]
    assert "oom_kill 4" in shown and "failed 4" in shown
    (count,) = [r for r in shown if "more OOM kills" in r]
    assert count.startswith(f"4 more OOM kills of {UNIT},")


def test_one_kill_beyond_the_named_or_the_listed_is_shown_not_counted(cli: Any, tmp_path: Path) -> None:
    """Counting a single kill takes the words (or the table row) that naming it would: five
    kills name all four later ones in the summary; thirteen victims fill thirteen table rows."""
    for kills in (5, 13):
        text = _report(cli, tmp_path / str(kills), _journal(kills))
        assert " 1 more process" not in text
        summary = text.split("\n\n## ", 2)[1]
        assert summary.count("later it killed") == (4 if kills == 5 else 3)
        table = text.split("Killed processes (")[1].split("\n\n")[1]
        rows = [ln for ln in table.splitlines() if ln.startswith("| ") and not ln.startswith("| PID")]
        assert [int(ln.split(" | ")[0][2:]) for ln in rows] == [6000 + k for k in range(kills)]


def test_a_start_limit_an_operator_reset_mid_loop_is_not_where_systemd_gave_up(
    cli: Any, tmp_path: Path
) -> None:
    """systemd hit the start limit after the fourth kill, an operator reset it and the loop went
    on: the summary, which tells the last kill minutes later, must not say systemd gave up then;
    a start limit after the last kill is where it gave up."""
    at = T0 + timedelta(minutes=2) + EVERY * 3 + timedelta(seconds=6)
    mid = [
        (at, f"systemd[1]: {UNIT}: Start request repeated too quickly."),
        (at, f"systemd[1]: {UNIT}: Failed with result 'start-limit-hit'."),
        (at, f"systemd[1]: Failed to start {UNIT} - LLM server."),
        (at + timedelta(seconds=3), "sudo[4242]:    alice : TTY=pts/0 ; PWD=/home/alice ; USER=root ; "
         f"COMMAND=/usr/bin/systemctl reset-failed {UNIT}"),
    ]  # fmt: skip
    end = T0 + timedelta(minutes=2) + EVERY * 7 + timedelta(seconds=6)
    for name, extra in (("mid", mid), ("end", [(t + (end - at), x) for t, x in mid[:3]])):
        text = "".join(f"{ts:%Y-%m-%dT%H:%M:%S+0000} gpu1 {x}\n" for ts, x in extra)
        lines = sorted((_journal(8) + text).splitlines(keepends=True), key=lambda ln: ln[:24])
        full = _report(cli, tmp_path / name, "".join(lines))
        summary = full.split("\n\n## ", 2)[1]
        assert ("systemd gave up restarting it" in summary) is (name == "end"), summary
        assert "restart(s)" not in full
        if name == "end":
            # (no "restart counter is at N" line here: "several")
            assert "After several automatic restarts systemd stopped trying" in full, full


def test_a_pods_loop_is_not_told_with_systemds_lines() -> None:
    """A pod or a container killed again and again has no systemd unit: the count row must not
    say systemd's lines went with each kill."""
    from postmortem.report.context.timeline import _fold_loop

    pod = "k8s:inference/vllm-llama-0/vllm"
    rows, metas = _rows([0, 30, 60, 90, 120, 150, 180])
    rows, metas = rows[::2], [dataclasses.replace(m, unit=pod) for m in metas[::2]]  # kernel rows only
    (count,) = [r.event for r in _fold_loop(list(rows), metas, pod, "2026-03-18") if not r.full]
    assert count == f"3 more OOM kills of {pod}, the last at 13:52:30 (every one in the full timeline)"


def test_the_named_later_kills_are_timed_one_after_the_other(cli: Any, tmp_path: Path) -> None:
    """'37 s later it killed ...; 1 min 14 s later it killed ...' reads as 1 min 51 s after the
    first: each named kill is timed from the one before it, the counted ones' last from the
    first."""
    summary = _report(cli, tmp_path, _journal(8)).split("\n\n## ", 2)[1]
    assert summary.count("; 37 s later it killed python3") == 3
    assert (
        f"the last {int(EVERY.total_seconds() * 7 // 60)} min {int(EVERY.total_seconds() * 7 % 60)} s after the first"
        in summary
    )


def test_a_loop_of_group_kills_counts_every_process_it_killed(cli: Any, tmp_path: Path) -> None:
    """Each record of the loop killed three processes (memory.oom.group): the named kills say
    so, and the counted ones are 3 x 4 processes in 4 records, not '4 more processes'."""
    lines = []
    for ln in _journal(8).splitlines(keepends=True):
        lines.append(ln)
        if "Killed process" in ln:
            pid = int(ln.split("Killed process ")[1].split()[0])
            stamp = ln[: ln.index(" kernel:")]
            lines.append(
                f"{stamp} kernel: Tasks in /system.slice/{UNIT} are going to be killed due to memory.oom.group set\n"
            )
            for extra in (pid + 1000, pid + 2000):
                lines.append(
                    ln.replace(f"process {pid} ", f"process {extra} ").replace(
                        "anon-rss:79572404kB", "anon-rss:1048576kB"
                    )
                )
    text = _report(cli, tmp_path, "".join(lines))
    assert "Killed processes (24):" in text
    summary = text.split("\n\n## ", 2)[1]
    assert summary.count("(pid 6001) and 2 more processes of the same unit again") == 1
    assert "; then 12 more processes of the unit in 4 more records, the last " in summary


def test_a_containers_loop_without_systemd_keeps_its_later_kills_in_the_timeline(
    cli: Any, tmp_path: Path
) -> None:
    """A Docker container killed nine times (kernel records only: Docker restarts it, no systemd
    line), never back: the timeline ended a minute after the first kill, so the body and the
    appendix had two of the nine kills and no count."""
    scope = "docker-3f2a9c0d1e4b05a2deee17089f494157a377a8c942734b7a3910db273d7faf0c.scope"
    kernel = [ln.replace(UNIT, scope) for ln in _journal(9).splitlines(keepends=True) if " kernel: " in ln]
    text = _report(cli, tmp_path, "".join(kernel))
    body = text.split("\n## Timeline\n")[1].split("\n---\n")[0]
    assert len([ln for ln in body.splitlines() if "Killed process" in ln]) == 4
    assert "| 5 more OOM kills of " in body
    appendix = text.split("## E. Full timeline")[1].split("## F.")[0]
    assert len([ln for ln in appendix.splitlines() if "Killed process" in ln]) == 9


def test_a_containers_loop_is_told_as_a_containers() -> None:
    """A Docker or Kubernetes container killed again and again is not 'the same unit'."""
    from postmortem.analysis.model import Incident
    from postmortem.analysis.summary import _victims

    for unit, kin in (
        ("k8s:inference/vllm-llama-0/vllm", "container"),
        ("docker:llm", "container"),
        (UNIT, "unit"),
    ):
        victims = [
            Victim(6000 + k, "python3", T0 + EVERY * k, 1 << 20, 1, k + 1, chosen=True, oom_id=k)
            for k in range(6)
        ]
        inc = Incident(1, "gpu1", T0, unit, "cgroup_oom", 0.9, victims=victims)
        said = _victims(inc)
        assert said is not None and said["kin"] == kin and said["later_more"] == 2
