"""service_loads: one row per SGLang server start, from the golden SGLang logs alone and refined
by a journal. Expected values are computed by hand from the fixture lines (see each case)."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from conftest import DATA, REAL_SAMPLES, needs_real_samples

from postmortem.analysis.loads import derive_loads, derive_service_loads
from postmortem.ingest import IngestOptions, ingest_paths
from postmortem.store.db import Store
from postmortem.timeutil import get_zone

FIXTURES = DATA / "sglang"
COLS = (
    "unit, pid, strftime(start_ts, '%Y-%m-%d %H:%M:%S.%f'), start_source, "
    "strftime(ready_ts, '%Y-%m-%d %H:%M:%S.%f'), ready_source, load_s, weight_load_s, "
    "draft_weight_load_s, kv_alloc_s, cuda_graph_s, draft_cuda_graph_s, outcome, model_path, "
    "speculative_algorithm, tp_size, port, health_polls, start_line_no, ready_line_no"
)


def _ingest(paths: list[Path], **opts: Any) -> Store:
    store = Store.memory()
    ctx: dict[str, Any] = {}
    first = paths[0]
    ctx_file = first.with_name(first.name.split(".")[0] + ".ctx.json")
    if ctx_file.exists():
        ctx = json.loads(ctx_file.read_text())
    zone = opts.pop("tz", ctx.get("tz", "UTC"))
    options = IngestOptions(
        zone=get_zone(zone), zone_given=True, unit=opts.pop("unit", ctx.get("unit")), strict=True, **opts
    )
    summary = ingest_paths(store, [str(p) for p in paths], options)
    assert not summary.errors, summary.errors
    return store


def loads(store: Store) -> list[dict[str, Any]]:
    n = derive_service_loads(store)
    rows = store.fetchall(f"SELECT {COLS} FROM service_loads ORDER BY load_id")
    names = [
        "unit",
        "pid",
        "start",
        "start_source",
        "ready",
        "ready_source",
        "load_s",
        "weight_s",
        "draft_weight_s",
        "kv_s",
        "graph_s",
        "draft_graph_s",
        "outcome",
        "model",
        "spec",
        "tp",
        "port",
        "polls",
        "start_line",
        "ready_line",
    ]
    assert n == len(rows)
    return [dict(zip(names, r, strict=True)) for r in rows]


def approx(value: float | None, want: float) -> bool:
    return value is not None and abs(value - want) < 1e-6


def test_v0_3_time_only() -> None:
    # start 23:58:00 (server_args), ready 00:00:09 the next day → 129 s
    # weights 23:58:06 → 23:59:30 = 84 s; KV: load end 23:59:30 → Memory pool end 23:59:31 = 1 s
    # graphs: 0.3.x print no end line: begin 23:59:32 → limits line 00:00:05 = 33 s
    store = _ingest([FIXTURES / "v0_3_time_only.log"])
    (ld,) = loads(store)
    assert (ld["start_source"], ld["ready_source"], ld["outcome"]) == ("server_args", "ready_line", "ready")
    assert (ld["load_s"], ld["weight_s"], ld["kv_s"], ld["graph_s"]) == (129.0, 84.0, 1.0, 33.0)
    assert (ld["draft_weight_s"], ld["draft_graph_s"], ld["polls"]) == (None, None, 0)
    assert (ld["model"], ld["tp"], ld["port"], ld["pid"], ld["unit"]) == (
        "/models/llama-3-8b",
        1,
        30000,
        31337,
        "sglang-llama.service",
    )
    assert (ld["start_line"], ld["ready_line"]) == (1, 20)


def test_v0_4_compose() -> None:
    # start 08:00:00, ready 08:02:46 → 166 s; weights 08:00:05 → 08:02:12 (last rank) = 127 s
    # KV 08:02:12 → 08:02:14 = 2 s; graphs: TP0 21.87 s (TP1 21.63 s); /health 503 at :40 and :45
    store = _ingest([FIXTURES / "v0_4_compose.log"])
    (ld,) = loads(store)
    assert (ld["load_s"], ld["weight_s"], ld["kv_s"], ld["graph_s"], ld["polls"]) == (
        166.0,
        127.0,
        2.0,
        21.87,
        2,
    )
    assert (ld["outcome"], ld["tp"], ld["model"]) == ("ready", 2, "Qwen/Qwen2.5-72B-Instruct")


def test_v0_5_eagle3_target_and_draft() -> None:
    # local CET: start 14:00:00.012, ready 14:02:16.821 → 136.809 s
    # weights: elapsed= 85.60 (target, TP0) and 3.41 (draft, TP1)
    # KV: last load end 14:01:36.512 → target Memory pool end 14:01:38.230 = 1.718 s
    # graphs: target 15.71 (TP0); draft 10.11 + 6.33 = 16.44 (TP1); polls: /v1/models 200, /health 503
    store = _ingest([FIXTURES / "v0_5_eagle3.log"])
    (ld,) = loads(store)
    assert ld["spec"] == "EAGLE3"
    assert ld["start"] == "2025-11-03 13:00:00.012000"
    assert approx(ld["load_s"], 136.809)
    assert (ld["weight_s"], ld["draft_weight_s"]) == (85.6, 3.41)
    assert approx(ld["kv_s"], 1.718)
    assert (ld["graph_s"], ld["draft_graph_s"]) == (15.71, 16.44)
    assert (ld["polls"], ld["port"], ld["pid"]) == (2, 31000, 77120)


def test_v0_5_14_new_graph_lines() -> None:
    # start 09:15:00, ready 09:16:41 → 101 s; weights 51.02 (DP0 TP0 EP0); KV 09:16:02 → 09:16:04 = 2 s
    # graphs: target decode 19.37 + target prefill 7.48 = 26.85 s; /health_generate 503 twice
    store = _ingest([FIXTURES / "v0_5_14_graphs.log"])
    (ld,) = loads(store)
    assert (ld["load_s"], ld["weight_s"], ld["kv_s"], ld["graph_s"], ld["polls"]) == (
        101.0,
        51.02,
        2.0,
        26.85,
        2,
    )
    assert (ld["draft_graph_s"], ld["outcome"], ld["pid"]) == (None, "ready", 90211)


def test_v0_5_17_startup_timings_and_a_killed_start() -> None:
    # first start dies while loading: "Rank 0 scheduler died during initialization (exit code: -9)"
    # second: start 11:05:00, ready 11:07:03 → 123 s; weights elapsed=94.87; KV from the startup
    # timings kv_cache_allocation=1.62; graph 13.92; one /v1/models poll
    store = _ingest([FIXTURES / "v0_5_17_timings.log"])
    first, second = loads(store)
    assert (first["outcome"], first["ready"], first["load_s"], first["start_line"]) == (
        "killed",
        None,
        None,
        1,
    )
    assert (second["load_s"], second["weight_s"], second["kv_s"], second["graph_s"], second["polls"]) == (
        123.0,
        94.87,
        1.62,
        13.92,
        1,
    )
    assert (second["outcome"], second["pid"], second["port"]) == ("ready", 4242, 30100)


def test_failed_killed_and_health_ready_starts() -> None:
    # 1: Not enough memory while sizing the KV pool → failed (weights 07:00:05 → 07:03:05 = 180 s)
    # 2: "Rank 0 scheduler is dead" + "Exit code: -9" → killed
    # 3: no ready line: the first /health 200 (07:23:30) is ready → 210 s, one 503 poll before it
    store = _ingest([FIXTURES / "errors.log"])
    a, b, c = loads(store)
    assert (a["outcome"], a["weight_s"], a["ready"]) == ("failed", 180.0, None)
    assert b["outcome"] == "killed"
    assert (c["outcome"], c["ready_source"], c["ready"], c["load_s"], c["polls"]) == (
        "ready",
        "health_200",
        "2025-06-01 07:23:30.000000",
        210.0,
        1,
    )
    assert (c["weight_s"], c["kv_s"], c["graph_s"], c["ready_line"]) == (175.0, 1.0, 18.0, 36)


JOURNAL_START = """\
2025-11-03T12:59:50+0000 gpu-node-2 systemd[1]: Starting sglang-llama-eagle3.service - SGLang Llama EAGLE-3...
2025-11-03T12:59:50+0000 gpu-node-2 systemd[1]: Started sglang-llama-eagle3.service - SGLang Llama EAGLE-3.
"""


def test_journal_start_refines_the_start(tmp_path: Path) -> None:
    journal = tmp_path / "journal.txt"
    journal.write_text(JOURNAL_START)
    log = tmp_path / "sglang-llama-eagle3.log"
    log.write_bytes((FIXTURES / "v0_5_eagle3.log").read_bytes())
    store = _ingest([journal, log], tz="Europe/Berlin")
    (ld,) = loads(store)
    # Starting 12:59:50 UTC → ready 13:02:16.821 UTC
    assert (ld["start_source"], ld["start"], ld["unit"]) == (
        "systemd_starting",
        "2025-11-03 12:59:50.000000",
        "sglang-llama-eagle3.service",
    )
    assert approx(ld["load_s"], 146.821)
    assert (ld["weight_s"], ld["draft_weight_s"], ld["graph_s"], ld["draft_graph_s"]) == (
        85.6,
        3.41,
        15.71,
        16.44,
    )


def test_journal_kill_turns_a_silent_start_into_killed(tmp_path: Path) -> None:
    log = tmp_path / "sglang-silent.log"
    log.write_text(
        "[2025-06-01 07:00:00] server_args=ServerArgs(model_path='/m', tp_size=1, port=30000)\n"
        "[2025-06-01 07:00:05] Load weight begin. avail mem=79.10 GB\n"
    )
    alone = _ingest([log])
    assert [ld["outcome"] for ld in loads(alone)] == ["incomplete"]
    journal = tmp_path / "journal.txt"
    journal.write_text(
        "2025-06-01T06:59:58+0000 h1 systemd[1]: Starting sglang-silent.service - silent...\n"
        "2025-06-01T06:59:58+0000 h1 systemd[1]: Started sglang-silent.service - silent.\n"
        "2025-06-01T07:01:00+0000 h1 systemd[1]: sglang-silent.service: A process of this unit has been killed by the OOM killer.\n"
        "2025-06-01T07:01:00+0000 h1 systemd[1]: sglang-silent.service: Main process exited, code=killed, status=9/KILL\n"
        "2025-06-01T07:01:00+0000 h1 systemd[1]: sglang-silent.service: Failed with result 'oom-kill'.\n"
    )
    both = _ingest([journal, log])
    (ld,) = loads(both)
    assert (ld["outcome"], ld["start_source"], ld["start"]) == (
        "killed",
        "systemd_starting",
        "2025-06-01 06:59:58.000000",
    )


@needs_real_samples()
@pytest.mark.corpus
def test_real_journal_loads() -> None:
    # journal.short-iso: Starting 09:00:00 → ready 09:06:11 (371 s); weights 09:00:20 → 09:05:16
    # (296 s), KV 09:05:16 → 09:05:22 (6 s), graph 27.20 s; after the OOM kill Starting 11:42:15 →
    # ready 11:48:43 (388 s), weights 310 s, KV 6 s, graph 30.60 s
    store = _ingest([REAL_SAMPLES / "journal" / "journal.short-iso.txt"], year=2025)
    a, b = loads(store)
    for ld, want in ((a, (371.0, 296.0, 6.0, 27.2, 5150)), (b, (388.0, 310.0, 6.0, 30.6, 6262))):
        assert (ld["load_s"], ld["weight_s"], ld["kv_s"], ld["graph_s"], ld["pid"]) == want
        assert (ld["start_source"], ld["outcome"], ld["unit"], ld["tp"], ld["port"]) == (
            "systemd_starting",
            "ready",
            "sglang-qwen.service",
            8,
            30001,
        )


@needs_real_samples()
@pytest.mark.corpus
def test_same_lines_in_the_journal_and_a_log_file_count_once(tmp_path: Path) -> None:
    src = (REAL_SAMPLES / "journal" / "journal.short-iso.txt").read_bytes().decode("utf-8", "replace")
    own = [line.split(": ", 1)[1] for line in src.splitlines() if " python3[" in line and ": [" in line]
    log = tmp_path / "sglang-qwen.log"
    log.write_text("\n".join(own) + "\n")
    store = _ingest([REAL_SAMPLES / "journal" / "journal.short-iso.txt", log], year=2025)
    got = loads(store)
    assert [(ld["load_s"], ld["outcome"]) for ld in got] == [(371.0, "ready"), (388.0, "ready")]


def test_derive_inside_a_transaction_and_again() -> None:
    store = _ingest([FIXTURES / "errors.log"])
    with store.transaction():
        assert derive_service_loads(store) == 3
    assert derive_service_loads(store) == 3
    assert store.count("service_loads") == 3


def test_no_sglang_no_loads() -> None:
    store = Store.memory()
    assert derive_service_loads(store) == 0


def test_a_log_cut_after_init_begin_starts_its_load_at_its_first_startup_line(tmp_path: Path) -> None:
    """A TP8 log whose first lines are the ranks' 'Init torch distributed ends': the load starts
    there, not one second and nine lines later at 'Load weight begin'."""
    log = tmp_path / "llm.log"
    log.write_text(
        "".join(
            f"[2025-10-16 09:06:09 TP{r}] Init torch distributed ends. mem usage=0.94 GB\n" for r in range(8)
        )
        + "[2025-10-16 09:06:10 TP0] Load weight begin. avail mem=78.50 GB\n"
        + "[2025-10-16 09:07:10 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, "
        "avail mem=40.69 GB, mem usage=36.73 GB.\n"
    )
    store = _ingest([log])
    (load,) = loads(store)
    assert (load["start"], load["start_line"]) == ("2025-10-16 09:06:09.000000", 1), load
    store.close()


# ----------------------------------------------------------------------------- fleet stores

_ROW_KEYS = [
    "origin",
    "source_id",
    "line_no",
    "ts",
    "host",
    "unit",
    "pid",
    "kind",
    "role",
    "ranks",
    "elapsed_s",
    "exit_code",
    "detail",
    "path",
    "status",
    "model_path",
    "speculative_algorithm",
    "tp_size",
    "port",
    "result",
    "code",
]


def _row(
    origin: str, at: str, host: str, source_id: int, line_no: int, kind: str, **kw: Any
) -> dict[str, Any]:
    """One row of the ``service_loads`` query, the unit ``sglang-x.service``."""
    row: dict[str, Any] = dict.fromkeys(_ROW_KEYS)
    row.update(
        origin=origin,
        ts=datetime.fromisoformat(f"2025-06-01T{at}+00:00"),
        host=host,
        unit="sglang-x.service",
        source_id=source_id,
        line_no=line_no,
        kind=kind,
        **kw,
    )
    return row


def _in_query_order(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: (r["ts"], r["source_id"], r["line_no"], r["origin"]))


def _per_host(rows: list[dict[str, Any]], host: str) -> list[dict[str, Any]]:
    """``host``'s loads derived from ``rows`` (without the numbering, which counts every host's)."""
    return [
        {k: v for k, v in ld.items() if k != "load_id"} for ld in derive_loads(rows) if ld["host"] == host
    ]


def _assert_hosts_apart(rows: list[dict[str, Any]], hosts: tuple[str, ...]) -> None:
    """A host's loads in a store of several hosts are those of its own store."""
    for host in hosts:
        alone = _in_query_order([r for r in rows if r["host"] == host])
        assert _per_host(_in_query_order(rows), host) == _per_host(alone, host), host


def test_another_hosts_kill_or_start_does_not_change_a_hosts_loads() -> None:
    """Two hosts of a fleet store run the same unit: h1's load is killed at 07:00:50 (its
    journal and its kernel say so), after h2's start at 07:00:00; h2's start is stopped by its
    operator at 07:01:20. h2's start does not end h1's load (h1's kill is h1's), and h1's OOM
    kill does not kill h2's load."""
    rows = [
        _row("unit", "06:59:50", "h1", 1, 10, "starting"),
        _row("config", "06:59:51", "h1", 2, 1, "config", model_path="/m"),
        _row("unit", "07:00:00", "h2", 11, 10, "starting"),
        _row("config", "07:00:01", "h2", 12, 1, "config", model_path="/m"),
        _row("oom", "07:00:50", "h1", 3, 40, "oom_kill", pid=4242),
        _row("unit", "07:00:50", "h1", 1, 20, "main_exited", code="killed"),
        _row("unit", "07:01:20", "h2", 11, 20, "stopping"),
        _row("unit", "07:01:21", "h2", 11, 21, "stopped"),
    ]
    _assert_hosts_apart(rows, ("h1", "h2"))
    got = {ld["host"]: ld["outcome"] for ld in derive_loads(_in_query_order(rows))}
    assert got == {"h1": "killed", "h2": "stopped"}


def test_a_started_line_pairs_with_its_own_hosts_starting_line() -> None:
    """Two hosts start the unit 10 ms apart (a parallel rollout): each host's `Started`
    belongs to its own `Starting`, so each load starts at its host's `Starting` line, as in its
    own store — not at its `Started`, 40 ms later, because the other host's `Starting` came
    between."""
    rows = [
        _row("unit", "07:00:00.000", "h1", 1, 10, "starting"),
        _row("unit", "07:00:00.010", "h2", 11, 10, "starting"),
        _row("unit", "07:00:00.040", "h1", 1, 11, "started"),
        _row("unit", "07:00:00.050", "h2", 11, 11, "started"),
        _row("config", "07:00:02", "h1", 2, 1, "config", model_path="/m"),
        _row("config", "07:00:02", "h2", 12, 1, "config", model_path="/m"),
        _row("sglang", "07:02:00", "h1", 2, 9, "ready"),
        _row("sglang", "07:02:00", "h2", 12, 9, "ready"),
    ]
    _assert_hosts_apart(rows, ("h1", "h2"))
    got = [
        (ld["host"], ld["start_source"], ld["start_line_no"]) for ld in derive_loads(_in_query_order(rows))
    ]
    assert got == [("h1", "systemd_starting", 10), ("h2", "systemd_starting", 10)]


def test_a_start_that_failed_on_its_own_error_is_failed_not_killed(tmp_path: Path) -> None:
    """A restart that hits a CUDA OOM while loading and is then SIGKILLed by SGLang's own
    teardown (systemd: code=killed) failed — nothing from outside killed it. A rank that died of
    -9 (an OOM killer) stays a kill."""
    u = "sglang-coder.service"
    journal = tmp_path / "journal.txt"
    journal.write_text(
        f"2025-06-18T14:03:07+0000 h systemd[1]: Starting {u} - coder...\n"
        f"2025-06-18T14:03:07+0000 h systemd[1]: Started {u} - coder.\n"
        "2025-06-18T14:03:10+0000 h sglang-coder[601]: [2025-06-18 14:03:10] server_args=ServerArgs("
        "model_path='/m', tp_size=4, port=30000)\n"
        "2025-06-18T14:03:12+0000 h sglang-coder[601]: [2025-06-18 14:03:12 TP0] Load weight begin. avail mem=4.10 GB\n"
        "2025-06-18T14:03:14+0000 h sglang-coder[601]: [2025-06-18 14:03:14 TP0] Scheduler hit an exception: "
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total capacity of "
        "79.19 GiB of which 512.00 MiB is free. Process 60288 has 74.32 GiB memory in use.\n"
        f"2025-06-18T14:03:16+0000 h systemd[1]: {u}: Main process exited, code=killed, status=9/KILL\n"
        f"2025-06-18T14:03:16+0000 h systemd[1]: {u}: Failed with result 'signal'.\n"
    )
    store = _ingest([journal])
    (load,) = loads(store)
    assert load["outcome"] == "failed", load
