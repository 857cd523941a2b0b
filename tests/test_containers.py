"""SGLang in a Docker container logging through Docker's journald log driver: the container's
lines are the container's unit (``docker:<name>``), not docker.service; its cgroup scope's start
and OOM kill are that unit's; a restart by Docker is the recovery; the report names the container
and advises its own memory limit and restart policy (QA r7 W3, W4, W9, M6, M7)."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import docker_journal as dj
import pytest
from conftest import parse_text

from postmortem.parsers.base import TableBatch
from postmortem.records import Record, as_dict
from postmortem.store.db import Store


def _rows(outputs: list[Any], table: str) -> list[dict[str, Any]]:
    """The rows of ``table`` among parser outputs, whether records or Arrow blocks."""
    out: list[dict[str, Any]] = []
    for o in outputs:
        if isinstance(o, TableBatch):
            out += o.data.to_pylist() if o.table == table else []
        elif isinstance(o, Record) and table == o.TABLE:
            out.append(as_dict(o))
    return out


def _entries(outputs: list[Any]) -> list[dict[str, Any]]:
    return _rows(outputs, "journal_entries")


@pytest.mark.parametrize("fmt", ["export", "json"])
def test_a_containers_lines_are_its_unit_not_docker_service(fmt: str) -> None:
    j, _, _ = dj.scenario("policy")
    data = j.export() if fmt == "export" else j.json()
    outputs, _ = parse_text(f"journal-{fmt}", data)
    mine = [e for e in _entries(outputs) if e["ident"] == dj.NAME]
    assert mine and {e["unit"] for e in mine} == {"docker:sglang-qwen"}
    assert {e["pid"] for e in mine} == {None}  # dockerd's _PID is no process of the container
    # dockerd's own lines stay docker.service's
    own = [e for e in _entries(outputs) if e["ident"] == "dockerd"]
    assert own and {(e["unit"], e["pid"]) for e in own} == {("docker.service", dj.DOCKERD)}
    (box,) = _rows(outputs, "containers")
    assert (box["runtime"], box["container_id"], box["name"], box["image"], box["unit"], box["host"]) == (
        "docker",
        dj.CID,
        dj.NAME,
        dj.IMAGE,
        "docker:sglang-qwen",
        dj.HOST,
    )
    batches = _rows(outputs, "server_stats")
    assert batches and {r["unit"] for r in batches} == {"docker:sglang-qwen"}
    (ready,) = [r for r in _rows(outputs, "server_events") if r["kind"] == "ready" and r["ts"] < dj.KILL]
    assert ready["unit"] == "docker:sglang-qwen"


def test_verbose_rendering_attributes_the_container_too() -> None:
    text = (
        "Tue 2025-06-10 09:43:01.210414 UTC [s=6502;i=1;b=7da584b387ea6fd6941bca0baa6c0d3c;m=93d1d0ab24;t=63731ffbe5bae;x=1]\n"
        "    _TRANSPORT=journal\n    PRIORITY=3\n    SYSLOG_IDENTIFIER=sglang-qwen\n    _PID=1302\n    _COMM=dockerd\n"
        "    _SYSTEMD_UNIT=docker.service\n    _HOSTNAME=infer-07\n"
        f"    CONTAINER_ID={dj.CID[:12]}\n    CONTAINER_ID_FULL={dj.CID}\n    CONTAINER_NAME=sglang-qwen\n"
        f"    CONTAINER_TAG=sglang-qwen\n    IMAGE_NAME={dj.IMAGE}\n"
        "    MESSAGE=[2025-06-10 09:43:01] The server is fired up and ready to roll!\n"
    )
    outputs, _ = parse_text("journal-verbose", text)
    (entry,) = _entries(outputs)
    assert (entry["unit"], entry["pid"]) == ("docker:sglang-qwen", None)
    assert [r["unit"] for r in _rows(outputs, "containers")] == ["docker:sglang-qwen"]


def test_who_relays_the_line_decides_whose_it_is() -> None:
    cases = [
        # podman's conmon in its own scope: the container is the unit
        ({"_COMM": "conmon", "_SYSTEMD_UNIT": "libpod-conmon-ab.scope"}, "podman:llm"),
        # conmon under a systemd service (a Quadlet): systemd restarts that service, it stays the unit
        ({"_COMM": "conmon", "_SYSTEMD_UNIT": "llm.service"}, "llm.service"),
        # an entry that only carries the fields (not written by a runtime): left as it is
        ({"_COMM": "python3", "_SYSTEMD_UNIT": "app.service"}, "app.service"),
    ]
    for fields, unit in cases:
        obj = {
            "__REALTIME_TIMESTAMP": "1749548581210414",
            "_HOSTNAME": "h",
            "_PID": "4242",
            "SYSLOG_IDENTIFIER": "llm",
            "CONTAINER_ID_FULL": "ab" * 32,
            "CONTAINER_NAME": "llm",
            "MESSAGE": "hello",
            **fields,
        }
        outputs, _ = parse_text("journal-json", json.dumps(obj) + "\n")
        (entry,) = _entries(outputs)
        assert entry["unit"] == unit, fields


# ----------------------------------------------------------------------------- end to end


def _build(cli: Any, tmp_path: Path, fmt: str = "export", restart: str | None = "policy") -> tuple[str, Path]:
    logs = dj.write(tmp_path / "logs", fmt, restart)
    out = tmp_path / "reports"
    db = tmp_path / "pm.duckdb"
    r = cli("build", "--logs", logs, "--db", db, "--out", out, "--tz", "UTC")
    assert r.code == 0, r
    (report,) = [p for p in out.glob("*.md") if p.name != "index.md"]
    return report.read_text(), db


def _row(report: str, label: str) -> str:
    (line,) = [ln for ln in report.splitlines() if ln.startswith(f"| {label} |")]
    return line


@pytest.mark.parametrize("fmt", ["export", "json"])
def test_a_container_restarted_by_docker_is_reported_as_the_container(
    cli: Any, tmp_path: Path, fmt: str
) -> None:
    report, db = _build(cli, tmp_path, fmt)
    # W4: the container's lines are its own: the incident has its server data
    assert report.startswith("# Postmortem: docker:sglang-qwen killed on infer-07 at 2025-06-10 09:41:27 UTC")
    assert "docker.service" not in report
    assert _row(report, "Requests at the kill").startswith(
        "| Requests at the kill | 219 running, 209 queued ("
    )
    assert "No server startup was found" not in report and "server_stats: no data" not in report
    assert "**Bound the request queue** (high)" in report
    # M6: the container is named, with its image and short id; its limit is docker's --memory
    assert (
        "Docker container `sglang-qwen`: image `lmsysorg/sglang:v0.4.10-cu126`, id `3f2a9c0d1e4b`; the "
        f"kernel's OOM record names its cgroup `/system.slice/docker-{dj.CID}.scope`." in report
    )
    assert (
        report.count("Docker container sglang-qwen (image lmsysorg/sglang:v0.4.10-cu126, id 3f2a9c0d1e4b;")
        == 1
    )
    assert "the container's memory limit: docker run --memory, compose mem_limit" in report
    assert (
        "| Review the memory limit of container sglang-qwen (docker run --memory, compose mem_limit) |"
        in report
    )
    assert "MemoryMax=" not in report and "OOMPolicy=" not in report
    # W3: Docker's restart policy restarted it; ready 92.8 s after its start, 93.9 s after the kill
    assert "not a service" not in report and "systemd does not start it again" not in report
    assert (
        _row(report, "Downtime (kill → service ready)")
        == "| Downtime (kill → service ready) | **1 min 34 s** (94 s, 09:41:27 → 09:43:01 UTC) |"
    )
    assert "09:41:27 → 09:43:01 UTC" in _row(report, "Downtime (kill → service ready)")
    assert (
        _row(report, "Brought back by")
        == "| Brought back by | docker:sglang-qwen (Docker's restart policy) |"
    )
    assert _row(report, "Automatic restarts") == "| Automatic restarts | 1 |"
    assert (
        "Service was down for 1 min 34 s until a restart of container sglang-qwen by Docker's restart policy, "
        "started at 09:41:28 UTC, was ready at 09:43:01 UTC after a 1 min 33 s load." in report
    )
    assert "| Decide the restart policy (--restart) of container sglang-qwen |" in report
    # M7: the timeline runs until the container was ready again
    assert (
        "| 2025-06-10 09:43:01 | sglang | docker:sglang-qwen ready after a 1 min 33 s load — service restored |"
        in report
    )
    # W9: the idle GPUs 4–7 released nothing
    assert "| gpu | GPU memory released on docker:sglang-qwen's GPUs 0–3 (nvidia-smi) |" in report
    assert "all 8 GPUs" not in report
    # the store: the kernel's record of the scope is the container's (the id in the cgroup path
    # is its CONTAINER_ID_FULL), and so are the scope's starts and the server's loads
    with Store.open_readonly(db) as store:
        kills = store.fetchall("SELECT unit, oom_memcg FROM oom_kills WHERE killer = 'kernel'")
        assert kills == [("docker:sglang-qwen", f"/system.slice/docker-{dj.CID}.scope")]
        starts = store.fetchall("SELECT DISTINCT unit FROM unit_events WHERE action = 'started'")
        assert starts == [("docker:sglang-qwen",)]
        loads = store.fetchall(
            "SELECT unit, start_source, outcome, round(load_s, 1) FROM service_loads ORDER BY start_ts"
        )
        assert loads == [
            ("docker:sglang-qwen", "systemd_started", "ready", 186.7),
            ("docker:sglang-qwen", "systemd_started", "ready", dj.LOAD_S),
        ]
        incident = store.fetchall(
            "SELECT unit, recovery_unit, restart_count, round(downtime_s, 1) FROM incidents"
        )
        assert incident == [("docker:sglang-qwen", "docker:sglang-qwen", 1, 93.9)]
    index = (tmp_path / "reports" / "index.md").read_text()
    assert (
        "| `docker:sglang-qwen` | cgroup memory limit (kernel memcg OOM killer) | 1 min 34 s | docker:sglang-qwen |"
        in index
    )


def test_a_container_the_operator_started_again_is_the_recovery_not_an_automatic_restart(
    cli: Any, tmp_path: Path
) -> None:
    report, _ = _build(cli, tmp_path, restart="operator")
    assert _row(report, "Downtime (kill → service ready)").startswith(
        "| Downtime (kill → service ready) | **1 min 57 s**"
    )
    assert _row(report, "Brought back by") == "| Brought back by | docker:sglang-qwen |"
    assert _row(report, "Automatic restarts") == "| Automatic restarts | — |"
    assert "| operator | operator ran `/usr/bin/docker start sglang-qwen` |" in report
    assert "until a restart of container sglang-qwen, started at 09:41:51 UTC" in report
    assert "restart policy" not in report


def test_a_container_nobody_started_again_is_down_not_no_service(cli: Any, tmp_path: Path) -> None:
    report, _ = _build(cli, tmp_path, restart=None)
    assert "not a service" not in report
    assert _row(report, "Downtime (kill → service ready)") == (
        "| Downtime (kill → service ready) | **not restored in the data** |"
    )
    assert (
        "No source shows container sglang-qwen serving again: Docker starts a container again only under "
        "a restart policy (--restart on-failure or unless-stopped), else an operator must." in report
    )
    assert "**Give container sglang-qwen a restart policy** (medium)" in report
    assert "systemctl reset-failed" not in report


def test_a_dmesg_record_of_a_cgroupfs_container_is_the_containers(cli: Any, tmp_path: Path) -> None:
    """Docker under the cgroupfs driver (no systemd scope): the kernel's record, read from dmesg
    (4.x wording), names the container's cgroup /docker/<id>; that id is the CONTAINER_ID_FULL
    of the journal's container lines, so the kill is the container's and so is its recovery."""
    j, _, _ = dj.scenario("policy")
    j.entries = [e for e in j.entries if dict(e[2]).get("SYSLOG_IDENTIFIER") not in ("kernel", "systemd")]
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "journal.json").write_text(j.json())
    cg = f"/docker/{dj.CID}"
    record = [
        "python3 invoked oom-killer: gfp_mask=0x24000c0(GFP_KERNEL), order=0, oom_score_adj=0",
        f"python3 cpuset={dj.CID} mems_allowed=0-1",
        f"CPU: 37 PID: {dj.PID1} Comm: python3 Tainted: G           O    4.15.0-213-generic #224-Ubuntu",
        f"Task in {cg} killed as a result of limit of {cg}",
        "memory: usage 100663296kB, limit 100663296kB, failcnt 1873",
        "[ pid ]   uid  tgid total_vm      rss pgtables_bytes swapents oom_score_adj name",
        f"[{dj.PID1}]     0 {dj.PID1} 25165824 18612000 153444352        0             0 python3",
        f"Memory cgroup out of memory: Kill process {dj.PID1} (python3) score 1000 or sacrifice child",
        f"Killed process {dj.PID1} (python3) total-vm:100663296kB, anon-rss:74428000kB, file-rss:20000kB, "
        "shmem-rss:0kB",
    ]
    (logs / "dmesg.txt").write_text(
        "".join(f"2025-06-10T09:41:27,{338000 + i:06d}+00:00 {m}\n" for i, m in enumerate(record))
    )
    (logs / "nvidia-smi-gpu.csv").write_text(
        dj.nvidia_smi(dj.BY_POLICY, dj.BY_POLICY + timedelta(seconds=dj.LOAD_S))
    )
    out = tmp_path / "reports"
    r = cli(
        "build",
        "--logs",
        logs,
        "--db",
        tmp_path / "pm.duckdb",
        "--out",
        out,
        "--tz",
        "UTC",
        "--host",
        dj.HOST,
    )
    assert r.code == 0, r
    (report,) = [p.read_text() for p in out.glob("*.md") if p.name != "index.md"]
    assert report.startswith("# Postmortem: docker:sglang-qwen killed on infer-07 at 2025-06-10 09:41:27 UTC")
    assert f"the kernel's OOM record names its cgroup `{cg}`." in report
    assert (
        _row(report, "Downtime (kill → service ready)")
        == "| Downtime (kill → service ready) | **1 min 34 s** (94 s, 09:41:27 → 09:43:01 UTC) |"
    )
    assert "the container's memory limit: docker run --memory, compose mem_limit" in report
    # no scope, so no start of it to count: it came back, though, so no restart policy is missing
    assert _row(report, "Automatic restarts") == "| Automatic restarts | — |"
    assert "restart policy" not in report
