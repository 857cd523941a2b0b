"""Hand-made nights (``handmade_nights``) built end to end, their facts checked against the
truth each was written with (QA brief 3)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import handmade_nights as nights
import pytest

from postmortem.store.db import Store


def _incidents(db: Path) -> dict[str, dict[str, Any]]:
    store = Store.open_readonly(db)
    try:
        cur = store.con.execute("SELECT * FROM incidents")
        names = [d[0] for d in cur.description]
        return {str(r[names.index("host")]): dict(zip(names, r, strict=True)) for r in cur.fetchall()}
    finally:
        store.close()


def _build(cli: Any, logs: Path, tmp_path: Path) -> dict[str, dict[str, Any]]:
    db = tmp_path / "pm.duckdb"
    res = cli(
        "build",
        "--logs",
        logs,
        "--tz",
        "America/Chicago",
        "--year",
        "2026",
        "--db",
        db,
        "--out",
        tmp_path / "out",
    )
    assert res.code == 0, res.err
    return _incidents(db)


def test_a_utc_server_log_beside_a_zone_less_journal_is_put_on_the_journals_clock(
    cli: Any, tmp_path: Path
) -> None:
    """Both read in the zone --tz names; the server's configuration line comes five hours after
    systemd started its unit: the log was written in UTC, not the journal's zone, and the
    downtime is minutes, not hours."""
    logs = nights.two_hosts(tmp_path / "logs") / "gh200-a"
    inc = _build(cli, logs, tmp_path)["gh200-a"]
    assert inc["ts"] == pytest.approx(nights.GH200_KILL, abs=nights.D(seconds=1))
    assert inc["recovered_ts"] == pytest.approx(nights.GH200_READY, abs=nights.D(seconds=1))
    assert inc["running_at_kill"] == 128


def test_a_run_linked_in_the_analysis_is_seen_by_every_gathering_thread(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two hosts' incidents gathered by two threads on the first build: the vLLM lines of the
    RHEL host's syslog, linked to their unit by the analysis itself, give the requests at the
    kill (the threads' connections see only what is committed)."""
    import postmortem.analysis as analysis

    monkeypatch.setattr(analysis, "usable_cpus", lambda: 4)
    incs = _build(cli, nights.two_hosts(tmp_path / "logs"), tmp_path)
    inc = incs["rhel8-b"]
    assert inc["recovered_ts"] == pytest.approx(nights.RHEL_READY, abs=nights.D(seconds=1))
    assert (inc["running_at_kill"], inc["queued_at_kill"]) == (200, 12)
    assert "mixtral" in inc["summary"]


def test_a_node_ooms_neighbour_is_sized_from_its_own_memory_not_the_nodes(cli: Any, tmp_path: Path) -> None:
    """A node-wide OOM's task table lists every pod's processes: the limit suggested for the
    killed container comes from what its own process held (240 GiB → 288Gi), not from the
    whole table (445 GiB, the vLLM pod's engine core included)."""
    logs = nights.node_oom_neighbour(tmp_path / "logs")
    db = tmp_path / "pm.duckdb"
    assert cli("build", "--logs", logs, "--tz", "UTC", "--db", db, "--out", tmp_path / "out").code == 0
    inc = _incidents(db)["gpu-node-9"]
    assert (inc["cause"], inc["victim_pid"]) == ("host_oom", 301777)
    store = Store.open_readonly(db)
    try:
        (detail,) = store.con.execute(
            "SELECT detail FROM recommendations WHERE rule = 'k8s_memory_limit'"
        ).fetchone()
    finally:
        store.close()
    gib = nights.NEIGHBOUR_RSS_KB / 1024 / 1024
    assert f"its processes held {gib:.0f} GiB: at least {-(-gib * 1.2 // 1):.0f}Gi" in detail, detail


def test_a_neighbour_a_node_oom_killed_is_no_outage_of_serving(cli: Any, tmp_path: Path) -> None:
    """The node OOM kills the ETL pod's python, not vLLM, whose statistics go on for 20 minutes:
    the etl container ran no server, so its report is no SEV-1 "not restored" but a SEV-3
    saying so, and trends leave it out of the downtimes. Without the vLLM pod's log nothing
    says the killed container did not serve: the report stays as it was."""
    logs = nights.node_oom_neighbour(tmp_path / "logs", serving_log=True)
    db = tmp_path / "pm.duckdb"
    out = tmp_path / "out"
    assert cli("build", "--logs", logs, "--tz", "UTC", "--db", db, "--out", out).code == 0
    inc = _incidents(db)["gpu-node-9"]
    assert (inc["unit"], inc["serving"], inc["downtime_s"]) == (
        "k8s:batch/etl-28571234-x7k2p/etl",
        False,
        None,
    )
    (report,) = out.glob("gpu-node-9-*etl*.md")
    text = report.read_text()
    assert "| Severity | **SEV-3** — no outage of serving: no server ran in it |" in text
    assert "k8s:inference/vllm-0/vllm went on serving after the kill" in text
    trends = cli("trends", "--db", db, "--out", tmp_path / "trends")
    assert trends.code == 0, trends.err
    assert "not restored" not in (tmp_path / "trends" / "trends.md").read_text()

    bare = nights.node_oom_neighbour(tmp_path / "bare")
    db2 = tmp_path / "bare.duckdb"
    assert cli("build", "--logs", bare, "--tz", "UTC", "--db", db2, "--out", tmp_path / "out2").code == 0
    assert _incidents(db2)["gpu-node-9"]["serving"] is None


def test_a_worker_that_outlived_the_final_sigkill_is_named_as_holding_the_gpu(
    cli: Any, tmp_path: Path
) -> None:
    """systemd's ``Processes still around after final SIGKILL`` names no process: the ones it
    SIGKILLed in that stop are they. nvidia-smi lists that pid on the GPU to the end of the
    data, so the report names it as left behind, instead of saying that all four GPUs stayed
    up (three of them were freed once the others died) — and writes it without failing (the
    lessons' words of a listed process)."""
    logs = nights.stuck_worker(tmp_path / "logs")
    db = tmp_path / "pm.duckdb"
    assert cli("build", "--logs", logs, "--tz", "UTC", "--db", db, "--out", tmp_path / "out").code == 0
    store = Store.open_readonly(db)
    try:
        (title, detail) = store.con.execute(
            "SELECT title, detail FROM recommendations WHERE rule = 'verify_gpu_freed'"
        ).fetchone()
    finally:
        store.close()
    assert title == "GPU memory was left behind by dead processes", detail
    assert f"pids {nights.STUCK_PID}" in detail and "(30 min) after the kill" in detail, detail
    assert "only a GPU reset or a reboot frees their memory" in detail and "kill them" not in detail, detail
    (report,) = (tmp_path / "out").glob("gpu-g4-*.md")
    assert "GPU memory stayed held after the kill by 1 process of the unit, still 30 min after it." in (
        report.read_text()
    )


def test_a_killed_process_nvidia_smi_still_lists_is_reported_without_failing(
    cli: Any, tmp_path: Path
) -> None:
    """The kernel's victim still listed on the GPU half an hour on: the lessons say so (their
    words for a listed process read a variable only the other case has: exit 70)."""
    logs = nights.stuck_worker(tmp_path / "logs", holder=5200)
    res = cli(
        "build", "--logs", logs, "--tz", "UTC", "--db", tmp_path / "pm.duckdb", "--out", tmp_path / "out"
    )
    assert res.code == 0, res.err
    (report,) = (tmp_path / "out").glob("gpu-g4-*.md")
    assert "GPU memory stayed held after the kill by 1 process of the unit, still 30 min after it." in (
        report.read_text()
    )


def test_a_container_known_by_its_scope_alone_is_a_container_that_docker_restarts(
    cli: Any, tmp_path: Path
) -> None:
    """A text journal names the container by its scope only, and ``docker logs -t`` saved its
    server's lines: the scope is the container (``docker:<short id>``), its log is linked to it
    by its starts, the restart by Docker is the recovery, and no line says ``None`` or that
    nothing starts it again."""
    logs = nights.docker_logs(tmp_path / "logs")
    db = tmp_path / "pm.duckdb"
    assert cli("build", "--logs", logs, "--tz", "UTC", "--db", db, "--out", tmp_path / "out").code == 0
    inc = _incidents(db)["gpu-d1"]
    unit = "docker:" + nights.DOCKER_CID[:12]
    assert (inc["unit"], inc["recovery_unit"], inc["cause"]) == (unit, unit, "cgroup_oom")
    assert inc["recovered_ts"] == pytest.approx(nights.DOCKER_READY, abs=nights.D(seconds=1))
    assert inc["running_at_kill"] == 256
    (report,) = (tmp_path / "out").glob("gpu-d1-*.md")
    text = report.read_text()
    assert "None" not in text and "systemd does not start it again" not in text
    assert "Docker started it again by its restart policy 3 s after the kill" in text
    assert "MemoryMax" not in text.split("# Appendix")[0]
    # known by its id alone: no "image —" nor its id said twice
    assert "image `—`" not in text and f"id {nights.DOCKER_CID[:12]}" not in text


@pytest.mark.parametrize(
    ("night", "unit", "serving"),
    [
        # backup.service (python3) killed by a host OOM, sglang-a.service serving on: a neighbour
        ("c1-python3", "backup.service", False),
        # sglang-b.service killed (victim python3), its log not given: its name is a server's
        ("c2-python3", "sglang-b.service", None),
        # the other server died in the same OOM and systemd restarted it: it did not go on
        ("c4b-both-restarted", "backup.service", None),
        # two hosts: llm.service killed on gpu-a, sglang-a's log (no host in it) is gpu-b's
        ("c6b-xhost-server", "llm.service", None),
    ],
)
def test_who_served_when_a_unit_is_killed(
    cli: Any, tmp_path: Path, night: str, unit: str, serving: bool | None
) -> None:
    """A QA helper's nights against ``Incident.serving`` (false only with positive evidence)."""
    db = tmp_path / "pm.duckdb"
    logs = Path(__file__).parent / "data" / "nights" / "qa" / "serving" / night
    assert cli("build", "--logs", logs, "--tz", "UTC", "--db", db, "--out", tmp_path / "out").code == 0
    store = Store.open_readonly(db)
    try:
        got = dict(store.con.execute("SELECT unit, serving FROM incidents").fetchall())
    finally:
        store.close()
    assert got[unit] is serving, got
