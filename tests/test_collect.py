"""``postmortem collect`` against stand-in commands, and bundles as ingest/build inputs.

The stand-ins (tests/data/collect/bin) print recorded outputs in the real formats of one
incident on ``gpu-node-3`` (America/Los_Angeles, PDT): ``sglang-qwen.service`` (MemoryMax=64G,
logging to /var/log/sglang/sglang-qwen.log) is OOM-killed by the kernel at monotonic
7800.500299 s — boot 2026-03-20 15:00:00.63 UTC, so 17:10:01.130299 UTC — restarted by
systemd, and ready again at 10:11:58 local; nvidia-smi is run at 10:30:00 local.
tests/data/collect/root is that machine's /proc, /sys and /etc.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import tarfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from conftest import DATA, REPO

from postmortem.bundle import BUNDLE_FORMAT, MANIFEST, expand_bundles, extract_bundle
from postmortem.collect import (
    BoundedOutput,
    CollectOptions,
    CollectResult,
    collect,
    run_bounded,
    summary_lines,
)
from postmortem.config import Config
from postmortem.errors import ArchiveError, InputError, PostmortemError, UsageError
from postmortem.ingest import IngestOptions, ingest_paths
from postmortem.store.db import Store
from postmortem.timeutil import get_zone

HERE = DATA / "collect"
BIN = HERE / "bin"
ROOT = HERE / "root"
NOW = datetime(2026, 3, 20, 17, 30, 0, 250000, tzinfo=UTC)
BUNDLE_NAME = "postmortem-gpu-node-3-20260320T173000Z"
KILL_DMESG = datetime(2026, 3, 20, 17, 10, 1, 130299, tzinfo=UTC)
KILL_JOURNAL = datetime(2026, 3, 20, 17, 10, 1, 130699, tzinfo=UTC)


@pytest.fixture
def standins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", f"{BIN}:/usr/bin:/bin")
    for var in ("STANDIN_JOURNAL", "STANDIN_DMESG", "STANDIN_NVIDIA", "STANDIN_SYSTEMD"):
        monkeypatch.delenv(var, raising=False)


LOG_MTIME = datetime(2026, 3, 20, 17, 12, tzinfo=UTC).timestamp()


def _machine(tmp_path: Path) -> Path:
    """A copy of tests/data/collect/root with the SGLang log's mtime set (git keeps none)."""
    root = tmp_path / "machine"
    if not root.exists():
        shutil.copytree(ROOT, root, symlinks=True)
        os.utime(root / "var/log/sglang/sglang-qwen.log", (LOG_MTIME, LOG_MTIME))
    return root


def _collect(tmp_path: Path, **kw: Any) -> CollectResult:
    kw.setdefault("out", tmp_path / "out")
    if "root" not in kw:
        kw["root"] = _machine(tmp_path)
    kw.setdefault("host", "gpu-node-3")
    kw.setdefault("now", NOW)
    return collect(CollectOptions(**kw))


def _entry(result: CollectResult, name: str) -> dict[str, Any]:
    found = [e for e in (*result.manifest["commands"], *result.manifest["files"]) if e["name"] == name]
    assert len(found) == 1, name
    return found[0]


def _plain_user(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)


# --------------------------------------------------------------------------- the bundle


def test_bundle_layout_and_manifest(standins: None, tmp_path: Path) -> None:
    r = _collect(tmp_path, archive=True)
    assert r.bundle == tmp_path / "out" / BUNDLE_NAME
    assert r.archive == tmp_path / "out" / f"{BUNDLE_NAME}.tar.gz"
    assert not list((tmp_path / "out").glob(".*"))  # the .partial directory was renamed
    m = json.loads((r.bundle / MANIFEST).read_text())
    assert m == r.manifest
    assert m["postmortem_bundle"] == BUNDLE_FORMAT
    assert m["host"] == "gpu-node-3"
    assert m["boot_id"] == "5c1e9a7f-3b2d-4e8a-9f6c-0b1d2e3f4a5b"
    assert m["btime"] == 1774018800
    assert m["uptime_s"] == 8999.62
    assert m["boot_time"] == "2026-03-20T15:00:00.630000+00:00"  # now - uptime, agrees with btime
    assert (m["timezone"], m["timezone_source"], m["utc_offset_s"]) == (
        "America/Los_Angeles",
        "/etc/timezone",
        -7 * 3600,
    )
    assert m["window"] == {
        "since": "-24h",
        "until": None,
        "since_utc": "2026-03-19T17:30:00.250000+00:00",
        "until_utc": None,
    }
    assert m["units"] == {
        "patterns": ["sglang*", "vllm*"],
        "matched": ["sglang-qwen.service", "sglang-qwen-canary.service"],
    }
    assert m["tools"]["journalctl"] == {
        "path": str(BIN / "journalctl"),
        "version": "systemd 255 (255.4-1ubuntu8.6)",
    }
    assert m["tools"]["nvidia-smi"]["version"].startswith("NVIDIA-SMI version  : 570.133.20; NVML version")
    assert m["tools"]["free"]["version"] == "free from procps-ng 4.0.4"
    assert m["missing"] == []
    assert m["warnings"] == []
    assert m["complete"] is True
    names = [e["name"] for e in m["commands"]]
    assert names == [
        "dmesg-iso",
        "dmesg",
        "journal",
        "nvidia-smi-xml",
        "nvidia-smi-gpu",
        "nvidia-smi-apps",
        "systemd-units",
        "systemd-unit-files",
        "systemd-show:sglang-qwen.service",
        "systemd-cat:sglang-qwen.service",
        "systemd-show:sglang-qwen-canary.service",
        "systemd-cat:sglang-qwen-canary.service",
        "free",
    ]
    journal = _entry(r, "journal")
    assert journal["argv"] == ["journalctl", "-o", "export", "--no-pager", "--since", "-24h"]
    assert (journal["status"], journal["exit_status"], journal["truncated"]) == ("ok", 0, False)
    assert journal["bytes"] == (HERE / "out" / "journal.export").stat().st_size == 23465
    assert (r.bundle / "journal/journal.export").read_bytes() == (HERE / "out/journal.export").read_bytes()
    assert journal["duration_s"] >= 0 and journal["stderr"] == ""
    import hashlib

    assert journal["sha256"] == hashlib.sha256((HERE / "out/journal.export").read_bytes()).hexdigest()
    # one copy of the kernel ring buffer is ingested; both carry the boot time
    iso, raw = _entry(r, "dmesg-iso"), _entry(r, "dmesg")
    assert (iso["ingest"], raw["ingest"]) == (True, False)
    assert raw["context"] == {"boot_time": "2026-03-20T15:00:00.630000+00:00"}
    assert _entry(r, "nvidia-smi-gpu")["argv"][1] == (
        "--query-gpu=timestamp,index,uuid,pci.bus_id,name,memory.total,memory.reserved,memory.used,"
        "memory.free,utilization.gpu,utilization.memory,temperature.gpu,power.draw,pstate,clocks.sm"
    )
    assert _entry(r, "nvidia-smi-apps")["context"] == {"at": "2026-03-20T17:30:00.250000+00:00"}
    # the unit file names the SGLang log: copied with its unit and its modification time
    log = _entry(r, "log:/var/log/sglang/sglang-qwen.log")
    assert (log["output"], log["ingest"], log["context"]) == (
        "servers/sglang-qwen.log",
        True,
        {"unit": "sglang-qwen.service"},
    )
    assert log["mtime"] == "2026-03-20T17:12:00+00:00"
    assert (r.bundle / "servers/sglang-qwen.log").stat().st_mtime == datetime(
        2026, 3, 20, 17, 12, tzinfo=UTC
    ).timestamp()
    assert (
        (r.bundle / "systemd/sglang-qwen.service.cgroup/memory.events")
        .read_text()
        .endswith("oom_kill 1\noom_group_kill 0\n")
    )
    assert not (r.bundle / "systemd/sglang-qwen-canary.service.cgroup").exists()  # not running: no cgroup
    assert (r.bundle / "host/free-b.txt").read_text().startswith("               total")
    assert (r.bundle / "host/meminfo").read_text().startswith("MemTotal:       528083648 kB")
    with tarfile.open(r.archive, "r:gz") as tar:
        members = tar.getnames()
    assert members[:2] == [BUNDLE_NAME, f"{BUNDLE_NAME}/{MANIFEST}"]
    assert f"{BUNDLE_NAME}/journal/journal.export" in members


def _rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    store = Store.open_readonly(db)
    try:
        return [tuple(r) for r in store.fetchall(sql)]
    finally:
        store.close()


def test_bundle_ingests_into_the_expected_rows(standins: None, tmp_path: Path, cli: Any) -> None:
    r = _collect(tmp_path)
    db = tmp_path / "pm.duckdb"
    res = cli("ingest", r.bundle, "--db", db)
    assert res.code == 0, res
    b = r.bundle
    assert res.out.splitlines() == [
        f"{b}/journal/journal.export: ingested as journal-export: 685 lines, 77 records, 0 parse issues, 37 ignored",
        f"{b}/gpu/nvidia-smi-q.xml: ingested as nvidia-smi-xml: 70 lines, 4 records, 0 parse issues, 0 ignored",
        f"{b}/gpu/query-compute-apps.csv: ingested as nvidia-smi-csv: 3 lines, 2 records, 0 parse issues, 1 ignored",
        f"{b}/gpu/query-gpu.csv: ingested as nvidia-smi-csv: 3 lines, 2 records, 0 parse issues, 1 ignored",
        f"{b}/kernel/dmesg-iso.txt: ingested as dmesg: 29 lines, 33 records, 0 parse issues, 0 ignored",
        f"{b}/servers/sglang-qwen.log: ingested as sglang: 42 lines, 40 records, 0 parse issues, 4 ignored",
    ]
    # every source has the manifest's host and zone
    assert set(_rows(db, "SELECT host, tz FROM sources")) == {("gpu-node-3", "America/Los_Angeles")}
    kills = _rows(
        db,
        "SELECT ts, ts_inferred, host, victim_pid, victim_comm, unit, anon_rss_kb FROM oom_kills ORDER BY ts",
    )
    assert kills == [
        (KILL_DMESG, None, "gpu-node-3", 4242, "sglang::schedul", "sglang-qwen.service", 64960000),
        (KILL_JOURNAL, None, "gpu-node-3", 4242, "sglang::schedul", "sglang-qwen.service", 64960000),
    ]
    # nvidia-smi's zone-less local stamps (10:30:00 PDT) read in the manifest's zone
    gpus = _rows(
        db,
        "SELECT ts, gpu_index, bus_id, mem_used_mib, mem_total_mib FROM gpu_samples WHERE gpu_index IS NOT NULL ORDER BY gpu_index",
    )
    assert gpus == [
        (datetime(2026, 3, 20, 17, 30, 0, 412000, tzinfo=UTC), 0, "00000000:18:00.0", 71240, 81559),
        (datetime(2026, 3, 20, 17, 30, 0, 413000, tzinfo=UTC), 1, "00000000:2A:00.0", 71198, 81559),
    ]
    assert _rows(db, "SELECT count(*) FROM gpu_samples") == [(4,)]
    assert _rows(db, "SELECT pid, used_mib, count(*) FROM gpu_processes GROUP BY ALL ORDER BY pid") == [
        (5301, 71230, 2),
        (5302, 71188, 2),
    ]
    # the SGLang log: unit from the unit file's StandardOutput=append:, local times in PDT, given zone
    ready = _rows(
        db, "SELECT ts, ts_raw, ts_inferred, unit, host FROM server_events WHERE kind = 'ready' ORDER BY ts"
    )
    assert ready == [
        (
            datetime(2026, 3, 20, 17, 1, 46, tzinfo=UTC),
            "2026-03-20 10:01:46",
            "zone",
            "sglang-qwen.service",
            "gpu-node-3",
        ),
        (
            datetime(2026, 3, 20, 17, 11, 58, tzinfo=UTC),
            "2026-03-20 10:11:58",
            "zone",
            "sglang-qwen.service",
            "gpu-node-3",
        ),
    ]
    assert _rows(
        db, "SELECT ts, unit, action, result FROM unit_events WHERE action IN ('oom_killed', 'failed')"
    ) == [
        (datetime(2026, 3, 20, 17, 10, 1, 310000, tzinfo=UTC), "sglang-qwen.service", "oom_killed", None),
        (datetime(2026, 3, 20, 17, 10, 2, 490000, tzinfo=UTC), "sglang-qwen.service", "failed", "oom-kill"),
    ]
    again = cli("ingest", r.bundle, "--db", db)
    assert again.code == 0 and all(line.endswith(": unchanged") for line in again.out.splitlines()), again


def test_build_on_the_bundle_finds_the_incident(standins: None, tmp_path: Path, cli: Any) -> None:
    r = _collect(tmp_path)
    db = tmp_path / "pm.duckdb"
    res = cli(
        "build", "--logs", r.bundle, "--db", db, "--out", tmp_path / "reports", "--since", "2026-03-20 16:00Z"
    )
    assert res.code == 0, res
    assert "1 incident(s)" in res.out
    rows = _rows(db, "SELECT ts, host, unit, cause, victim_pid, victim_comm FROM incidents")
    assert rows == [(KILL_DMESG, "gpu-node-3", "sglang-qwen.service", "cgroup_oom", 4242, "sglang::schedul")]
    assert (tmp_path / "reports" / "gpu-node-3-20260320T171001Z-sglang-qwen.service.md").is_file()


_TABLES = (
    ("oom_kills", "ts, host, victim_pid, unit, line_no, source_id"),
    ("kernel_messages", "ts, line_no, message, source_id"),
    ("journal_entries", "ts, unit, message, source_id"),
    ("unit_events", "ts, unit, action, source_id"),
    ("gpu_samples", "ts, gpu_uuid, mem_used_mib, source_id"),
    ("gpu_processes", "ts, pid, used_mib, source_id"),
    ("server_events", "ts, kind, unit, source_id"),
    ("server_stats", "ts, token_usage, source_id"),
    ("http_requests", "ts, path, status, source_id"),
    ("server_configs", "ts, model_path, tp_size, source_id"),
)


def test_archive_ingests_into_the_same_rows_as_the_directory(standins: None, tmp_path: Path) -> None:
    r = _collect(tmp_path, archive=True)
    assert r.archive is not None
    utc = get_zone("UTC")
    dumps = []
    for name, path in (("dir", r.bundle), ("tar", r.archive)):
        store = Store.open(tmp_path / f"{name}.duckdb")
        try:
            summary = ingest_paths(store, [str(path)], IngestOptions(zone=utc, strict=True))
            assert [f.status for f in summary.files] == ["ingested"] * 6
            dumps.append(
                {t: sorted(map(tuple, store.fetchall(f"SELECT {cols} FROM {t}"))) for t, cols in _TABLES}
            )
            paths = [p for (p,) in store.fetchall("SELECT path FROM sources ORDER BY source_id")]
        finally:
            store.close()
        base = str(path)
        assert all(p.startswith(base + "/") for p in paths), paths
    assert dumps[0] == dumps[1]
    assert len(dumps[0]["oom_kills"]) == 2 and len(dumps[0]["server_stats"]) == 5


def test_archive_and_directory_in_one_run_are_duplicates(standins: None, tmp_path: Path, cli: Any) -> None:
    r = _collect(tmp_path, archive=True)
    res = cli("ingest", tmp_path / "out", "--db", tmp_path / "pm.duckdb")
    assert res.code == 0, res
    lines = res.out.splitlines()
    assert sum(": ingested as " in ln for ln in lines) == 6
    assert sum(": duplicate — same content as" in ln for ln in lines) == 6
    assert all(str(r.bundle) in ln or str(r.archive) in ln for ln in lines if not ln.startswith("  "))


# --------------------------------------------------------------------------- degraded machines


def _path_without(tmp_path: Path, keep: tuple[str, ...]) -> str:
    bindir = tmp_path / "path"
    bindir.mkdir()
    for tool in keep:
        for d in ("/usr/bin", "/bin", "/usr/sbin", "/sbin"):
            if os.path.exists(f"{d}/{tool}"):
                os.symlink(f"{d}/{tool}", bindir / tool)
                break
    return str(bindir)


def test_no_gpu_no_journald_collect_finishes_and_build_runs(
    tmp_path: Path, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """This machine's real dmesg, free and systemctl; no nvidia-smi and no journalctl."""
    monkeypatch.setenv("PATH", _path_without(tmp_path, ("dmesg", "free", "systemctl")))
    monkeypatch.chdir(tmp_path)
    res = cli("collect", "--out", tmp_path / "out", "--timeout", "20")
    assert res.code == 0, res
    assert "warning: journalctl: not found on PATH" in res.err
    assert "warning: nvidia-smi: not found on PATH (no NVIDIA driver here?): no GPU snapshot" in res.err
    (bundle,) = (tmp_path / "out").iterdir()
    assert res.out.splitlines()[0] == str(bundle)
    m = json.loads((bundle / MANIFEST).read_text())
    missing = {x["what"]: x["why"] for x in m["missing"]}
    assert missing["journalctl"] == "not found on PATH"
    assert missing["nvidia-smi"] == "not found on PATH (no NVIDIA driver here?): no GPU snapshot"
    # said once, as the warning; the summary does not repeat it
    assert "nvidia-smi: not found" not in res.out and res.err.count("nvidia-smi: not found") == 1
    statuses = {e["name"]: e["status"] for e in m["commands"]}
    assert statuses["journal"] == statuses["nvidia-smi-xml"] == statuses["nvidia-smi-apps"] == "missing"
    assert m["tools"]["nvidia-smi"] is None and m["tools"]["journalctl"] is None
    assert (bundle / "host/meminfo").read_text().startswith("MemTotal:")
    built = cli("build", "--logs", bundle, "--db", tmp_path / "pm.duckdb", "--out", tmp_path / "reports")
    assert built.code == 0, built
    assert "incident(s); reports in" in built.out


def test_bundle_with_nothing_to_ingest_still_builds(
    standins: None, tmp_path: Path, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", _path_without(tmp_path, ("free",)))
    r = _collect(tmp_path, root=tmp_path / "no-such-root")
    assert {x["what"] for x in r.missing} >= {
        "journalctl",
        "nvidia-smi",
        "dmesg",
        "systemctl",
        "/proc/meminfo",
    }
    res = cli("ingest", r.bundle, "--db", tmp_path / "pm.duckdb")
    assert res.code == 0, res
    assert res.out.strip() == (
        f"{r.bundle}: skipped — bundle holds nothing to ingest (its manifest.json says what was missing)"
    )
    built = cli("build", "--logs", r.bundle, "--db", tmp_path / "pm.duckdb", "--out", tmp_path / "reports")
    assert built.code == 0, built
    assert "0 incident(s)" in built.out


def test_old_dmesg_raw_copy_is_anchored_with_the_boot_time(
    standins: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STANDIN_DMESG", "old")
    r = _collect(tmp_path)
    iso, raw = _entry(r, "dmesg-iso"), _entry(r, "dmesg")
    assert (iso["status"], iso["exit_status"], iso["ingest"]) == ("failed", 1, False)
    assert (
        iso["stderr"]
        == "dmesg: unrecognized option '--time-format'\nTry 'dmesg --help' for more information."
    )
    assert raw["ingest"] is True
    assert r.missing == []
    store = Store.open(tmp_path / "pm.duckdb")
    try:
        ingest_paths(store, [str(r.bundle)], IngestOptions(strict=True))
        kill = store.fetchall(
            "SELECT k.ts, k.ts_raw, k.ts_inferred, k.monotonic_s, k.host FROM oom_kills k "
            "JOIN sources s USING (source_id) WHERE s.path LIKE '%/kernel/dmesg.txt'"
        )
    finally:
        store.close()
    # boot 15:00:00.63 + 7800.500299 s
    assert [tuple(k) for k in kill] == [(KILL_DMESG, "7800.500299", "boot", 7800.500299, "gpu-node-3")]


def test_restricted_dmesg_as_plain_user(
    standins: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STANDIN_DMESG", "restricted")
    _plain_user(monkeypatch)
    warnings: list[str] = []
    r = _collect(tmp_path, warn=warnings.append)
    assert _entry(r, "dmesg-iso")["status"] == "failed"
    assert {"what": "dmesg", "why": "dmesg: read kernel buffer failed: Operation not permitted"} in r.missing
    assert "dmesg: dmesg: read kernel buffer failed: Operation not permitted" in warnings
    assert r.root_would_add[0] == "the kernel ring buffer (dmesg is restricted: kernel.dmesg_restrict=1)"
    lines = summary_lines(r)
    assert lines[-len(r.root_would_add) - 1 :] == [
        "running as root would add:",
        *(f"  - {x}" for x in r.root_would_add),
    ]
    assert r.manifest["user"]["uid"] == 1000 and r.manifest["user"]["root"] is False


def test_interrupted_collect_keeps_what_it_has(
    standins: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STANDIN_NVIDIA", "nodriver")

    def warn(text: str) -> None:
        if text.startswith("nvidia-smi:"):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _collect(tmp_path, warn=warn)
    m = json.loads((tmp_path / "out" / BUNDLE_NAME / MANIFEST).read_text())
    assert m["complete"] is False
    assert m["warnings"][-1] == "interrupted: the bundle holds what was collected so far"
    assert [e["name"] for e in m["commands"]][-1] == "nvidia-smi-apps"
    assert (tmp_path / "out" / BUNDLE_NAME / "journal/journal.export").stat().st_size == 23465


def test_two_collects_in_one_second(standins: None, tmp_path: Path) -> None:
    first, second = _collect(tmp_path, archive=True), _collect(tmp_path)
    assert (first.bundle.name, second.bundle.name) == (BUNDLE_NAME, f"{BUNDLE_NAME}-2")


def test_plain_user_journal_hint(standins: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STANDIN_JOURNAL", "user")
    _plain_user(monkeypatch)
    r = _collect(tmp_path)
    journal = _entry(r, "journal")
    assert (journal["status"], journal["bytes"], journal["ingest"]) == ("ok", 0, False)
    assert journal["stderr"].startswith("Hint: You are currently not seeing messages from other users")
    assert {
        "what": "journal",
        "why": "Hint: You are currently not seeing messages from other users and the system.",
    } in r.missing
    assert r.root_would_add == [
        "the system journal and other users' entries (a plain user sees only their own unless in the "
        "systemd-journal or adm group)"
    ]


def test_as_root_nothing_more_to_add(standins: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setenv("STANDIN_JOURNAL", "user")
    assert _collect(tmp_path).root_would_add == []


def test_gpu_driver_not_loaded(standins: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STANDIN_NVIDIA", "nodriver")
    r = _collect(tmp_path)
    assert [_entry(r, n)["exit_status"] for n in ("nvidia-smi-xml", "nvidia-smi-gpu", "nvidia-smi-apps")] == [
        9,
        9,
        9,
    ]
    assert {
        "what": "nvidia-smi",
        "why": "failed (exit status 9): NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA "
        "driver. Make sure that the latest NVIDIA driver is installed and running.",
    } in r.missing
    # the failure text is evidence too: ingested once (the other two copies are duplicates)
    store = Store.open(tmp_path / "pm.duckdb")
    try:
        summary = ingest_paths(store, [str(r.bundle)], IngestOptions(strict=True))
        events = store.fetchall("SELECT kind, host FROM gpu_events")
    finally:
        store.close()
    assert sorted(f.status for f in summary.files if "/gpu/" in f.path) == [
        "duplicate",
        "duplicate",
        "ingested",
    ]
    assert [tuple(e) for e in events] == [("smi_failed", "gpu-node-3")]


def test_old_driver_query_runs_again_without_memory_reserved(
    standins: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STANDIN_NVIDIA", "old")
    r = _collect(tmp_path)
    gpu = _entry(r, "nvidia-smi-gpu")
    assert "memory.reserved" not in gpu["argv"][1]
    assert (gpu["status"], gpu["ingest"]) == ("ok", True)
    assert gpu["note"] == "this driver refused the full field list; ran again with the older fields"
    assert (
        (r.bundle / "gpu/query-gpu.csv")
        .read_text()
        .startswith("timestamp, index, uuid, pci.bus_id, name, memory.total [MiB], memory.used")
    )
    assert r.missing == []


def test_systemd_not_running(standins: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STANDIN_SYSTEMD", "down")
    cfg = Config(collect_logs=[str(ROOT / "var/log/sglang/*.log")])
    r = _collect(tmp_path, root=Path("/"), config=cfg)
    assert {
        "what": "systemd",
        "why": "systemctl failed: System has not been booted with systemd as init system (PID 1). Can't operate.",
    } in r.missing
    assert not any(e["name"].startswith("systemd-show") for e in r.manifest["commands"])
    # the configured log is still collected; no unit file names it, so no unit context
    log = _entry(r, f"log:{ROOT}/var/log/sglang/sglang-qwen.log")
    assert (log["status"], log["context"]) == ("ok", {})


def test_config_log_globs(standins: None, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "a.log").write_text("[2026-03-20 10:00:00] The server is fired up and ready to roll!\n")
    (tmp_path / "postmortem.toml").write_text(
        '[[sources]]\npath = "*/a.log"\nunit = "sglang-a.service"\n\n[collect]\nsglang_logs = ["logs/*.log", "nothing/*.log"]\n'
    )
    from postmortem.config import load_config

    r = _collect(tmp_path, config=load_config(tmp_path))
    a = _entry(r, f"log:{logs}/a.log")
    assert (a["output"], a["context"]) == ("servers/a.log", {"unit": "sglang-a.service"})
    assert {"what": "nothing/*.log", "why": "no file matches this [collect] server_logs pattern"} in r.missing


def test_timeout_stops_a_hanging_command(
    standins: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STANDIN_JOURNAL", "hang")
    warnings: list[str] = []
    r = _collect(tmp_path, timeout_s=0.5, warn=warnings.append)
    journal = _entry(r, "journal")
    assert journal["status"] == "timeout" and journal["signal"] == "SIGTERM"
    assert 0.5 <= journal["duration_s"] < 5
    assert journal["note"] == "killed after 0.5 s (--timeout)"
    assert warnings[0] == (
        "journal: journalctl did not finish within 0.5 s and was stopped; the output is incomplete "
        "(raise --timeout or narrow --since)"
    )
    assert r.manifest["complete"] is True and _entry(r, "free")["status"] == "ok"


def test_units_journal_is_the_units_plus_the_kernel(standins: None, tmp_path: Path) -> None:
    r = _collect(tmp_path, units=["sglang-qwen"], since="2026-03-20 09:00", until="now")
    names = [e["name"] for e in r.manifest["commands"]]
    assert "journal" not in names
    units, kernel = _entry(r, "journal-units"), _entry(r, "journal-kernel")
    window = ["--since", "2026-03-20 09:00", "--until", "now"]
    assert units["argv"] == [
        "journalctl", "-o", "export", "--no-pager", *window,
        "-u", "sglang-qwen.service", "-u", "systemd-oomd.service", "-u", "earlyoom.service",
    ]  # fmt: skip
    assert kernel["argv"] == ["journalctl", "-o", "export", "--no-pager", *window, "_TRANSPORT=kernel"]
    assert r.manifest["window"]["since_utc"] == "2026-03-20T16:00:00+00:00"  # 09:00 PDT
    assert r.manifest["units"] == {"patterns": ["sglang-qwen.service"], "matched": ["sglang-qwen.service"]}
    store = Store.open(tmp_path / "pm.duckdb")
    try:
        ingest_paths(store, [str(r.bundle)], IngestOptions(strict=True))
        kills = store.fetchall(
            "SELECT k.ts, k.victim_pid FROM oom_kills k JOIN sources s USING (source_id) WHERE s.format = 'journal-export'"
        )
        actions = store.fetchall("SELECT count(*) FROM unit_events WHERE unit = 'sglang-qwen.service'")
        idents = store.fetchall(
            "SELECT DISTINCT ident FROM journal_entries WHERE ident <> 'kernel' ORDER BY 1"
        )
    finally:
        store.close()
    assert [tuple(k) for k in kills] == [(KILL_JOURNAL, 4242)]
    assert actions[0][0] == 10
    assert [i for (i,) in idents] == ["earlyoom", "systemd"]


def test_unit_globs_that_match_nothing_in_the_journal(
    standins: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STANDIN_JOURNAL", "nounits")
    warnings: list[str] = []
    r = _collect(tmp_path, units=["vllm*"], warn=warnings.append)
    units = _entry(r, "journal-units")
    assert (units["status"], units["exit_status"], units["bytes"], units["ingest"]) == ("failed", 1, 0, False)
    assert _entry(r, "journal-kernel")["ingest"] is True
    why = "journalctl exited 1: Failed to add filter for units: No data available"
    assert {"what": "journal-units", "why": why} in r.missing
    assert f"journal-units: {why}" in warnings
    assert {"what": "units", "why": "no systemd unit matches vllm*"} in r.missing


def test_max_bytes_keeps_the_newest_journal_entries(standins: None, tmp_path: Path) -> None:
    warnings: list[str] = []
    r = _collect(tmp_path, max_bytes=8192, warn=warnings.append)
    journal = _entry(r, "journal")
    assert journal["truncated"] is True and 6144 - 1500 <= journal["bytes"] <= 8192  # ≥ 3/4 less one entry
    kept = (r.bundle / "journal/journal.export").read_bytes()
    full = (HERE / "out/journal.export").read_bytes()
    assert full.endswith(kept) and kept.startswith(b"__CURSOR=") and kept.endswith(b"\n\n")
    assert full[: len(full) - len(kept)].endswith(b"\n\n")  # cut at an entry boundary
    assert "journal: output larger than --max-bytes (8192 bytes); kept the newest part" in warnings
    store = Store.open(tmp_path / "pm.duckdb")
    try:
        summary = ingest_paths(store, [str(r.bundle)], IngestOptions(strict=True))
    finally:
        store.close()
    (journal_result,) = [f for f in summary.files if f.format == "journal-export"]
    assert journal_result.parse_issues == 0 and journal_result.records > 0


def test_big_logs_keep_their_tail_and_compressed_ones_are_skipped(
    standins: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # relative [collect] patterns: from the config's directory
    logs = tmp_path / "logs"
    logs.mkdir()
    lines = [
        f'[2026-03-20 10:{i // 60:02d}:{i % 60:02d}] INFO:     127.0.0.1:5000 - "GET /health HTTP/1.1" 200 OK\n'
        for i in range(400)
    ]
    (logs / "big.log").write_text("".join(lines))
    (logs / "old.log.1.gz").write_bytes(gzip.compress(os.urandom(9000)))
    r = _collect(tmp_path, max_bytes=4096, config=Config(collect_logs=["logs/*"]))
    big = _entry(r, f"log:{logs}/big.log")
    kept = (r.bundle / big["output"]).read_text()
    assert big["truncated"] is True and big["bytes"] <= 4096
    assert "".join(lines).endswith(kept) and kept.startswith("[2026-03-20 10:")  # whole lines
    old = _entry(r, f"log:{logs}/old.log.1.gz")
    assert (old["status"], old["output"]) == ("skipped", None)
    assert any(x["what"] == f"{logs}/old.log.1.gz" for x in r.missing)


def test_options_that_cannot_work(standins: None, tmp_path: Path, cli: Any) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(PostmortemError, match="cannot write the bundle there"):
        _collect(tmp_path, out=blocker / "sub")
    with pytest.raises(UsageError, match="cannot understand the time 'soon'"):
        _collect(tmp_path, since="soon")
    with pytest.raises(UsageError, match="is after --until"):
        _collect(tmp_path, since="now", until="-1h")
    res = cli("collect", "--timeout", "0", "--out", tmp_path / "o")
    assert (res.code, res.err.strip()) == (2, "Error: --timeout must be positive")
    assert not (tmp_path / "o").exists() or not list((tmp_path / "o").iterdir())


def test_since_all_is_the_whole_journal(standins: None, tmp_path: Path) -> None:
    r = _collect(tmp_path, since="all")
    assert _entry(r, "journal")["argv"] == ["journalctl", "-o", "export", "--no-pager"]
    assert r.manifest["window"]["since"] is None


def test_cli_collect_with_standins(
    standins: None, tmp_path: Path, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    res = cli("collect", "--out", "bundles", "--archive", "--unit", "sglang*")
    assert res.code == 0, res
    out = res.out.splitlines()
    assert out[0].startswith("bundles/postmortem-") and out[1] == out[0] + ".tar.gz"
    # this machine's /proc and /sys; the unit's log file is not on it
    # said once: as the warning, not again in the summary
    assert out[2].endswith("bytes; 1 missing (warned above)") and len(out) == 3, out
    assert res.err == "warning: /var/log/sglang/sglang-qwen.log: no such file\n"
    m = json.loads((tmp_path / out[0] / MANIFEST).read_text())
    assert m["units"]["matched"] == ["sglang-qwen.service", "sglang-qwen-canary.service"]
    assert [e["name"] for e in m["commands"][2:4]] == ["journal-units", "journal-kernel"]


# --------------------------------------------------------------------------- ingest side


def _bundle_dir(tmp_path: Path, manifest: dict[str, Any], files: dict[str, str]) -> Path:
    b = tmp_path / "b"
    b.mkdir()
    (b / MANIFEST).write_text(json.dumps({"postmortem_bundle": 1, **manifest}))
    for rel, text in files.items():
        (b / rel).parent.mkdir(parents=True, exist_ok=True)
        (b / rel).write_text(text)
    return b


SGLANG_LINE = "[2026-03-20 10:01:46] The server is fired up and ready to roll!\n"


def _ready_ts(tmp_path: Path, paths: list[str], options: IngestOptions) -> list[tuple[Any, ...]]:
    store = Store.open(tmp_path / "pm.duckdb")
    try:
        ingest_paths(store, paths, options)
        return [
            tuple(r)
            for r in store.fetchall("SELECT ts, ts_inferred, host, unit FROM server_events ORDER BY ts")
        ]
    finally:
        store.close()


def test_manifest_context_and_what_overrides_it(tmp_path: Path) -> None:
    b = _bundle_dir(
        tmp_path,
        {
            "host": "h1",
            "timezone": "Europe/Berlin",
            "files": [{"output": "sglang/x.log", "ingest": True, "context": {"unit": "x.service"}}],
        },
        {"sglang/x.log": SGLANG_LINE, "extra/y.log": SGLANG_LINE.replace("46]", "47]")},
    )
    berlin = datetime(2026, 3, 20, 9, 1, 46, tzinfo=UTC)  # 10:01:46 CET
    # an unlisted file (someone added it) gets the bundle's host and zone, not the entry's unit
    assert _ready_ts(tmp_path, [str(b)], IngestOptions(strict=True)) == [
        (berlin, "zone", "h1", "x.service"),
        (berlin.replace(second=47), "zone", "h1", None),
    ]


def test_cli_tz_and_host_win_over_the_manifest(tmp_path: Path) -> None:
    b = _bundle_dir(tmp_path, {"host": "h1", "timezone": "Europe/Berlin"}, {"x.log": SGLANG_LINE})
    opts = IngestOptions(strict=True, zone=get_zone("UTC"), zone_given=True, host="other")
    assert _ready_ts(tmp_path, [str(b)], opts) == [
        (datetime(2026, 3, 20, 10, 1, 46, tzinfo=UTC), "zone", "other", None)
    ]


def test_manifest_zone_beats_the_config_zone(tmp_path: Path) -> None:
    b = _bundle_dir(tmp_path, {"host": "h1", "timezone": "Europe/Berlin"}, {"x.log": SGLANG_LINE})
    opts = IngestOptions(
        strict=True, zone=get_zone("Asia/Tokyo"), zone_given=True, config=Config(tz="Asia/Tokyo")
    )
    assert _ready_ts(tmp_path, [str(b)], opts)[0][0] == datetime(2026, 3, 20, 9, 1, 46, tzinfo=UTC)


def test_unknown_zone_name_falls_back_to_the_offset(tmp_path: Path) -> None:
    b = _bundle_dir(tmp_path, {"timezone": None, "utc_offset_s": 3600}, {"x.log": SGLANG_LINE})
    assert _ready_ts(tmp_path, [str(b)], IngestOptions(strict=True))[0][:2] == (
        datetime(2026, 3, 20, 9, 1, 46, tzinfo=UTC),
        "zone",
    )


def test_entries_not_to_ingest_are_skipped(tmp_path: Path) -> None:
    b = _bundle_dir(
        tmp_path,
        {"commands": [{"output": "kernel/dmesg.txt", "ingest": False}]},
        {"kernel/dmesg.txt": "[    1.000000] Linux version 6.8.0\n", "x.log": SGLANG_LINE},
    )
    with expand_bundles([str(b)], IngestOptions()) as expanded:
        assert [i.display for i in expanded.inputs] == [str(b / "x.log")]
        assert expanded.results == []


def test_bundles_inside_a_log_directory(tmp_path: Path, standins: None) -> None:
    r = _collect(tmp_path, archive=True)
    (tmp_path / "out" / "plain.log").write_text(SGLANG_LINE)
    with expand_bundles([str(tmp_path / "out")], IngestOptions()) as expanded:
        shown = sorted(i.display.replace(str(tmp_path / "out"), "OUT") for i in expanded.inputs)
        roots = {i.root for i in expanded.inputs}
    assert len(shown) == 13 and "OUT/plain.log" in shown
    assert f"OUT/{BUNDLE_NAME}.tar.gz/journal/journal.export" in shown
    assert f"OUT/{BUNDLE_NAME}/journal/journal.export" in shown
    assert roots == {str(tmp_path / "out")}  # found by walking: a directory root like any file
    assert r.bundle.is_dir()


def test_manifest_of_another_tool_is_just_a_file(tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    (d / MANIFEST).write_text('{"name": "webpack"}')
    (d / "x.log").write_text(SGLANG_LINE)
    with expand_bundles([str(d)], IngestOptions()) as expanded:
        assert sorted(i.display for i in expanded.inputs) == [str(d / MANIFEST), str(d / "x.log")]


def test_newer_bundle_format_is_refused(tmp_path: Path) -> None:
    b = _bundle_dir(tmp_path, {"postmortem_bundle": 2}, {})
    with pytest.raises(InputError, match="bundle format 2 is newer than this postmortem understands"):
        _ready_ts(tmp_path, [str(b)], IngestOptions())


def _tar(tmp_path: Path, members: list[tuple[tarfile.TarInfo, bytes | None]], name: str = "b.tar.gz") -> Path:
    path = tmp_path / name
    with tarfile.open(path, "w:gz") as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            else:
                tar.addfile(info)
    return path


def _file(name: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.mtime = 1774026000
    return info


MANIFEST_BYTES = json.dumps({"postmortem_bundle": 1, "host": "h1"}).encode()


def test_extract_bundle_keeps_names_and_mtimes(tmp_path: Path) -> None:
    path = _tar(
        tmp_path,
        [(_file("p/manifest.json"), MANIFEST_BYTES), (_file("p/sglang/x.log"), SGLANG_LINE.encode())],
    )
    bundle, manifest = extract_bundle(path, tmp_path / "x", max_bytes=1 << 20)
    assert bundle == tmp_path / "x" / "p" and manifest["host"] == "h1"
    assert (bundle / "sglang/x.log").stat().st_mtime == 1774026000
    assert _ready_ts(tmp_path, [str(path)], IngestOptions(strict=True, zone=get_zone("UTC"))) == [
        (datetime(2026, 3, 20, 10, 1, 46, tzinfo=UTC), "zone", "h1", None)
    ]


def _link(name: str, target: str, kind: bytes) -> tarfile.TarInfo:
    info = _file(name)
    info.type = kind
    info.linkname = target
    return info


@pytest.mark.parametrize(
    ("member", "message"),
    [
        ((_file("../evil"), b"x"), "unsafe member name '../evil'"),
        ((_file("p/../../evil"), b"x"), "unsafe member name 'p/../../evil'"),
        ((_file("/etc/evil"), b"x"), "unsafe member name '/etc/evil'"),
        (
            (_link("p/link", "/etc/passwd", tarfile.SYMTYPE), None),
            "member 'p/link' is a link or special file",
        ),
        (
            (_link("p/hard", "p/manifest.json", tarfile.LNKTYPE), None),
            "member 'p/hard' is a link or special file",
        ),
        ((_link("p/fifo", "", tarfile.FIFOTYPE), None), "member 'p/fifo' is a link or special file"),
        ((_file("p/manifest.json"), b"{}"), "member 'p/manifest.json' appears twice"),
        ((_file("p/big.log"), b"y" * 5000), "over --max-bytes"),
    ],
)
def test_unsafe_archives_are_refused(
    tmp_path: Path, member: tuple[tarfile.TarInfo, bytes | None], message: str
) -> None:
    path = _tar(tmp_path, [(_file("p/manifest.json"), MANIFEST_BYTES), member])
    with pytest.raises(ArchiveError, match=message.replace("(", r"\(").replace(".", r"\.")):
        extract_bundle(path, tmp_path / "x", max_bytes=4096)
    assert not (tmp_path / "evil").exists() and not Path("/etc/evil").exists()


def test_a_tarball_without_manifest_is_read_member_by_member(tmp_path: Path) -> None:
    """A ``tar czf`` of a log directory is no bundle: each member is read as a file of its
    own (it was one 'log' whose first line was the tar header)."""
    path = _tar(tmp_path, [(_file("logs/x.log"), SGLANG_LINE.encode())], name="logs.tar.gz")
    with expand_bundles([str(path)], IngestOptions()) as expanded:
        assert [i.display for i in expanded.inputs] == [f"{path}/logs/x.log"]
    with pytest.raises(ArchiveError, match="not a postmortem bundle archive"):
        extract_bundle(path, tmp_path / "x", max_bytes=1 << 20)


def test_corrupt_archive_with_a_manifest(tmp_path: Path) -> None:
    good = _tar(
        tmp_path, [(_file("p/manifest.json"), MANIFEST_BYTES), (_file("p/x.log"), os.urandom(200_000))]
    )
    data = good.read_bytes()
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(ArchiveError, match=r"damaged archive|truncated or corrupt archive"):
        extract_bundle(cut, tmp_path / "x", max_bytes=1 << 30)


# --------------------------------------------------------------------------- pieces


def test_bounded_head_output_stops_the_producer(tmp_path: Path) -> None:
    sink = BoundedOutput(tmp_path / "yes.txt", 10_000)
    run = run_bounded(["/usr/bin/yes", "postmortem"], sink, timeout_s=10)
    assert run.stopped == "output limit" and run.signal in ("SIGTERM", "SIGPIPE")
    assert sink.close() == 9999 and sink.truncated  # cut after the last whole line
    assert (tmp_path / "yes.txt").read_bytes() == b"postmortem\n" * 909


def test_run_bounded_keeps_stderr_head_and_tail(tmp_path: Path) -> None:
    sink = BoundedOutput(tmp_path / "o", 1 << 20)
    script = "import sys; sys.stderr.write('A' * 3000 + 'B' * 5000 + 'END'); sys.exit(3)"
    run = run_bounded([os.sys.executable, "-c", script], sink, timeout_s=20)  # type: ignore[attr-defined]
    sink.close()
    assert run.exit_status == 3 and run.stopped is None
    head, _, tail = run.stderr.partition("\n… (4003 bytes) …\n")
    assert head == "A" * 2000 and tail == "B" * 1997 + "END"


def test_run_bounded_command_that_cannot_start(tmp_path: Path) -> None:
    sink = BoundedOutput(tmp_path / "o", 100)
    run = run_bounded([str(tmp_path / "o")], sink, timeout_s=1)
    sink.close()
    assert run.exit_status is None and run.error == "Permission denied"


hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=150, deadline=None)
@given(
    chunks=st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"") + b"\n"), max_size=60),
    limit=st.integers(min_value=1, max_value=300),
    split=st.integers(min_value=1, max_value=50),
)
def test_tail_output_is_a_suffix_of_whole_lines(chunks: list[bytes], limit: int, split: int) -> None:
    import tempfile

    stream = b"".join(chunks)
    with tempfile.TemporaryDirectory() as d:
        sink = BoundedOutput(Path(d) / "t", limit, keep="tail")
        for i in range(0, len(stream), split):
            assert sink.write(stream[i : i + split])
        size = sink.close()
        kept = (Path(d) / "t").read_bytes()
        assert os.listdir(d) == ["t"]
    assert size == len(kept) <= limit
    assert stream.endswith(kept)
    if len(stream) <= limit // min(4, limit) * min(4, limit):
        assert kept == stream and not sink.truncated
    if kept != stream:
        assert sink.truncated and stream[: len(stream) - len(kept)].endswith(b"\n")


# --------------------------------------------------------------------------- docs


def test_docs_describe_every_manifest_field(standins: None, tmp_path: Path) -> None:
    r = _collect(tmp_path)
    doc = (REPO / "docs" / "collect.md").read_text()
    fields = set(r.manifest) | {k for e in (*r.manifest["commands"], *r.manifest["files"]) for k in e}
    undocumented = sorted(f for f in fields if f"`{f}`" not in doc)
    assert undocumented == []
    steps = {e["name"].split(":", 1)[0] for e in (*r.manifest["commands"], *r.manifest["files"])}
    assert sorted(s for s in steps if f"`{s}`" not in doc) == []


DOCKER_STANDIN = r"""#!/bin/sh
# a stand-in for docker: two containers, one of them a vLLM server
case "$1" in
  ps) printf '%s\n' "aaaaaaaaaaaa1111 vllm-a vllm/vllm-openai:v0.10.2" "bbbbbbbbbbbb2222 cache redis:7" ;;
  logs)
    for last; do :; done
    [ "$last" = "aaaaaaaaaaaa1111" ] || { echo "unexpected container $last" >&2; exit 1; }
    echo "2026-03-20T17:00:00.100000000Z (APIServer pid=1) INFO 03-20 17:00:00 [api_server.py:1] vLLM API server version 0.10.2"
    echo "2026-03-20T17:00:00.200000000Z (APIServer pid=1) INFO 03-20 17:00:00 [utils.py:2] non-default args: {'model': '/m/x', 'tensor_parallel_size': 2}"
    echo "2026-03-20T17:05:00.000000000Z (APIServer pid=1) INFO:     Application startup complete." ;;
  *) exit 2 ;;
esac
"""


def test_collect_takes_the_logs_of_containers_running_an_engine(
    standins: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """#30 point 5: a vLLM server in a container (no unit, no log file) is found by its image;
    other containers are left alone; the bundle reads back as vLLM's lines."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "docker").write_text(DOCKER_STANDIN)
    (bin_dir / "docker").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{BIN}:/usr/bin:/bin")
    r = _collect(tmp_path, since="2026-03-20 16:00")
    entry = _entry(r, "docker-logs-vllm-a")
    assert entry["status"] == "ok" and entry["format"] == "vllm" and entry["ingest"] is True
    assert entry["argv"][:4] == ["docker", "logs", "-t", "--since"]
    assert not [e for e in r.manifest["commands"] if "cache" in e["name"]]
    log = (r.bundle / entry["output"]).read_text()
    assert "non-default args" in log
    from postmortem.parsers import all_parsers
    from postmortem.parsers.base import run_parser

    out, _ = run_parser(all_parsers()["vllm"], log)
    assert [getattr(x, "kind", None) for x in out if hasattr(x, "kind")] == ["server_args", "ready"]
