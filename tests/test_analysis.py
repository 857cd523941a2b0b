"""Correlation and diagnosis: incidents, causes, clock offsets, recovery, loads, rules."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from postmortem.analysis import rebuild
from postmortem.analysis.clock import start_pair_offsets
from postmortem.analysis.incidents import build_incidents, classify, cluster_evidence
from postmortem.analysis.load_stats import is_regression, load_statistics, percentile
from postmortem.analysis.model import Evidence, Load
from postmortem.ingest import IngestOptions, ingest_paths
from postmortem.store.db import Store
from postmortem.timeutil import get_zone

T = datetime(2025, 5, 25, 20, 17, 19, 604211, tzinfo=UTC)


def ev(
    kind: str, dt: float = 0.0, unit: str | None = "a.service", source: int = 1, line: int = 1, **raw: object
) -> Evidence:
    return Evidence(
        kind, T + timedelta(seconds=dt), source, line, str(raw.get("message", kind)), "h", unit, dict(raw)
    )


# ----------------------------------------------------------------------------- classification


@pytest.mark.parametrize(
    ("items", "cause"),
    [
        ([ev("oom_kill", killer="kernel", scope="global")], "host_oom"),
        ([ev("oom_kill", killer="kernel", scope="memcg", memcg_limit_kb=1 << 20)], "cgroup_oom"),
        (
            [
                ev(
                    "oom_kill",
                    killer="kernel",
                    scope=None,
                    message="Memory cgroup out of memory: Killed process 1 (x)",
                )
            ],
            "cgroup_oom",
        ),
        ([ev("oom_kill", killer="systemd-oomd")], "oomd"),
        ([ev("oom_kill", killer="earlyoom")], "earlyoom"),
        ([ev("cuda_oom"), ev("unit_main_exited", 2, code="exited")], "gpu_oom"),
        ([ev("unit_main_exited", code="killed", status="9")], "signal"),
        (
            [ev("unit_main_exited", code="killed", status="9"), ev("unit_failed_other", result="timeout")],
            "timeout",
        ),
        ([ev("unit_oom_killed")], "unknown"),
        ([ev("unit_failed", result="watchdog")], "unknown"),
    ],
)
def test_classify(items: list[Evidence], cause: str) -> None:
    assert classify(items)[0] == cause


def test_host_ram_is_said_plainly() -> None:
    why = classify([ev("oom_kill", killer="kernel", scope="memcg", memcg_limit_kb=671088640)])[4]
    assert "host RAM, not GPU memory" in why and "640 GiB" in why


# ----------------------------------------------------------------------------- clustering


def test_same_kill_from_two_sources_is_one_incident_with_one_victim() -> None:
    items = [
        ev(
            "oom_kill",
            0.0,
            source=1,
            line=134,
            killer="kernel",
            scope="memcg",
            pid=48213,
            comm="sglang::schedul",
        ),
        ev(
            "oom_kill",
            0.0004,
            source=2,
            line=5200,
            killer="kernel",
            scope="memcg",
            pid=48213,
            comm="sglang::schedul",
        ),
        ev("unit_oom_killed", 0.002, source=2, line=5301),
        ev("unit_main_exited", 0.04, source=2, line=5365, code="killed"),
    ]
    (inc,) = build_incidents(items, [])
    assert inc.cause == "cgroup_oom"
    assert [v.pid for v in inc.victims] == [48213]
    assert inc.victims[0].source_id == 1


def test_storm_is_one_incident_with_several_victims() -> None:
    items = [
        ev("oom_kill", i * 0.5, line=i, killer="kernel", scope="global", pid=100 + i, comm=f"w{i}")
        for i in range(6)
    ]
    (inc,) = build_incidents(items, [])
    assert len(inc.victims) == 6
    assert inc.victim is not None and inc.victim.pid == 100


def test_kills_an_hour_apart_are_two_incidents_and_count_as_a_loop() -> None:
    items = [
        ev("oom_kill", 0, killer="kernel", scope="memcg", pid=1),
        ev("oom_kill", 1800, killer="kernel", scope="memcg", pid=2),
    ]
    incs = build_incidents(items, [])
    assert len(incs) == 2
    assert incs[1].kills_last_hour == 1


def test_other_units_do_not_merge() -> None:
    clusters = cluster_evidence([ev("oom_kill", 0, unit="a.service"), ev("oom_kill", 1, unit="b.service")])
    assert len(clusters) == 2


def test_unitless_kernel_kill_joins_the_units_death() -> None:
    items = [
        ev("oom_kill", 0, unit=None, killer="kernel", scope="global", pid=7),
        ev("unit_main_exited", 0.3, code="killed"),
    ]
    (inc,) = build_incidents(items, [])
    assert inc.unit == "a.service" and inc.cause == "host_oom"


def test_skewed_source_merges_after_offset() -> None:
    items = [
        ev("oom_kill", 0, source=1, killer="kernel", scope="memcg", pid=1),
        ev("unit_main_exited", 7200.1, source=2, code="killed"),
    ]
    assert len(build_incidents(items, [])) == 2
    (inc,) = build_incidents(items, [], {2: 7200.0})
    assert inc.cause == "cgroup_oom"


# ----------------------------------------------------------------------------- recovery


def load(unit: str, start: float, ready: float | None, spec: str | None = None, **kw: object) -> Load:
    return Load(
        load_id=int(start) + 1,
        host="h",
        unit=unit,
        start_ts=T + timedelta(seconds=start),
        ready_ts=T + timedelta(seconds=ready) if ready is not None else None,
        load_s=(ready - start) if ready is not None else None,
        outcome="ready" if ready is not None else "killed",
        model_path="/m",
        speculative_algorithm=spec,
        port=30000,
        **kw,  # type: ignore[arg-type]
    )


def test_a_recovery_is_guessed_only_when_nothing_tells_what_the_killed_run_served() -> None:
    """The killed run's start is not in the data (its log begins mid-run): no model or port to
    match, so the first server of another unit ready within the hour is taken — and marked so;
    the unit's own restart, when there is one, is surer and wins even when later."""

    def bare(unit: str, start: float, ready: float) -> Load:
        ld = load(unit, start, ready)
        ld.model_path, ld.port = None, None  # its start was not logged
        return ld

    kill = ev("oom_kill", killer="kernel", scope="memcg", pid=1)
    (inc,) = build_incidents([kill], [bare("a.service", -4000, -3300), load("b.service", 660, 1245)])
    assert (inc.recovery_unit, inc.recovery_guessed, inc.downtime_s) == ("b.service", True, 1245)
    (inc,) = build_incidents(
        [kill], [bare("a.service", -4000, -3300), load("b.service", 660, 1245), load("a.service", 30, 1500)]
    )
    assert (inc.recovery_unit, inc.recovery_guessed) == ("a.service", False)
    (inc,) = build_incidents([kill], [bare("a.service", -4000, -3300), load("b.service", 3700, 4200)])
    assert inc.recovery_unit is None  # more than an hour later: not taken
    # the killed run's model known: another model's server is no recovery
    (inc,) = build_incidents([kill], [load("a.service", -4000, -3300), bare("b.service", 660, 1245)])
    assert inc.recovery_unit is None


def test_fallback_to_autoregressive_sibling() -> None:
    loads = [
        load("a.service", -4000, -3300, "EAGLE3"),
        load("a.service", 60, None, "EAGLE3"),
        load("b.service", 162, 732),
    ]
    (inc,) = build_incidents([ev("oom_kill", killer="kernel", scope="memcg", pid=1)], loads)
    assert inc.fallback_unit == "b.service"
    assert inc.recovery_load is not None and inc.recovery_load.load_s == 570
    assert inc.downtime_s == pytest.approx(732)


def test_restart_of_the_same_unit_is_recovery_not_fallback() -> None:
    loads = [load("a.service", -4000, -3300), load("a.service", 10, 398)]
    (inc,) = build_incidents([ev("oom_kill", killer="kernel", scope="memcg", pid=1)], loads)
    assert inc.recovery_unit == "a.service" and inc.fallback_unit is None
    assert inc.downtime_s == pytest.approx(398)


def test_no_recovery() -> None:
    (inc,) = build_incidents(
        [ev("oom_kill", killer="kernel", scope="memcg", pid=1)], [load("a.service", -4000, -3300)]
    )
    assert inc.recovered_ts is None and inc.downtime_s is None


# ----------------------------------------------------------------------------- clocks and loads


def test_zone_sized_offset_from_unit_start_pairs() -> None:
    rows = [
        {
            "source_id": 5,
            "line_no": n,
            "server_ts": T + timedelta(hours=2, seconds=2 + n),
            "reference_source_id": 1,
            "unit_ts": T + timedelta(seconds=n),
            "unit": "a.service",
        }
        for n in range(3)
    ]
    (off,) = start_pair_offsets(rows, {1: "journal-export", 5: "sglang"}, set())
    assert off.offset_s == 7200 and off.pairs == 3 and "time zone" in (off.note or "")
    rows_ok = [dict(r, server_ts=r["unit_ts"] + timedelta(seconds=3)) for r in rows]
    assert start_pair_offsets(rows_ok, {1: "journal-export", 5: "sglang"}, set()) == []


def test_load_statistics_and_regression() -> None:
    loads = [load("b.service", i * 1000, i * 1000 + s) for i, s in enumerate((566, 584, 570, 1200))]
    (st,) = load_statistics(loads)
    assert st.count == 4 and st.phases["load_s"].median == pytest.approx(577)
    assert is_regression(loads[3], st) and not is_regression(loads[2], st)
    assert percentile([566, 584, 570], 90) == pytest.approx(581.2)


def test_a_fleet_stores_loads_are_counted_per_host() -> None:
    """Two hosts running the same unit: each incident reads its own host's loads."""
    from dataclasses import replace

    from postmortem.analysis.incidents import load_before
    from postmortem.analysis.load_stats import stats_for

    here = [load("b.service", i * 1000, i * 1000 + 570) for i in range(3)]
    there = [
        replace(load("b.service", i * 1000 + 5, i * 1000 + 5 + 900), host="g", load_id=100 + i)
        for i in range(5)
    ]
    stats = load_statistics(here + there)
    mine, theirs = stats_for("b.service", stats, "h"), stats_for("b.service", stats, "g")
    assert mine is not None and mine.count == 3 and mine.median_load_s == pytest.approx(570)
    assert theirs is not None and theirs.count == 5 and theirs.median_load_s == pytest.approx(900)
    killed = load_before("b.service", T + timedelta(seconds=2500), here + there, "h")
    assert killed is not None and killed.host == "h" and killed.start_ts == T + timedelta(seconds=2000)


# ----------------------------------------------------------------------------- several sources, skewed clocks

JOURNAL = """\
2025-05-25T18:41:03.118402+00:00 gpu-1 systemd[1]: Starting a.service - A...
2025-05-25T18:41:03.159000+00:00 gpu-1 systemd[1]: Started a.service - A.
2025-05-25T20:17:19.604592+00:00 gpu-1 kernel: Memory cgroup out of memory: Killed process 48213 (sglang::schedul) total-vm:285017324kB, anon-rss:79572404kB, file-rss:757768kB, shmem-rss:1048576kB, UID:1001 pgtables:167968kB oom_score_adj:0
2025-05-25T20:17:19.606100+00:00 gpu-1 systemd[1]: a.service: A process of this unit has been killed by the OOM killer.
2025-05-25T20:17:19.645000+00:00 gpu-1 systemd[1]: a.service: Main process exited, code=killed, status=9/KILL
2025-05-25T20:17:19.647000+00:00 gpu-1 systemd[1]: a.service: Failed with result 'oom-kill'.
"""

# written in Europe/Berlin local time (UTC+2) while the operator says --tz UTC
SGLANG = """\
[2025-05-25 20:41:05] server_args=ServerArgs(model_path='/m', tp_size=8, port=30000, speculative_algorithm='EAGLE3')
[2025-05-25 20:52:40] The server is fired up and ready to roll!
[2025-05-25 22:17:18 TP0] Decode batch, #running-req: 200, #token: 1000, token usage: 0.98, cuda graph: True, gen throughput (token/s): 2000.00, #queue-req: 90
"""

# dmesg with a boot time 42 s wrong (passed with --boot-time)
DMESG = "[  100.000000] Memory cgroup out of memory: Killed process 48213 (sglang::schedul) total-vm:285017324kB, anon-rss:79572404kB, file-rss:757768kB, shmem-rss:1048576kB, UID:1001 pgtables:167968kB oom_score_adj:0\n"


def test_several_sources_with_skewed_clocks_merge(tmp_path: Path) -> None:
    (tmp_path / "journal.txt").write_text(JOURNAL)
    (tmp_path / "a.log").write_text(SGLANG)
    (tmp_path / "dmesg.txt").write_text(DMESG)
    store = Store.open(tmp_path / "pm.duckdb")
    utc = get_zone("UTC")
    ingest_paths(store, [str(tmp_path / "journal.txt")], IngestOptions(zone=utc, strict=True))
    ingest_paths(store, [str(tmp_path / "a.log")], IngestOptions(zone=utc, strict=True, unit="a.service"))
    wrong_boot = T - timedelta(seconds=100) + timedelta(seconds=42)
    ingest_paths(
        store, [str(tmp_path / "dmesg.txt")], IngestOptions(zone=utc, strict=True, boot_time=wrong_boot)
    )
    result = rebuild(store)
    offsets = {o.source_id: round(o.offset_s) for o in result.offsets.values()}
    store.close()
    assert len(result.incidents) == 1, [(i.ts, i.unit, i.cause) for i in result.incidents]
    inc = result.incidents[0]
    assert inc.unit == "a.service" and inc.cause == "cgroup_oom"
    assert [v.pid for v in inc.victims] == [48213]
    assert offsets == {2: 7200, 3: 42}
    assert inc.killed_load is not None and inc.killed_load.speculative_algorithm == "EAGLE3"


# ----------------------------------------------------------------------------- the real journal

from conftest import REAL_SAMPLES, REPO, needs_real_samples  # noqa: E402


@needs_real_samples()
def test_real_journal_in_every_rendering_is_one_incident(tmp_path: Path) -> None:
    """All renderings of the real binary journal (two zones, year-less modes included) give one
    cgroup OOM of sglang-qwen.service, the restart, and the downtime to the second load."""
    store = Store.open(tmp_path / "pm.duckdb")
    ingest_paths(store, [str(REAL_SAMPLES / "journal")], IngestOptions(zone=get_zone("UTC"), strict=True))
    result = rebuild(store)
    store.close()
    assert len(result.incidents) == 1
    inc = result.incidents[0]
    assert (inc.unit, inc.cause, inc.host) == ("sglang-qwen.service", "cgroup_oom", "gpu-node-7")
    assert inc.ts is not None and inc.ts.replace(microsecond=0) == datetime(
        2025, 3, 14, 11, 42, 5, tzinfo=UTC
    )
    assert [v.pid for v in inc.victims] == [2383]
    assert inc.restart_count == 1
    assert inc.recovery_unit == "sglang-qwen.service" and inc.fallback_unit is None
    assert inc.recovered_ts == datetime(2025, 3, 14, 11, 48, 43, tzinfo=UTC)
    assert inc.downtime_s == pytest.approx(398, abs=1)
    assert len(result.loads) == 2  # the same two starts seen by every rendering, once each


def test_logs_read_in_the_wrong_zone_are_put_on_the_journal_clock(tmp_path: Path) -> None:
    """The sample host runs in UTC; read its zone-less SGLang and nvidia-smi files as Los Angeles
    time and the analysis finds the 7 h offset (systemd's starts vs SGLang's server_args), moves
    those sources onto the journal's clock once, and finds the same incident and recovery."""
    from conftest import REPO

    store = Store.open(tmp_path / "pm.duckdb")
    la = get_zone("America/Los_Angeles")
    ingest_paths(store, [str(REPO / "sample_logs")], IngestOptions(zone=la, zone_given=True, strict=True))
    for _ in range(2):  # a second build must not shift again
        result = rebuild(store)
        (inc,) = result.incidents
        assert inc.downtime_s == pytest.approx(732.4, abs=0.5)
        assert inc.fallback_unit == "sglang-k26.service"
        assert inc.gpu_memory_freed is True
    shifts = dict(store.fetchall("SELECT format, max(shift_s) FROM sources GROUP BY format"))
    store.close()
    assert shifts["sglang"] == 7 * 3600
    assert shifts["nvidia-smi-csv"] == 7 * 3600
    assert shifts["journal-export"] is None and shifts["dmesg"] is None


# ----------------------------------------------------------------------------- rules


@pytest.mark.parametrize(
    ("after_kill", "fires"),
    [
        (["failed"], True),  # left failed: reset-failed is the next step
        (["failed", "starting", "started", "failed"], True),  # the restart failed too
        (["failed", "starting", "started", "deactivated"], False),  # stopped cleanly since
        (["failed", "starting", "started"], False),  # running again
        ([], False),
    ],
)
def test_reset_failed_only_for_a_unit_left_failed(after_kill: list[str], fires: bool) -> None:
    from postmortem.analysis.facts import IncidentFacts
    from postmortem.analysis.model import Incident
    from postmortem.analysis.rules import explain
    from postmortem.analysis.timeline import Timeline, TimelineEvent

    inc = Incident(1, "h", T, "a.service", "cgroup_oom", 0.97, restart_count=1)
    tl = Timeline(kill_ts=T, start=T - timedelta(minutes=30), end=T + timedelta(minutes=30), bucket_s=30)
    tl.events = [
        TimelineEvent(T + timedelta(seconds=i), "systemd", "a.service", kind, kind, 1, i + 1)
        for i, kind in enumerate(after_kill)
    ]
    rec = explain("reset_failed", IncidentFacts(incident=inc, timeline=tl, offsets=[]))
    assert (rec is not None) == fires
    if rec is not None:
        assert "still in the failed state" in rec.detail


@pytest.mark.parametrize(
    ("ready_after_s", "words"),
    [
        (660.0, "about the same time: switching did not shorten"),
        (300.0, "sooner: switching shortened the outage"),
        (1200.0, "later than the restart would have been: switching lengthened the outage"),
    ],
)
def test_restart_left_alone_against_the_fallback(ready_after_s: float, words: str) -> None:
    """The restart at T+60 s with the unit's median load of 600 s would have been ready at
    T+660 s; the fallback's ready time decides the verdict."""
    from types import SimpleNamespace

    from postmortem.analysis.facts import IncidentFacts
    from postmortem.analysis.model import Incident
    from postmortem.analysis.rules import explain
    from postmortem.analysis.timeline import Timeline

    inc = Incident(1, "h", T, "a.service", "cgroup_oom", 0.97, restart_count=1)
    inc.fallback_unit = inc.recovery_unit = "b.service"
    inc.recovered_ts = T + timedelta(seconds=ready_after_s)
    tl = Timeline(kill_ts=T, start=T - timedelta(minutes=30), end=T + timedelta(minutes=30), bucket_s=30)
    facts = IncidentFacts(incident=inc, timeline=tl, offsets=[])
    facts.restarts = [{"ts": T + timedelta(seconds=60), "source_id": 1, "line_no": 9, "restart_count": 1}]
    facts.unit_loads = SimpleNamespace(median_load_s=600.0, loads=[])  # type: ignore[assignment]
    rec = explain("restart_policy", facts)
    assert rec is not None and words in rec.detail


def _facts_with_recovery(ready_after_s: float = 600.0) -> object:
    from postmortem.analysis.facts import IncidentFacts
    from postmortem.analysis.model import Incident
    from postmortem.analysis.timeline import Timeline

    inc = Incident(1, "h", T, "a.service", "cgroup_oom", 0.97)
    inc.fallback_unit = inc.recovery_unit = "b.service"
    inc.recovered_ts = T + timedelta(seconds=ready_after_s)
    tl = Timeline(kill_ts=T, start=T - timedelta(minutes=30), end=T + timedelta(minutes=30), bucket_s=30)
    return IncidentFacts(incident=inc, timeline=tl, offsets=[])


@pytest.mark.parametrize(
    ("statuses", "title", "words"),
    [
        # 503 until the ready line, then 200: the status code told the truth
        ([503, 503, 200], "Keep the readiness poll short", "the status code was a correct readiness signal"),
        # a 200 before the server said it was ready: the poller must read the body
        ([503, 200, 200], "Make the readiness check parse /v1/models", "got a 200 already (the first at"),
    ],
)
def test_readiness_advice_follows_what_the_polls_got(statuses: list[int], title: str, words: str) -> None:
    """Polls 15 s apart ending at the ready line (T+600 s): a 2xx before it means the status code
    is not readiness; 5xx until it means it was, and the advice says so instead."""
    from postmortem.analysis.rules import explain

    facts: Any = _facts_with_recovery(600.0)
    first = T + timedelta(seconds=600 - 15 * (len(statuses) - 1))
    facts.polls = [
        {
            "ts": first + timedelta(seconds=15 * i),
            "path": "/v1/models",
            "status": st,
            "source_id": 1,
            "line_no": 10 + i,
        }
        for i, st in enumerate(statuses)
    ]
    rec = explain("health_check_backoff", facts)
    assert rec is not None and rec.title.startswith(title) and words in rec.detail
    assert "15 s apart" in rec.detail


@pytest.mark.parametrize(
    ("before_gib", "words"),
    [
        (60.0, "memory grew with the load before anything queued"),
        (10.0, "most of the growth came with the queue"),
    ],
)
def test_queue_advice_says_whether_memory_grew_before_the_queue(before_gib: float, words: str) -> None:
    """Host RAM in use sampled every minute for 30 minutes before the kill, the queue starting
    at T−15 min: how much grew before it decides whether the queue is said to explain it."""
    from postmortem.analysis.facts import _host_growth
    from postmortem.analysis.rules import explain

    facts: Any = _facts_with_recovery()
    total_mib, q = 2048.0 * 1024, T - timedelta(minutes=15)
    facts.queue_max, facts.queue_start_ts = 100, q
    facts.running_first, facts.running_last = 100, 200
    host = []
    for m in range(30, -1, -1):
        t = T - timedelta(minutes=m)
        grown = before_gib * min(30 - m, 15) / 15 + max(0, 15 - m) * 6.0  # GiB, 90 GiB after the queue
        host.append((t - timedelta(seconds=2), total_mib - 700 * 1024 - grown * 1024, total_mib))
    facts.host_avail_start_mib, facts.host_avail_end_mib = host[0][1], host[-1][1]
    _host_growth(facts, host)
    rec = explain("bound_queue", facts)
    assert rec is not None and words in rec.detail
    assert facts.host_rate_mib_min == pytest.approx(6 * 1024, rel=0.01)
    # the killed run's settings known or not: "configured: …" only when they are
    assert ("configured: unlimited" in rec.detail) == (facts.config is not None)
    facts.config = None
    rec = explain("bound_queue", facts)
    assert rec is not None and "configured" not in rec.detail and "settings are not in the data" in rec.detail


# ----------------------------------------------------------------------------- many incidents


def _many_incidents(tmp_path: Path) -> Store:
    import sys

    from conftest import REPO

    sys.path.insert(0, str(REPO / "bench"))
    from run import gen_journal

    log = tmp_path / "journal.log"
    gen_journal(log, 20_000)  # a kill every 1,000 lines
    store = Store.open(tmp_path / "pm.duckdb")
    ingest_paths(store, [str(log)], IngestOptions(zone=get_zone("UTC"), strict=True))
    return store


def _derived(store: Store) -> list[list[tuple[object, ...]]]:
    return [
        store.fetchall(f"SELECT * FROM {t} ORDER BY ALL")
        for t in ("incidents", "incident_victims", "incident_evidence", "recommendations")
    ]


def _rounded(value: object) -> object:
    """``value`` with its floats to 9 significant digits: DuckDB sums a column's floats in an
    order that depends on how its threads split the rows (an ``avg()`` can differ in the last bit
    when other queries run at the same time)."""
    import dataclasses

    if isinstance(value, float):
        return float(f"{value:.9g}")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (type(value).__name__, *(_rounded(getattr(value, f.name)) for f in dataclasses.fields(value)))
    if isinstance(value, (list, tuple)):
        return [_rounded(v) for v in value]
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    return value


def test_incidents_analysed_by_threads_are_those_analysed_in_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    import postmortem.analysis as analysis

    store = _many_incidents(tmp_path)
    monkeypatch.setattr(analysis, "usable_cpus", lambda: 4)  # threads even on a one-CPU machine
    real = analysis.gather
    threads: set[str] = set()

    def gather(*args: object, **kwargs: object) -> object:
        threads.add(threading.current_thread().name)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(analysis, "gather", gather)
    seen: list[int] = []
    threaded = rebuild(store, on_facts=lambda _a, inc: seen.append(inc.incident_id))
    threaded_rows = _derived(store)
    assert len(threads) > 1 and all(t.startswith("postmortem-gather") for t in threads)
    threads.clear()
    monkeypatch.setattr(analysis, "GATHER_THREADS", 1)
    in_turn = rebuild(store)
    in_turn_rows = _derived(store)
    assert threads == {threading.current_thread().name}
    store.close()
    assert len(in_turn.incidents) >= 15
    assert seen == [i.incident_id for i in in_turn.incidents]  # reported in order, each once
    assert _rounded(threaded.facts) == _rounded(in_turn.facts)
    assert [i.summary for i in threaded.incidents] == [i.summary for i in in_turn.incidents]
    assert threaded.recommendations == in_turn.recommendations
    assert threaded_rows == in_turn_rows and all(threaded_rows)


def test_derived_rows_are_inserted_whole_and_typed() -> None:
    """``Store.insert_rows`` (one list per column, unnested side by side): every row arrives in
    order, each value cast to its column's type — a column of None only, ints where the column
    is DOUBLE, texts with quotes — and no rows is no statement."""
    store = Store.memory()
    cols = ("incident_id", "source_id", "line_no", "ts", "kind", "detail")
    rows: list[list[object]] = [
        [i, i % 3 or None, i * 10, T + timedelta(seconds=i), "k", None if i % 2 else f"d'{i}"]
        for i in range(1201)
    ]
    store.insert_rows("incident_evidence", cols, rows)
    store.insert_rows("incident_evidence", cols, [])
    offsets = [[1, None, 3, "m", 0, None], [2, None, 2.5, "m", 4, "n"]]
    store.insert_rows(
        "clock_offsets", ("source_id", "reference_source_id", "offset_s", "method", "pairs", "note"), offsets
    )
    got = store.fetchall("SELECT * FROM incident_evidence ORDER BY incident_id")
    shifts = store.fetchall(
        "SELECT source_id, reference_source_id, offset_s, pairs FROM clock_offsets ORDER BY 1"
    )
    store.close()
    assert [list(r) for r in got] == rows
    assert shifts == [(1, None, 3.0, 0), (2, None, 2.5, 4)]


@pytest.mark.parametrize("where", ["in a thread", "in the caller"])
def test_an_error_while_analysing_leaves_the_store_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    import threading

    import postmortem.analysis as analysis
    import postmortem.analysis.facts as facts_module

    store = _many_incidents(tmp_path)
    rebuild(store)
    before = _derived(store)
    monkeypatch.setattr(analysis, "usable_cpus", lambda: 4)
    real = facts_module.gather
    calls = [0]

    def fail_at_the_fifth(*_: object) -> None:
        calls[0] += 1
        if calls[0] == 5:
            raise RuntimeError("analysis failed")

    def failing_gather(*args: object, **kwargs: object) -> object:
        fail_at_the_fifth()
        return real(*args, **kwargs)  # type: ignore[arg-type]

    # (the error, and with it the traceback and its frames, is kept: the threads must end when
    # the error is raised, not when it is collected)
    on_facts = None
    if where == "in a thread":
        monkeypatch.setattr(analysis, "gather", failing_gather)
    else:  # e.g. drawing an incident's figures while the next ones are gathered
        on_facts = fail_at_the_fifth
    with pytest.raises(RuntimeError, match="analysis failed") as error:
        rebuild(store, on_facts=on_facts)
    # the threads and their connections are gone, the transaction rolled back, the store usable
    assert not [t for t in threading.enumerate() if t.name.startswith("postmortem-gather")]
    assert _derived(store) == before
    assert error.traceback
    monkeypatch.setattr(analysis, "gather", real)
    rebuild(store)
    assert _derived(store) == before
    store.close()


def test_duckdbs_threads_come_back_after_an_error_that_aborted_the_transaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The gathering sets DuckDB's threads to a share of the CPUs; a failed query of the
    analysis's own connection (while an incident's report is drawn) aborts the transaction,
    which then cannot set them back: they stayed at the share for every later query, and a later
    analysis took the share for what to restore."""
    import duckdb

    import postmortem.analysis as analysis

    store = _many_incidents(tmp_path)
    monkeypatch.setattr(analysis, "usable_cpus", lambda: 4)
    store.execute("SET threads = 3")

    def failing_query(*_: object) -> None:
        store.execute("SELECT * FROM no_such_table")

    with pytest.raises(duckdb.CatalogException):
        rebuild(store, on_facts=failing_query)
    assert store.fetchall("SELECT current_setting('threads')") == [(3,)]
    rebuild(store)
    assert store.fetchall("SELECT current_setting('threads')") == [(3,)]
    store.close()


def test_a_reader_connection_reads_in_utc(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "pm.duckdb")
    store.execute("SET GLOBAL TimeZone = 'America/New_York'")  # what a reader would inherit
    reader = store.reader()
    try:
        assert reader.fetchall("SELECT current_setting('TimeZone')") == [("UTC",)]
    finally:
        reader.close()
        store.close()


# ----------------------------------------------------------------------------- bounded look-ups


def test_the_last_sign_of_life_is_found_however_long_before_the_kill() -> None:
    from postmortem.analysis.facts import _last_activity

    store = Store.memory()
    assert _last_activity(store, ("a.service", None), T) is None
    store.execute(
        "INSERT INTO server_events (source_id, line_no, ts, unit, kind, engine) VALUES (1, 1, ?, 'a.service', 'ready', 'sglang')",
        [T - timedelta(hours=30)],
    )
    assert _last_activity(store, ("a.service", None), T) == T - timedelta(hours=30)  # beyond the first look
    store.execute(
        "INSERT INTO server_events (source_id, line_no, ts, unit, kind, engine) VALUES (1, 2, ?, 'a.service', 'ready', 'sglang')",
        [T - timedelta(minutes=5)],
    )
    store.execute(
        "INSERT INTO server_events (source_id, line_no, ts, unit, kind, engine) VALUES (1, 3, ?, 'a.service', 'ready', 'sglang')",
        [T + timedelta(minutes=5)],  # after the kill: not a sign of life before it
    )
    assert _last_activity(store, ("a.service", None), T) == T - timedelta(minutes=5)
    store.close()


def test_a_killed_pid_seen_on_a_gpu_days_later_is_not_memory_left_behind() -> None:
    from postmortem.analysis.facts import IncidentFacts, _gpu_release, _gpus_after_kill
    from postmortem.analysis.model import Incident, Victim
    from postmortem.analysis.timeline import Timeline

    store = Store.memory()
    for line, after in ((1, timedelta(seconds=60)), (2, timedelta(minutes=40)), (3, timedelta(days=3))):
        store.execute(
            "INSERT INTO gpu_processes (source_id, line_no, ts, pid, process_name, gpu_uuid, used_mib, truncated) "
            "VALUES (1, ?, ?, 4242, 'python3', 'GPU-1', 70000, false)",
            [line, T + after],
        )
    inc = Incident(1, "h", T, "a.service", "cgroup_oom", 0.9, victims=[Victim(4242, "x", T, 1, 1, 1, True)])
    facts = IncidentFacts(incident=inc, timeline=Timeline(T, T, T, 60.0))
    _gpu_release(store, facts, _gpus_after_kill(store, facts.incident))
    store.close()
    (row,) = facts.gpu_procs_after
    assert row["pid"] == 4242 and row["samples"] == 2 and row["last_ts"] == T + timedelta(minutes=40)
    assert inc.gpu_memory_freed is False


def test_a_second_interrupt_while_the_threads_finish_stops_their_queries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C in the middle of the analysis waits for the threads' incidents; a second Ctrl-C
    while waiting stops their queries: the interrupt is what the caller sees, and the store closes
    (a connection still busy in a thread made closing it fail, which replaced the interrupt)."""
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor

    import postmortem.analysis as analysis

    store = _many_incidents(tmp_path)
    monkeypatch.setattr(analysis, "usable_cpus", lambda: 4)
    real = analysis.gather
    first = [True]

    def gather(reader: Store, *args: object, **kwargs: object) -> object:
        if not first[0]:  # the other incidents' queries run until they are stopped (~30 s)
            reader.fetchall("SELECT count(*) FROM range(10000000000) t WHERE t.range % 7 = 3")
        return real(reader, *args, **kwargs)  # type: ignore[arg-type]

    def interrupt(*_: object) -> None:  # the first Ctrl-C, as the first incident is reported
        first[0] = False
        time.sleep(0.3)  # the threads are in their queries
        raise KeyboardInterrupt

    real_shutdown = ThreadPoolExecutor.shutdown
    waits: list[bool] = []

    def shutdown(self: ThreadPoolExecutor, wait: bool = True, *, cancel_futures: bool = False) -> None:
        waits.append(wait)
        if len(waits) == 1:  # the second Ctrl-C, while waiting for the threads
            real_shutdown(self, wait=False, cancel_futures=cancel_futures)
            raise KeyboardInterrupt
        real_shutdown(self, wait, cancel_futures=cancel_futures)

    monkeypatch.setattr(analysis, "gather", gather)
    monkeypatch.setattr(ThreadPoolExecutor, "shutdown", shutdown)
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        rebuild(store, on_facts=interrupt)
    assert time.monotonic() - started < 10
    assert not [t for t in threading.enumerate() if t.name.startswith("postmortem-gather")]
    store.close()


@pytest.mark.parametrize(
    ("scope", "memcg", "flagged"),
    [
        # a memcg OOM of the unit's own cgroup: its task table is the unit's processes
        ("memcg", "/system.slice/a.service", [4242, 5151]),
        # a global OOM's task table lists the whole host: a survivor's GPU memory is not left behind
        ("global", None, [4242]),
        # the limit of a parent slice: its table holds other units' processes too
        ("memcg", "/system.slice", [4242]),
    ],
)
def test_gpu_memory_left_behind_is_looked_for_only_in_the_killed_units_processes(
    scope: str, memcg: str | None, flagged: list[int]
) -> None:
    from postmortem.analysis.facts import IncidentFacts, _gpu_release, _gpus_after_kill
    from postmortem.analysis.model import Incident, Victim
    from postmortem.analysis.timeline import Timeline

    store = Store.memory()
    for line, pid in ((1, 4242), (2, 5151)):
        store.execute(
            "INSERT INTO gpu_processes (source_id, line_no, ts, pid, process_name, gpu_uuid, used_mib, truncated) "
            "VALUES (1, ?, ?, ?, 'python3', 'GPU-1', 70000, false)",
            [line, T + timedelta(seconds=60), pid],
        )
    inc = Incident(1, "h", T, "a.service", "host_oom", 0.9, victims=[Victim(4242, "x", T, 1, 1, 1, True)])
    facts = IncidentFacts(incident=inc, timeline=Timeline(T, T, T, 60.0))
    facts.oom = {"scope": scope, "oom_memcg": memcg, "cgroup": "/system.slice/a.service"}
    facts.tasks = [{"pid": 4242}, {"pid": 5151}]
    _gpu_release(store, facts, _gpus_after_kill(store, facts.incident))
    store.close()
    assert sorted(r["pid"] for r in facts.gpu_procs_after) == flagged


def test_a_killed_session_is_no_service_to_restart() -> None:
    """A host OOM that killed a login session's process: no Restart= advice, no GPU advice for a
    host whose GPUs stayed busy with another server, and no downtime of a service."""
    from postmortem.analysis.facts import GpuRelease, IncidentFacts
    from postmortem.analysis.model import Incident, Victim
    from postmortem.analysis.rules import explain
    from postmortem.analysis.rules.common import gpu_workload
    from postmortem.analysis.summary import downtime_text, summarise
    from postmortem.analysis.timeline import Timeline

    inc = Incident(
        1, "h", T, "session-12.scope", "host_oom", 0.97, victims=[Victim(90211, "python3", T, 1, 1, 1, True)]
    )
    tl = Timeline(kill_ts=T, start=T - timedelta(minutes=30), end=T + timedelta(minutes=30), bucket_s=30)
    facts = IncidentFacts(incident=inc, timeline=tl, offsets=[])
    facts.gpu_release = [GpuRelease("GPU 0", 129431, 129431, None, False, None)]
    assert explain("restart_policy", facts) is None
    assert not gpu_workload(facts) and explain("verify_gpu_freed", facts) is None
    assert downtime_text(None, inc.unit) == "— (not a service)"
    assert downtime_text(None, "a.service") == "not restored"
    assert "not a service" in summarise(facts)
    # the GPUs emptied a moment later, when a server beside it died: not the session's doing
    facts.gpu_release = [GpuRelease("GPU 0", 129431, 0, 25.0, True, None)]
    assert not gpu_workload(facts) and explain("verify_gpu_freed", facts) is None
    # the same for a service: then the killed service was using them
    inc.unit = "a.service"
    assert gpu_workload(facts)


def test_an_idle_gpu_released_nothing() -> None:
    """A GPU that held nothing before the kill (a container given GPUs 0–3 of 8) is not a GPU
    "released" at the kill, nor a sign that the killed unit used GPUs (QA r7 W9)."""
    from postmortem.analysis.facts import GpuRelease, IncidentFacts
    from postmortem.analysis.model import Incident
    from postmortem.analysis.rules import explain
    from postmortem.analysis.rules.common import gpu_workload
    from postmortem.analysis.timeline import Timeline

    inc = Incident(1, "h", T, "a.service", "host_oom", 0.97)
    tl = Timeline(kill_ts=T, start=T - timedelta(minutes=30), end=T + timedelta(minutes=30), bucket_s=30)
    facts = IncidentFacts(incident=inc, timeline=tl, offsets=[])
    facts.gpu_release = [GpuRelease(f"GPU {i}", 0, 0, 5.0, True, None) for i in (4, 5, 6, 7)]
    assert not gpu_workload(facts) and explain("verify_gpu_freed", facts) is None
    facts.gpu_release[:0] = [GpuRelease(f"GPU {i}", 71290, 0, 3.0, True, None) for i in (0, 1, 2, 3)]
    rec = explain("verify_gpu_freed", facts)
    assert rec is not None and gpu_workload(facts)
    assert rec.detail.startswith(
        "GPUs 0–3 fell to 0 MiB within 3 s of the kill (nvidia-smi samples); GPUs 4–7 held no memory before it."
    )


def test_a_gpu_oom_is_not_given_the_host_ram_action() -> None:
    from postmortem.analysis.facts import IncidentFacts
    from postmortem.analysis.model import Incident
    from postmortem.analysis.rules import explain
    from postmortem.analysis.timeline import Timeline

    inc = Incident(1, "h", T, "a.service", "gpu_oom", 0.9)
    tl = Timeline(kill_ts=T, start=T - timedelta(minutes=30), end=T + timedelta(minutes=30), bucket_s=30)
    facts = IncidentFacts(incident=inc, timeline=tl, offsets=[])
    rec = explain("host_ram_not_gpu", facts)
    assert rec is not None
    action = rec.action
    assert action is not None and "GPU memory settings" in action and "host memory" not in action


def test_clock_pairs_and_window_queries_keep_to_the_incidents_host() -> None:
    """A fleet store: another host's start of the same unit is no clock reference, and its
    lines are not this host's last sign of life or restarts."""
    from postmortem.analysis.facts import _last_activity
    from postmortem.query import run_named_dicts

    store = Store.memory()
    store.execute(
        "INSERT INTO server_events (source_id, line_no, ts, host, unit, kind, engine) VALUES "
        "(1, 1, ?, 'la', 'a.service', 'server_args', 'sglang'), (1, 2, ?, 'la', 'a.service', 'ready', 'sglang'), "
        "(3, 1, ?, 'utc', 'a.service', 'ready', 'sglang')",
        [T, T + timedelta(minutes=1), T + timedelta(minutes=2)],
    )
    store.execute(
        "INSERT INTO unit_events (source_id, line_no, ts, host, unit, action, restart_count) VALUES "
        "(2, 1, ?, 'utc', 'a.service', 'starting', NULL), (2, 2, ?, 'utc', 'a.service', 'restart_scheduled', 1)",
        [T - timedelta(minutes=90), T + timedelta(minutes=5)],
    )
    assert run_named_dicts(store, "unit_start_pairs") == []
    kill = T + timedelta(minutes=3)
    assert _last_activity(store, ("a.service", None), kill, "la") == T + timedelta(minutes=1)
    assert _last_activity(store, ("a.service", None), kill, None) == T + timedelta(minutes=2)
    args = {"unit": "a.service", "since": kill, "until": kill + timedelta(hours=1)}
    assert run_named_dicts(store, "unit_restarts", {**args, "host": "la"}) == []
    assert len(run_named_dicts(store, "unit_restarts", {**args, "host": "utc"})) == 1
    store.close()


def test_each_host_of_a_fleet_store_has_its_own_local_zone() -> None:
    from zoneinfo import ZoneInfo

    from postmortem.analysis import Analysis, host_zones

    store = Store.memory()
    rows = [
        (1, "la", "America/Los_Angeles"),
        (2, "la", "America/Los_Angeles"),
        (3, "la", "UTC"),  # one file read otherwise: the host's zone is its sources' usual one
        (4, "utc", "UTC"),
        (5, "odd", "Mars/Olympus"),  # a zone this machine does not know: the default applies
    ]
    for sid, host, tz in rows:
        store.execute(
            "INSERT INTO sources (source_id, path, format, sha256, bytes, lines, records, parse_issues, "
            "parsed_lines, ignored_lines, host, tz, ingested_at) VALUES (?, ?, 'journal-short', ?, 0, 0, 0, 0, 0, 0, ?, ?, ?)",
            [sid, f"/f{sid}", f"{sid:064d}", host, tz, T],
        )
    analysis = Analysis(zones=host_zones(store))
    store.close()
    berlin = ZoneInfo("Europe/Berlin")
    assert analysis.zone_of("la", berlin) == ZoneInfo("America/Los_Angeles")
    assert analysis.zone_of("utc", berlin) == ZoneInfo("UTC")
    assert analysis.zone_of("odd", berlin) == berlin
    assert analysis.zone_of(None, berlin) == berlin


def test_each_kernel_record_chooses_its_own_victim() -> None:
    """A record that killed the unit with memory.oom.group, then a record of its own 50 s later
    for the restart: the second is chosen by its record, not one of the first's group."""
    from postmortem.analysis.facts import IncidentFacts
    from postmortem.analysis.summary import summarise
    from postmortem.analysis.timeline import Timeline

    items = [
        ev("oom_kill", 0, line=5, killer="kernel", scope="memcg", pid=10, comm="sched", oom_id=1),
        ev("oom_kill", 0, line=6, killer="kernel", scope="memcg", pid=11, comm="detok", oom_id=1),
        ev("oom_kill", 50, line=30, killer="kernel", scope="memcg", pid=20, comm="sched", oom_id=2),
    ]
    (inc,) = build_incidents(items, [])
    assert [(v.pid, v.chosen) for v in inc.victims] == [(10, True), (11, False), (20, True)]
    assert [v.pid for v in inc.killed_with] == [11] and [v.pid for v in inc.later_kills] == [20]
    tl = Timeline(kill_ts=T, start=T - timedelta(minutes=30), end=T + timedelta(minutes=30), bucket_s=30)
    text = summarise(IncidentFacts(incident=inc, timeline=tl, offsets=[]))
    assert "and 1 more process of the unit" in text
    assert "50 s later it killed sched (pid 20) of the same unit again, in a record of its own" in text


def test_a_kill_of_another_process_just_before_is_said() -> None:
    from postmortem.analysis.facts import IncidentFacts
    from postmortem.analysis.summary import summarise
    from postmortem.analysis.timeline import Timeline, TimelineEvent

    (inc,) = build_incidents([ev("oom_kill", 0, killer="kernel", scope="global", pid=10, comm="sched")], [])
    tl = Timeline(kill_ts=T, start=T - timedelta(minutes=30), end=T + timedelta(minutes=30), bucket_s=30)
    loader = "Out of memory: Killed process 90211 (python3) total-vm:1kB, anon-rss:1kB"
    tl.events = [
        TimelineEvent(T - timedelta(seconds=25), "kernel", "session-12.scope", "oom_kill", loader, 1, 3),
        TimelineEvent(T, "kernel", "a.service", "oom_kill", "Out of memory: Killed process 10 (sched)", 1, 9),
    ]
    text = summarise(IncidentFacts(incident=inc, timeline=tl, offsets=[]))
    assert "25 s before, the kernel had killed python3 (pid 90211) of session-12.scope" in text
    tl.events[0] = TimelineEvent(T - timedelta(hours=1), "kernel", "x.scope", "oom_kill", loader, 1, 3)
    assert "before, the kernel had killed" not in summarise(
        IncidentFacts(incident=inc, timeline=tl, offsets=[])
    )


def test_a_restart_killed_again_is_not_weighed_against_the_fallback() -> None:
    from types import SimpleNamespace

    from postmortem.analysis.rules import explain

    facts: Any = _facts_with_recovery(840.0)
    facts.incident.restart_count = 1
    facts.restarts = [{"ts": T + timedelta(seconds=3), "source_id": 1, "line_no": 9, "restart_count": 1}]
    again = load("a.service", 5, None)  # killed before ready
    facts.unit_loads = SimpleNamespace(median_load_s=585.0, loads=[again])
    rec = explain("restart_policy", facts)
    assert rec is not None
    assert "was killed again before it was ready" in rec.detail and "would have been ready" not in rec.detail
    assert "did not come back and the operator started b.service" in rec.detail
    again.outcome, again.ready_ts, again.load_s = "ready", T + timedelta(seconds=590), 585.0
    rec = explain("restart_policy", facts)
    assert rec is not None and "would have been ready" in rec.detail and "operator stopped" in rec.detail


def test_a_failure_on_any_rank_is_in_the_timeline_a_milestone_only_from_tp0() -> None:
    from postmortem.query import run_named_dicts

    store = Store.memory()
    rows = [
        (1, "TP0", "load_weight_begin"),
        (2, "TP3", "load_weight_begin"),  # the same milestone on another rank: TP0's stands for it
        (3, "TP3", "cuda_oom"),  # the only rank that ran out
        (4, "TP5", "memory_unbalanced"),
    ]
    for line, ranks, kind in rows:
        store.execute(
            "INSERT INTO server_events (source_id, line_no, ts, unit, ranks, kind, message, engine) VALUES (1, ?, ?, 'a.service', ?, ?, 'x', 'sglang')",
            [line, T + timedelta(seconds=line), ranks, kind],
        )
    from postmortem.analysis.timeline import FAILURE_KINDS

    params = {"host": None, "from": T, "to": T + timedelta(minutes=1), "failure_kinds": sorted(FAILURE_KINDS)}
    got = run_named_dicts(store, "timeline_events", params)
    store.close()
    assert [(r["line_no"], r["kind"]) for r in got] == [
        (1, "load_weight_begin"),
        (3, "cuda_oom"),
        (4, "memory_unbalanced"),
    ]


def test_a_stop_timeout_is_told_with_its_drain_and_an_operators_restart_needs_no_restart_policy() -> None:
    from postmortem.analysis.facts import IncidentFacts
    from postmortem.analysis.model import Incident
    from postmortem.analysis.rules import explain
    from postmortem.analysis.timeline import Timeline, TimelineEvent

    inc = Incident(1, "h", T, "a.service", "timeout", 0.9)
    back = load("a.service", 0, 649)
    inc.recovered_ts, inc.recovery_unit, inc.recovery_load = back.ready_ts, "a.service", back
    tl = Timeline(kill_ts=T, start=T - timedelta(minutes=30), end=T + timedelta(minutes=30), bucket_s=30)
    tl.events = [
        TimelineEvent(
            T - timedelta(seconds=91),
            "operator",
            None,
            "command",
            "/usr/bin/systemctl restart a.service",
            1,
            33,
        ),
        TimelineEvent(
            T - timedelta(seconds=90), "systemd", "a.service", "stopping", "Stopping a.service - A...", 1, 34
        ),
    ]
    facts = IncidentFacts(incident=inc, timeline=tl, offsets=[])
    facts.last_batch = {"running_req": 37}
    facts.stop_ts, facts.stop_at = T - timedelta(seconds=90), (1, 34)  # as gather() finds it
    rec = explain("stop_timeout", facts)
    assert rec is not None and rec.evidence[0].line_no == 34
    assert "killed it 90 s later" in rec.detail and "37 requests still running" in rec.detail
    assert explain("restart_policy", facts) is None  # the operator's restart brought it back
    tl.events = tl.events[1:]
    rec = explain("restart_policy", facts)
    assert rec is not None and rec.title.startswith("Set Restart=")


def test_a_windowed_build_keeps_the_other_incidents_as_the_last_build_found_them(tmp_path: Path) -> None:
    store = _many_incidents(tmp_path)
    full = rebuild(store)
    before = _derived(store)
    assert len(full.incidents) > 3 and all(r[-1] for r in store.fetchall("SELECT summary FROM incidents"))
    one = full.incidents[2]
    assert one.ts is not None
    window = rebuild(store, since=one.ts - timedelta(seconds=1), until=one.ts + timedelta(seconds=1))
    # only that incident was analysed again; the table still holds every incident, numbered the same,
    # with what the full build found for the others
    assert list(window.facts) == [one.incident_id]
    assert _rounded(_derived(store)) == _rounded(before)
    store.close()


@pytest.mark.parametrize(
    ("moved", "kept"), [(timedelta(microseconds=-380), True), (timedelta(minutes=-10), False)]
)
def test_a_windowed_build_keeps_an_incident_whose_kill_was_read_from_another_copy(
    tmp_path: Path, moved: timedelta, kept: bool
) -> None:
    """The last build took an incident's kill from the other copy of the kernel line (dmesg's
    rather than the journal's, 380 µs apart): it is the same kill, and a windowed build
    elsewhere keeps what that build found for it. A kill 10 minutes away is another one."""
    store = _many_incidents(tmp_path)
    full = rebuild(store)
    other, one = full.incidents[1], full.incidents[2]
    assert one.ts is not None
    analysed = "SELECT running_at_kill, queued_at_kill, last_activity_ts, summary FROM incidents WHERE incident_id = ?"
    recs = "SELECT * FROM recommendations WHERE incident_id = ? ORDER BY ALL"
    found = store.fetchall(analysed, [other.incident_id]), store.fetchall(recs, [other.incident_id])
    assert found[0][0][-1] and found[1]
    store.execute("UPDATE incidents SET ts = ts + ? WHERE incident_id = ?", [moved, other.incident_id])
    rebuild(store, since=one.ts - timedelta(seconds=1), until=one.ts + timedelta(seconds=1))
    now = store.fetchall(analysed, [other.incident_id]), store.fetchall(recs, [other.incident_id])
    assert now == (found if kept else ([(None, None, None, None)], []))
    store.close()


def test_a_gpu_oom_beside_another_process_says_to_free_the_gpu_not_to_lower_the_settings() -> None:
    from postmortem.analysis.facts import GpuHolder, IncidentFacts
    from postmortem.analysis.model import Incident
    from postmortem.analysis.rules import recommend
    from postmortem.analysis.summary import summarise
    from postmortem.analysis.timeline import Timeline, TimelineEvent

    oom = ev(
        "cuda_oom", 0, line=40, message="CUDA out of memory. Process 88001 has 118.20 GiB memory in use."
    )
    inc = Incident(1, "h", T, "a.service", "gpu_oom", 0.8, evidence=[oom])
    inc.killed_load = load("a.service", -20, None)
    inc.killed_load.outcome = "failed"
    inc.restart_count = 5
    tl = Timeline(kill_ts=T, start=T - timedelta(minutes=30), end=T + timedelta(minutes=30), bucket_s=30)
    tl.events = [
        TimelineEvent(
            T + timedelta(seconds=98),
            "systemd",
            "a.service",
            "start_limit_hit",
            "Start request repeated too quickly.",
            2,
            49,
        )
    ]
    facts = IncidentFacts(incident=inc, timeline=tl, offsets=[])
    facts.gpu_holders = [GpuHolder(88001, 118.2, "python3", 8, T - timedelta(minutes=10), (3, 2))]
    recs = {r.rule: r for r in recommend(facts)}
    held = recs["gpu_held_by_another_process"]
    assert "pid 88001 (python3) held 118.2 GiB" in held.detail and "before a.service started" in held.detail
    assert recs["host_ram_not_gpu"].action is None  # not "lower the GPU settings"
    assert "systemd gave up" in recs["restart_loop"].title
    assert summarise(facts).startswith("a.service failed while loading on h at ")
    assert "systemd gave up restarting it at 20:18:57 UTC: its start limit" in summarise(facts)


def test_no_bucket_before_the_kill_holds_a_value_measured_after_it() -> None:
    """Buckets start at the kill: a batch line 5 s after it does not land in the last bucket
    'before the kill' (it did when buckets were aligned on whole minutes)."""
    from postmortem.analysis.timeline import memory_timeline

    store = Store.memory()
    for line, dt, usage in ((1, -10, 0.5), (2, 5, 0.9)):
        store.execute(
            "INSERT INTO server_stats (source_id, line_no, ts, unit, phase, token_usage, running_req, queue_req, engine) "
            "VALUES (1, ?, ?, 'a.service', 'decode', ?, 1, 0, 'sglang')",
            [line, T + timedelta(seconds=dt), usage],
        )
    tl = memory_timeline(store, kill_ts=T, unit="a.service", host=None, window_s=1800, after_s=600)
    store.close()
    before = [b for b in tl.before_kill() if b.token_usage is not None]
    assert [b.token_usage for b in before] == [0.5] and before[-1].ts == T - timedelta(seconds=tl.bucket_s)
    assert [b.token_usage for b in tl.buckets if b.ts >= T and b.token_usage is not None] == [0.9]


def test_gpu_memory_left_behind_by_a_server_no_kernel_record_names() -> None:
    """A CUDA OOM names no victims: the GPU processes that appeared with the killed load are the
    server's; one listed before the load started (another job) is not."""
    from postmortem.analysis.facts import IncidentFacts, _gpu_release, _gpus_after_kill
    from postmortem.analysis.model import Incident
    from postmortem.analysis.timeline import Timeline

    store = Store.memory()
    rows = [
        (1, 88001, -900),  # another job, there before the load
        (2, 71210, -540),  # the server's TP3 scheduler, from its load on
        (3, 88001, 60),
        (4, 71210, 60),  # still listed a minute after the server died
    ]
    for line, pid, dt in rows:
        store.execute(
            "INSERT INTO gpu_processes (source_id, line_no, ts, pid, process_name, gpu_uuid, used_mib, truncated) "
            "VALUES (1, ?, ?, ?, 'python3', 'GPU-3', 120000, false)",
            [line, T + timedelta(seconds=dt), pid],
        )
    inc = Incident(1, "h", T, "a.service", "gpu_oom", 0.8)
    inc.killed_load = load("a.service", -600, -20)
    facts = IncidentFacts(incident=inc, timeline=Timeline(T, T, T, 60.0))
    _gpu_release(store, facts, _gpus_after_kill(store, facts.incident))
    store.close()
    assert [r["pid"] for r in facts.gpu_procs_after] == [71210] and inc.gpu_memory_freed is False


def test_a_host_oom_names_a_bigger_consumer_than_its_victim() -> None:
    from postmortem.analysis.facts import Consumer, IncidentFacts
    from postmortem.analysis.model import Incident, Victim
    from postmortem.analysis.rules import recommend
    from postmortem.analysis.timeline import Timeline

    inc = Incident(
        1, "h", T, "a.service", "host_oom", 0.97, victims=[Victim(61207, "sglang::schedul", T, 1, 1, 1, True)]
    )
    tl = Timeline(kill_ts=T, start=T - timedelta(minutes=30), end=T + timedelta(minutes=30), bucket_s=30)
    facts = IncidentFacts(incident=inc, timeline=tl, offsets=[])
    facts.consumers = [
        Consumer("pt_data_worker", 16, 801 << 20, 0.56),
        Consumer("sglang::schedul", 8, 619 << 20, 0.43),
    ]
    rec = {r.rule: r for r in recommend(facts)}["host_ram_not_gpu"]
    assert (
        "The kernel chose sglang::schedul, but pt_data_worker held more (801 GiB in 16 processes)"
        in rec.detail
    )
    assert rec.action is not None and rec.action.startswith("Cap or move pt_data_worker")
    facts.consumers = [  # the victim's program is the biggest: nothing more to say
        Consumer("sglang::schedul", 8, 801 << 20, 0.56),
        Consumer("pt_data_worker", 16, 619 << 20, 0.43),
    ]
    rec = {r.rule: r for r in recommend(facts)}["host_ram_not_gpu"]
    assert "held more" not in rec.detail


def test_a_restart_stamped_in_the_kills_second_is_not_the_killed_load() -> None:
    """dmesg dates the kill to the µs (…:03.600), the short-iso journal the restart to the second
    (…:03): the restart is not the load that was killed."""
    from dataclasses import replace

    from postmortem.analysis.incidents import load_before

    kill = T.replace(microsecond=600000)
    serving = load("a.service", -3600, -3000)
    restart = replace(load("a.service", 0, None), start_ts=kill.replace(microsecond=0), load_id=99)
    assert load_before("a.service", kill, [serving, restart]) is serving
    assert load_before("a.service", kill, [restart]) is restart  # nothing else started before


def test_a_record_cut_by_a_rotation_adds_no_phantom_victim_and_keeps_its_limit() -> None:
    """The header part of a record in the older file (no kill line: no pid), its kill lines in
    the newer one (no memory figures), and the whole record in dmesg: one victim, the richest
    record, the cgroup's usage and limit."""
    gib = 1 << 20
    head = ev(
        "oom_kill",
        0,
        source=1,
        line=161,
        killer="kernel",
        scope="memcg",
        oom_id=7,
        memcg_usage_kb=640 * gib,
        memcg_limit_kb=640 * gib,
    )
    cut = ev("oom_kill", 0, source=2, line=5, killer="kernel", scope=None, pid=48213, comm="sched", oom_id=8)
    (inc,) = build_incidents([head, cut], [])
    assert [(v.pid, v.chosen) for v in inc.victims] == [(48213, True)]
    assert inc.memcg_limit_kb == 640 * gib
    whole = ev(
        "oom_kill",
        0.002,
        source=3,
        line=134,
        killer="kernel",
        scope="memcg",
        pid=48213,
        comm="sched",
        oom_id=9,
        memcg_usage_kb=640 * gib,
        memcg_limit_kb=640 * gib,
        anon_rss_kb=1,
    )
    (inc,) = build_incidents([head, cut, whole], [])
    assert len(inc.victims) == 1 and inc.oom_id == 9 and inc.victim is not None and inc.victim.line_no == 134


def test_the_kill_time_is_the_finest_stamp_of_its_second() -> None:
    """A short-iso journal stamps the kill 20:17:19, the export or dmesg 20:17:19.604: the
    incident is at .604 (the downtime and the restart delay are not a second off)."""
    whole = T.replace(microsecond=0)
    items = [
        ev("oom_kill", 0, source=1, line=5, killer="kernel", scope="global", pid=1, comm="x"),
        ev("oom_kill", 0, source=2, line=9, killer="kernel", scope="global", pid=1, comm="x"),
    ]
    items[0].ts = whole
    (inc,) = build_incidents(items, [])
    assert inc.ts == T


def test_an_offset_within_whole_second_stamps_is_no_offset() -> None:
    from postmortem.analysis.clock import message_pair_offsets

    formats = {1: "journal-short", 2: "dmesg"}
    row = {"source_id": 2, "reference_source_id": 1, "pairs": 3, "offset_s": 0.5}
    assert message_pair_offsets([{**row, "coarse": True}], formats) == []
    assert [o.offset_s for o in message_pair_offsets([{**row, "coarse": False}], formats)] == [0.5]
    assert [
        o.offset_s for o in message_pair_offsets([{**row, "coarse": True, "offset_s": 42.0}], formats)
    ] == [42.0]


def test_a_restart_the_start_limit_refused_is_not_counted() -> None:
    from postmortem.analysis.facts import gather
    from postmortem.analysis.model import Incident

    store = Store.memory()
    rows = [(i, "restart_scheduled", i, T + timedelta(seconds=10 * i)) for i in (1, 2, 3)]
    for line, action, count, ts in rows:
        store.execute(
            "INSERT INTO unit_events (source_id, line_no, ts, unit, action, restart_count) VALUES (1, ?, ?, 'a.service', ?, ?)",
            [line, ts, action, count],
        )
    store.execute(
        "INSERT INTO unit_events (source_id, line_no, ts, unit, action) VALUES (1, 9, ?, 'a.service', 'start_limit_hit')",
        [T + timedelta(seconds=30)],
    )
    inc = Incident(1, None, T, "a.service", "gpu_oom", 0.8)
    gather(store, inc, window_s=1800, all_loads=[], offsets=[])
    store.close()
    assert inc.restart_count == 2  # the third restart job ran into the start limit


def test_systemds_late_failed_line_belongs_to_the_death_it_ends() -> None:
    """A process stuck in the driver keeps the stop going through final-sigterm and final-sigkill:
    ``Failed with result 'signal'`` comes minutes after the kill, and is that death's — not a
    second incident. A later death logs its own kill line first, and its own result."""
    from postmortem.analysis.incidents import cluster_evidence

    first = [ev("unit_main_exited", 0, code="killed"), ev("unit_failed", 180, result="signal")]
    assert [len(c) for c in cluster_evidence(first)] == [2]
    again = [*first, ev("unit_main_exited", 600, code="killed"), ev("unit_failed", 601, result="signal")]
    assert [len(c) for c in cluster_evidence(again)] == [2, 2]
    # a second result for a death that already has one, or one long after, starts its own
    assert [len(c) for c in cluster_evidence([*first, ev("unit_failed", 400, result="signal")])] == [2, 1]
    assert [len(c) for c in cluster_evidence([first[0], ev("unit_failed", 3600, result="signal")])] == [1, 1]


def test_a_gpu_fault_before_an_unexplained_death_is_its_cause() -> None:
    from postmortem.analysis.incidents import attribute_gpu_fault, build_incidents

    xid = {
        "ts": T - timedelta(minutes=5),
        "source_id": 2,
        "line_no": 69,
        "host": "h",
        "bus_id": "0000:9a:00",
        "xid": 79,
        "pid": 31880,
        "process_name": "sglang::schedul",
        "message": "GPU has fallen off the bus.",
    }
    (inc,) = build_incidents([ev("unit_main_exited", 0, code="killed")], [])
    assert inc.cause == "signal"
    assert attribute_gpu_fault(inc, [xid])
    assert (inc.cause, inc.confidence) == ("gpu_fault", 0.85)
    assert "Xid 79 (GPU has fallen off the bus) on GPU 0000:9a:00" in inc.cause_explanation
    assert "5 min before" in inc.cause_explanation and inc.evidence[0].kind == "xid"
    # an OOM kill explains itself: the Xid does not replace it
    (oom,) = build_incidents([ev("oom_kill", 0, killer="kernel", scope="global")], [])
    assert not attribute_gpu_fault(oom, [xid]) and oom.cause == "host_oom"


def test_a_gpu_fault_incident_is_drained_and_reset_not_restarted(tmp_path: Path) -> None:
    """End to end: an Xid 79, the watchdog's SIGKILL five minutes later; the report names the
    GPU fault, quotes the driver's line, advises draining and a reset, and no Restart=."""
    from postmortem.analysis import rebuild

    journal = tmp_path / "journal.txt"
    journal.write_text(
        "2025-06-11T03:12:44+0000 gpu1 kernel: NVRM: Xid (PCI:0000:9a:00): 79, pid=31880, "
        "name=sglang::schedul, GPU has fallen off the bus.\n"
        "2025-06-11T03:17:45+0000 gpu1 systemd[1]: llm.service: Main process exited, code=killed, status=9/KILL\n"
        "2025-06-11T03:17:45+0000 gpu1 systemd[1]: llm.service: Failed with result 'signal'.\n"
    )
    store = Store.open(tmp_path / "pm.duckdb")
    ingest_paths(store, [str(journal)], IngestOptions(zone=get_zone("UTC"), strict=True))
    result = rebuild(store)
    (inc,) = result.incidents
    assert inc.cause == "gpu_fault"
    rules = {r.rule: r for r in result.recommendations[inc.incident_id]}
    assert "gpu_fault" in rules and "restart_policy" not in rules and "find_the_signal" not in rules
    assert rules["gpu_fault"].evidence[0].line_no == 1
    assert "Xid 79 (GPU has fallen off the bus)" in (inc.summary or "")
    store.close()


def test_an_earlier_kill_of_the_units_previous_run_is_not_the_same_shortage() -> None:
    """A kernel kill of another process minutes before is the same shortage taking it first; a
    kill of this unit's previous run (before systemd restarted it) is a death of its own."""
    from postmortem.analysis.facts import IncidentFacts
    from postmortem.analysis.model import Incident
    from postmortem.analysis.summary import _earlier_kill
    from postmortem.analysis.timeline import Timeline, TimelineEvent

    def kill(dt: float, unit: str | None, pid: int, comm: str) -> TimelineEvent:
        msg = f"Out of memory: Killed process {pid} ({comm}) total-vm:1kB, anon-rss:1kB"
        return TimelineEvent(T + timedelta(seconds=dt), "kernel", unit, "oom_kill", msg, 1, pid)

    inc = Incident(1, "h", T, "a.service", "host_oom", 0.9)
    tl = Timeline(kill_ts=T, start=T - timedelta(minutes=30), end=T + timedelta(minutes=30), bucket_s=30)
    facts = IncidentFacts(incident=inc, timeline=tl, offsets=[])
    tl.events = [kill(-257, "a.service", 41239, "sglang::schedul")]
    assert _earlier_kill(facts) is None
    tl.events.append(kill(-30, "loader.service", 777, "python3"))
    said = _earlier_kill(facts)
    assert said == {"before_s": 30.0, "comm": "python3", "pid": 777, "unit": "loader.service"}


CRASH_LOG = """\
[2025-11-03 18:40:00] server_args=ServerArgs(model_path='/models/m', tp_size=2, port=30000)
[2025-11-03 18:41:00 TP0] Load weight begin. avail mem=77.43 GB
[2025-11-03 18:42:00] The server is fired up and ready to roll!
[2025-11-03 18:48:30 TP0] Decode batch, #running-req: 3, #token: 100, token usage: 0.10, cuda graph: True, gen throughput (token/s): 90.00, #queue-req: 0
[2025-11-03 18:48:34 TP1] Scheduler hit an exception: Traceback (most recent call last):
  File "/sgl/python/sglang/srt/managers/scheduler.py", line 2000, in event_loop_overlap
    self.run_batch(batch)
AssertionError: draft token count mismatch
[2025-11-03 18:48:34] Received sigquit from a child process. It usually means the child failed.
"""


@pytest.mark.parametrize("with_journal", [False, True], ids=["sglang-log", "with-journal"])
def test_a_server_that_stops_on_its_own_error_is_a_crash_incident(tmp_path: Path, with_journal: bool) -> None:
    """A scheduler's traceback and SGLang's SIGQUIT: the server died of its own error. It is an
    incident (it was none: only kills and OOMs were), cause crash, quoting the exception, with
    advice to fix the error rather than memory settings; under systemd the SIGKILL SGLang sends
    its own tree is that crash, not an unexplained signal."""
    from postmortem.analysis import rebuild

    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "llm.log").write_text(CRASH_LOG)  # the unit's log: llm.service
    paths = [str(logs / "llm.log")]
    if with_journal:
        (logs / "journal.txt").write_text(
            "2025-11-03T18:48:35+0000 h systemd[1]: llm.service: Main process exited, code=killed, status=9/KILL\n"
            "2025-11-03T18:48:35+0000 h systemd[1]: llm.service: Failed with result 'signal'.\n"
        )
        paths.append(str(logs / "journal.txt"))
    store = Store.open(tmp_path / "pm.duckdb")
    ingest_paths(store, paths, IngestOptions(zone=get_zone("UTC"), strict=True))
    result = rebuild(store)
    (inc,) = result.incidents
    assert inc.cause == "crash"
    assert inc.confidence == (0.8 if with_journal else 0.7)
    assert "AssertionError: draft token count mismatch" in inc.cause_explanation
    assert "during serving" in inc.cause_explanation
    assert "crashed on" in (inc.summary or "")
    rules = {r.rule for r in result.recommendations[inc.incident_id]}
    assert "server_error" in rules and "find_the_signal" not in rules
    store.close()


def test_a_crash_report_tells_the_crash_not_a_kill(tmp_path: Path) -> None:
    """The server's own error ended it: the report's body, its rules and its figure call that
    moment the crash ("after the kill", "Requests at the kill" and "Configuration of the killed
    server" read as if something had killed it)."""
    from postmortem.build import BuildOptions, build

    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "llm.log").write_text(CRASH_LOG)
    opts = BuildOptions(
        db=str(tmp_path / "pm.duckdb"),
        logs=[str(logs)],
        out=tmp_path / "out",
        zone=get_zone("UTC"),
        ingest=IngestOptions(zone=get_zone("UTC"), zone_given=True, strict=True),
    )
    (report,) = build(opts).reports  # type: ignore[attr-defined]
    text = report.read_text()
    assert "| Crashed at |" in text
    body = text.split("# Appendix")[0]
    assert "the kill" not in body and "killed server" not in body and "killed run" not in body, [
        line for line in body.splitlines() if "kill" in line
    ]
    assert "Downtime (crash → service ready)" in body
    # the appendix's tables too: the run's load, the sources' gaps
    assert "| crashed instance |" in text and "killed instance" not in text
    assert "the kill" not in text, [line for line in text.splitlines() if "the kill" in line]


def test_gpus_with_room_are_not_called_nearly_full() -> None:
    from postmortem.analysis.facts import IncidentFacts
    from postmortem.analysis.model import Incident
    from postmortem.analysis.rules import explain
    from postmortem.analysis.timeline import Timeline

    inc = Incident(1, "h", T, "a.service", "host_oom", 0.9, killer="kernel")
    tl = Timeline(kill_ts=T, start=T - timedelta(minutes=30), end=T + timedelta(minutes=30), bucket_s=30)
    facts = IncidentFacts(incident=inc, timeline=tl, offsets=[])
    facts.gpu_total_mib = 81_559
    for used, words in ((38_912, "still had room"), (78_000, "nearly-full GPUs are normal")):
        facts.gpu_used_end_mib = used
        rec = explain("host_ram_not_gpu", facts)
        assert rec is not None and words in rec.detail


def test_the_last_batch_before_a_kill_is_the_killed_runs_own() -> None:
    """A run killed while loading served nothing: the requests 'running at the last batch line'
    were the previous run's, stopped minutes before (reported as the killed server's state)."""
    from postmortem.query import run_named_dicts

    store = Store.memory()
    store.execute(
        "INSERT INTO server_stats (source_id, line_no, ts, unit, phase, running_req, queue_req, engine) "
        "VALUES (1, 1, ?, 'a.service', 'decode', 62, 0, 'sglang')",
        [T - timedelta(minutes=4)],
    )
    q = {"unit": "a.service", "source": None, "before": T, "host": None}
    (prev,) = run_named_dicts(store, "last_batch_before", {**q, "since": None})
    assert prev["running_req"] == 62
    assert run_named_dicts(store, "last_batch_before", {**q, "since": T - timedelta(minutes=3)}) == []
    store.close()


def test_an_xid_in_the_journal_and_in_dmesg_is_listed_once() -> None:
    from postmortem.query import run_named_dicts

    store = Store.memory()
    for sid, host in ((1, "gpu1"), (2, None)):  # the journal's kernel line, a dmesg file's
        store.execute(
            "INSERT INTO gpu_xids (source_id, line_no, ts, host, bus_id, xid, pid, process_name, message) "
            "VALUES (?, 69, ?, ?, '0000:9a:00', 79, 31880, 'sglang::schedul', 'GPU has fallen off the bus.')",
            [sid, T + timedelta(microseconds=sid), host],
        )
    store.execute(
        "INSERT INTO gpu_xids (source_id, line_no, ts, host, bus_id, xid, message) "
        "VALUES (2, 70, NULL, NULL, '0000:9a:00', 79, 'undated')"
    )
    rows = run_named_dicts(store, "xids_in_window", {"since": None, "until": None})
    assert [(r["source_id"], r["host"]) for r in rows] == [(1, "gpu1"), (2, None)]
    store.close()


def test_hicaches_host_pools_before_a_memory_kill_are_named_with_their_sizes() -> None:
    from postmortem.analysis.facts import IncidentFacts
    from postmortem.analysis.model import Incident
    from postmortem.analysis.rules import explain
    from postmortem.analysis.timeline import Timeline

    inc = Incident(1, "h", T, "a.service", "cgroup_oom", 0.97, killer="kernel")
    inc.memcg_limit_kb = 256 * 1024 * 1024
    tl = Timeline(kill_ts=T, start=T - timedelta(minutes=30), end=T + timedelta(minutes=30), bucket_s=30)
    facts = IncidentFacts(incident=inc, timeline=tl, offsets=[])
    assert explain("hicache_host_memory", facts) is None  # no pools: nothing to say
    facts.hicache = [
        {"ts": T - timedelta(seconds=4), "ranks": f"TP{i}", "gb": 117.0, "source_id": 4, "line_no": 219 + i}
        for i in range(8)
    ]
    rec = explain("hicache_host_memory", facts)
    assert rec is not None and rec.evidence[0].line_no == 219
    assert "8 host-memory pools" in rec.detail and "117.00 GB each, 936 GB in all" in rec.detail
    assert "limit of 256 GiB" in rec.detail and "4 s before the kill" in rec.detail
    inc.cause = "gpu_oom"
    assert explain("hicache_host_memory", facts) is None  # GPU memory ran out: host pools are not the cause


def test_an_nccl_watchdog_abort_is_a_crash_that_names_the_hang(tmp_path: Path) -> None:
    """PyTorch's NCCL watchdog aborts a rank in C++: ``terminate called after throwing …``, its
    ``what():`` (the line that names the cause; it was ignored) and a C++ backtrace (its lines
    were parse issues). One exception event; a crash incident whose advice is the hang's."""
    from postmortem.analysis import rebuild

    log = tmp_path / "llm.log"
    log.write_text(
        "[2025-11-03 18:40:00] server_args=ServerArgs(model_path='/models/m', tp_size=8, port=30000)\n"
        "[2025-11-03 18:42:00] The server is fired up and ready to roll!\n"
        "[2025-11-03 18:48:30 TP5] Decode batch, #running-req: 3, #token: 100, token usage: 0.10, "
        "cuda graph: True, gen throughput (token/s): 90.00, #queue-req: 0\n"
        "terminate called after throwing an instance of 'c10::DistBackendError'\n"
        "  what():  [PG 3 Rank 5] Process group watchdog thread terminated with exception: [Rank 5] "
        "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9141, OpType=_ALLGATHER_BASE, "
        "Timeout(ms)=600000) ran for 600020 milliseconds before timing out.\n"
        "Exception raised from checkTimeout at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:609 "
        "(most recent call first):\n"
        "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f3b6d41df86 in libc10.so)\n"
        "frame #1: <unknown function> + 0xd6df4 (0x7f3bca9d5df4 in /usr/lib/x86_64-linux-gnu/libstdc++.so.6)\n"
    )
    store = Store.open(tmp_path / "pm.duckdb")
    summary = ingest_paths(store, [str(log)], IngestOptions(zone=get_zone("UTC"), strict=True))
    assert summary.files[0].parse_issues == 0
    (exc,) = store.fetchall("SELECT message FROM server_events WHERE kind = 'exception'")
    assert exc[0].startswith("c10::DistBackendError: [PG 3 Rank 5] Process group watchdog")
    result = rebuild(store)
    (inc,) = result.incidents
    assert inc.cause == "crash" and "aborted in C++" in inc.cause_explanation
    (rec,) = [r for r in result.recommendations[inc.incident_id] if r.rule == "server_error"]
    assert rec.title == "The server hung until NCCL's watchdog ended it"
    store.close()


def test_a_run_killed_while_loading_counts_the_outage_from_the_stop_that_started_it() -> None:
    """`systemctl restart` stopped the serving run at -240 s; the new run died loading at 0. The
    service was out from the stop, not from the kill — unless a death came between (then that
    death began the outage: a restart loop's later runs)."""
    from postmortem.analysis.facts import IncidentFacts, _stopped_to_start
    from postmortem.analysis.model import Incident
    from postmortem.analysis.timeline import Timeline, TimelineEvent

    inc = Incident(1, "h", T, "a.service", "host_oom", 0.97)
    inc.killed_load = load("a.service", -235, None)
    tl = Timeline(kill_ts=T, start=T - timedelta(minutes=30), end=T + timedelta(minutes=30), bucket_s=30)
    stop = TimelineEvent(
        T - timedelta(seconds=240), "systemd", "a.service", "stopping", "Stopping a.service...", 2, 7
    )
    tl.events = [stop]
    facts = IncidentFacts(incident=inc, timeline=tl, offsets=[])
    _stopped_to_start(facts)
    assert (facts.stop_ts, facts.stop_at, facts.stop_restarted) == (stop.ts, (2, 7), True)
    died = TimelineEvent(
        T - timedelta(seconds=238), "systemd", "a.service", "main_exited", "Main process exited", 2, 8
    )
    tl.events = [stop, died]
    later = IncidentFacts(incident=inc, timeline=tl, offsets=[])
    _stopped_to_start(later)
    assert later.stop_ts is None
    inc.killed_load = load("a.service", -235, -100)  # it was serving when killed: no such stop
    served = IncidentFacts(incident=inc, timeline=Timeline(T, T, T, 30), offsets=[])
    served.timeline.events = [stop]
    _stopped_to_start(served)
    assert served.stop_ts is None


def test_a_memory_kill_while_loading_is_not_advised_as_growth_under_load() -> None:
    from postmortem.analysis.facts import GpuRelease, IncidentFacts
    from postmortem.analysis.model import Incident
    from postmortem.analysis.rules import explain
    from postmortem.analysis.timeline import Timeline

    inc = Incident(1, "h", T, "a.service", "host_oom", 0.97, killer="kernel")
    inc.killed_load = load("a.service", -240, None)
    tl = Timeline(kill_ts=T, start=T - timedelta(minutes=30), end=T + timedelta(minutes=30), bucket_s=30)
    facts = IncidentFacts(incident=inc, timeline=tl, offsets=[])
    facts.gpu_release = [GpuRelease("GPU 0", 38_000, 0, 4.0, True, None)]  # a GPU server
    rec = explain("host_ram_not_gpu", facts)
    assert rec is not None and "still loading" in rec.detail and "queued and retracted" not in rec.detail
    assert rec.action == "Find what a.service holds in host memory while it loads before starting it again"
    inc.killed_load = load("a.service", -240, -100)  # serving when killed
    rec = explain("host_ram_not_gpu", facts)
    assert rec is not None and "queued and retracted" in rec.detail
    assert rec.action == "Find what grows in a.service's host memory under load before starting it again"


def test_the_limit_advice_points_at_a_queue_advice_only_when_there_is_one() -> None:
    from postmortem.analysis.facts import IncidentFacts
    from postmortem.analysis.model import Incident
    from postmortem.analysis.rules import explain
    from postmortem.analysis.timeline import Timeline

    inc = Incident(1, "h", T, "a.service", "cgroup_oom", 0.97, killer="kernel")
    inc.memcg_limit_kb = 256 * 1024 * 1024
    inc.killed_load = load("a.service", -240, None)
    tl = Timeline(kill_ts=T, start=T - timedelta(minutes=30), end=T + timedelta(minutes=30), bucket_s=30)
    facts = IncidentFacts(incident=inc, timeline=tl, offsets=[])
    facts.host_avail_end_mib = 1_800_000
    rec = explain("unit_memory_limits", facts)
    assert rec is not None and "(above)" not in rec.detail and "still loading" in rec.detail


def test_a_servers_dying_words_are_not_a_sign_of_life() -> None:
    """Hung five minutes after an Xid, the server's last words were its watchdog's: the last sign
    of life is its last batch line, not the watchdog line in the second of the kill."""
    from postmortem.query import run_named_dicts

    store = Store.memory()
    store.execute(
        "INSERT INTO server_stats (source_id, line_no, ts, unit, phase, running_req, queue_req, engine) "
        "VALUES (1, 1, ?, 'a.service', 'decode', 42, 0, 'sglang')",
        [T - timedelta(seconds=302)],
    )
    for line, kind in ((2, "watchdog"), (3, "sigquit")):
        store.execute(
            "INSERT INTO server_events (source_id, line_no, ts, unit, kind, message, engine) VALUES (1, ?, ?, 'a.service', ?, 'x', 'sglang')",
            [line, T, kind],
        )
    (row,) = run_named_dicts(
        store,
        "last_activity_before",
        {"unit": "a.service", "source": None, "before": T, "since": None, "host": None},
    )
    assert row["ts"] == T - timedelta(seconds=302)
    store.close()


@pytest.mark.parametrize("final_sigkill", [True, False], ids=["stuck", "left-running"])
def test_gpu_memory_held_by_processes_systemd_left_names_them(final_sigkill: bool) -> None:
    """Processes that outlived systemd's final SIGKILL are stuck in the kernel (a reset or a
    reboot); ones systemd never signalled (KillMode=process: 'remains running', 'left-over' at the
    next start) are ordinary orphans — kill them, and fix KillMode= — not 'only a reboot'."""
    from postmortem.analysis.facts import GpuRelease, IncidentFacts
    from postmortem.analysis.model import Incident
    from postmortem.analysis.rules import explain
    from postmortem.analysis.summary import summarise
    from postmortem.analysis.timeline import Timeline, TimelineEvent

    inc = Incident(1, "h", T, "sglang-a.service", "gpu_fault", 0.85)
    tl = Timeline(kill_ts=T, start=T - timedelta(minutes=30), end=T + timedelta(minutes=30), bucket_s=30)
    unit = "sglang-a.service"
    tl.events = [
        TimelineEvent(
            T + timedelta(seconds=180), "systemd", unit, "left_running",
            f"{unit}: Unit process 31878 (sglang::schedul) remains running after unit stopped.", 2, 110,
        ),
        TimelineEvent(
            T + timedelta(seconds=200), "systemd", unit, "left_over",
            f"{unit}: Found left-over process 31878 (sglang::schedul) in control group while starting unit. Ignoring.",
            2, 120,
        ),
    ]  # fmt: skip
    if final_sigkill:
        tl.events.insert(
            1,
            TimelineEvent(
                T + timedelta(seconds=181), "systemd", unit, "left_running",
                f"{unit}: Processes still around after final SIGKILL. Entering failed mode.", 2, 111,
            ),
        )  # fmt: skip
    facts = IncidentFacts(incident=inc, timeline=tl, offsets=[])
    facts.gpu_release = [GpuRelease("GPU 2", 76530, 76530, None, False, None)]
    rec = explain("verify_gpu_freed", facts)
    assert rec is not None and [(r.source_id, r.line_no) for r in rec.evidence] == [(2, 110)]
    assert rec.detail.count("31878") == 1  # the same process reported twice is named once
    if final_sigkill:
        assert (
            "systemd could not end pid 31878 (sglang::schedul): they outlived its final SIGKILL" in rec.detail
        )
        assert "KillMode" not in rec.detail
    else:
        assert "systemd left pid 31878 (sglang::schedul) running when the unit stopped" in rec.detail
        assert "the restarts found them still in the unit's cgroup" in rec.detail
        assert "KillMode=control-group" in rec.detail and "they outlived" not in rec.detail
    summary = summarise(facts, UTC)
    how = "outlived systemd's final SIGKILL (stuck in the kernel)" if final_sigkill else "stayed running"
    assert f"GPU memory was left behind: 1 of its processes (pids 31878) {how}" in summary
    # no load of the unit failed here: nothing says the restart that found them failed
    assert "a restart found them still in its cgroup" in summary and "failed" not in summary


def test_hung_tasks_are_in_the_timeline_once_for_all(cli: Any, tmp_path: Path) -> None:
    """The kernel's hung-task watchdog is the evidence of a GPU hang: its first warning is a
    timeline row, and the other tasks it names (eight ranks, warned every two minutes, in the
    journal and in dmesg alike) are counted on that row rather than filling the table."""
    lines = [
        "2025-06-11T03:12:44+0000 gpu1 kernel: NVRM: Xid (PCI:0000:9a:00): 79, pid=31880, "
        "name=sglang::schedul, GPU has fallen off the bus."
    ]
    for minute in (15, 17):
        for rank in range(3):
            lines.append(
                f"2025-06-11T03:{minute}:0{rank}+0000 gpu1 kernel: INFO: task python3:{31880 + rank} "
                f"blocked for more than {122 if minute == 15 else 245} seconds."
            )
            lines.append(
                f"2025-06-11T03:{minute}:0{rank}+0000 gpu1 kernel:       Tainted: P           OE      "
                "6.8.0-45-generic #45-Ubuntu"
            )
    lines += [
        "2025-06-11T03:17:45+0000 gpu1 systemd[1]: llm.service: Main process exited, code=killed, status=9/KILL",
        "2025-06-11T03:17:45+0000 gpu1 systemd[1]: llm.service: Failed with result 'signal'.",
    ]
    text = _journal_report(cli, tmp_path, lines)
    full = text.split("## E. Full timeline", 1)[1].split("\n## ", 1)[0]
    rows = [ln for ln in full.splitlines() if "blocked for more than" in ln]
    assert len(rows) == 1, rows
    assert (
        "| 2025-06-11 03:15:00 | kernel | INFO: task python3:31880 blocked for more than 122 seconds."
        in rows[0]
    )
    body = text.split("\n# Appendix", 1)[0]
    assert len([ln for ln in body.splitlines() if "blocked for more than" in ln]) == 1
    assert "(2 more tasks reported blocked by 03:17:02 UTC)" in rows[0]
    assert "journal.txt:2 " in rows[0] or rows[0].rstrip().endswith("journal.txt:2 |")


def _two_servers_on_one_host(tmp_path: Path, *, batch_base: int) -> Path:
    """sglang-chat on GPUs 0–3 (serving throughout), sglang-batch on GPUs ``batch_base``… (by its
    server_args); batch dies of a CUDA OOM at 16:21:07, nvidia-smi sampling from 16:00 only
    (after both loads began): 4–7 empty two seconds later, chat's schedulers stay on 0–3."""
    import json

    logs = tmp_path / "logs"
    logs.mkdir()
    t0 = datetime(2025, 6, 14, 10, 49, 4, tzinfo=UTC)
    entries = []

    def journal(ts: datetime, unit: str, pid: int, msg: str, ident: str = "python3") -> None:
        us = str(int(ts.timestamp() * 1_000_000))
        entries.append(
            {
                "__REALTIME_TIMESTAMP": us,
                "_HOSTNAME": "h100-pod3",
                "_SYSTEMD_UNIT": unit if ident != "systemd" else "init.scope",
                "SYSLOG_IDENTIFIER": ident,
                "_PID": str(pid),
                "MESSAGE": msg,
            }
        )

    def args(port: int, base: int) -> str:
        return (
            f"server_args=ServerArgs(model_path='/models/m{port}', tp_size=4, pp_size=1, dp_size=1, "
            f"port={port}, base_gpu_id={base}, gpu_id_step=1, mem_fraction_static=0.92)"
        )

    journal(
        t0 - timedelta(hours=3),
        "sglang-chat.service",
        51200,
        f"[{t0 - timedelta(hours=3):%Y-%m-%d %H:%M:%S}] {args(30000, 0)}",
    )
    journal(t0, "sglang-batch.service", 88410, f"[{t0:%Y-%m-%d %H:%M:%S}] {args(30001, batch_base)}")
    ready = t0 + timedelta(seconds=120)
    journal(
        ready,
        "sglang-batch.service",
        88410,
        f"[{ready:%Y-%m-%d %H:%M:%S}] The server is fired up and ready to roll!",
    )
    oom = datetime(2025, 6, 14, 16, 21, 7, tzinfo=UTC)
    journal(
        oom,
        "sglang-batch.service",
        88410,
        f"[{oom:%Y-%m-%d %H:%M:%S} TP2] Scheduler hit an exception: torch.OutOfMemoryError: CUDA out of memory. "
        "Tried to allocate 2.32 GiB. GPU 6 has a total capacity of 79.19 GiB of which 1.43 GiB is free.",
    )
    dead = oom + timedelta(seconds=1)
    journal(dead, "", 1, "sglang-batch.service: Main process exited, code=killed, status=9/KILL", "systemd")
    journal(dead, "", 1, "sglang-batch.service: Failed with result 'signal'.", "systemd")
    (logs / "journal.json").write_text("".join(json.dumps(e) + "\n" for e in entries))

    gpu = ["timestamp, index, uuid, pci.bus_id, memory.total [MiB], memory.used [MiB]"]
    apps = ["timestamp, gpu_uuid, gpu_bus_id, pid, process_name, used_gpu_memory [MiB]"]
    start = datetime(2025, 6, 14, 16, 0, 0, tzinfo=UTC)
    for s in range(0, 30 * 60, 10):
        ts = start + timedelta(seconds=s)
        stamp = f"{ts:%Y/%m/%d %H:%M:%S}.000"
        for i in range(8):
            bus = f"00000000:{0x18 + i:02X}:00.0"
            batch_gpu = batch_base <= i < batch_base + 4
            used = 0 if batch_gpu and ts > dead else 79000 if batch_gpu else 71000
            gpu.append(f"{stamp}, {i}, GPU-{i:08x}-0000-0000-0000-000000000000, {bus}, 81559 MiB, {used} MiB")
            if not batch_gpu:
                apps.append(
                    f"{stamp}, GPU-{i:08x}-0000-0000-0000-000000000000, {bus}, {51260 + i}, sglang::scheduler_TP{i}, 70500 MiB"
                )
            elif ts <= dead:
                apps.append(
                    f"{stamp}, GPU-{i:08x}-0000-0000-0000-000000000000, {bus}, {88470 + i}, sglang::scheduler_TP{i - batch_base}, 78500 MiB"
                )
    (logs / "nvidia-smi-gpu.csv").write_text("\n".join(gpu) + "\n")
    (logs / "nvidia-smi-apps.csv").write_text("\n".join(apps) + "\n")
    return logs


def _batch_report(cli: Any, tmp_path: Path, logs: Path) -> str:
    """``build`` over ``logs``: the text of sglang-batch's report."""
    out = tmp_path / "reports"
    r = cli("build", "--logs", logs, "--db", tmp_path / "pm.duckdb", "--out", out, "--tz", "UTC")
    assert r.code == 0, r
    (report,) = list(out.glob("*sglang-batch*.md"))
    return report.read_text()


def test_another_servers_gpus_are_not_the_killed_ones(cli: Any, tmp_path: Path) -> None:
    """Two servers on one host: the healthy one's processes on its own GPUs are not memory the
    killed one left behind, and the GPU figures are the killed server's GPUs alone (its
    server_args name them, and nvidia-smi saw exactly those freed at the death)."""
    logs = _two_servers_on_one_host(tmp_path, batch_base=4)
    text = _batch_report(cli, tmp_path, logs)
    assert "left behind" not in text and "51260" not in text
    assert "GPU memory released on sglang-batch.service's GPUs 4–7 (nvidia-smi)" in text
    assert "GPU memory (busiest of its GPUs 4–7): 77.1 GiB" in text
    # nvidia-smi began 21 minutes into the window: the first figure is said to be its first samples'
    assert "77.1 GiB in the 30 s from 15:59:38 UTC (nvidia-smi's first samples in the 30 minutes" in text
    assert "ran on GPUs 4–7 of the host's 8 (its arguments, and nvidia-smi saw their memory freed" in text
    assert "the CUDA OOM was an allocation outside that pool" in text
    # the OOM itself: its rank, GPU and sizes, and the settings that decide that headroom
    assert (
        "**Leave the server GPU headroom for its batches** (high) — TP2 on GPU 6 asked for 2.32 GiB "
        "with 1.43 GiB free while serving" in text
    )
    assert "--mem-fraction-static (configured 0.92; try 0.89)" in text
    # the timeline command reads the same GPUs as the report: four of them, not all eight
    import json

    tl = cli("timeline", "1", "--db", tmp_path / "pm.duckdb", "--format", "json")
    sums = [b["gpu_used_mib_sum"] for b in json.loads(tl.out)["buckets"] if b.get("gpu_used_mib_sum")]
    assert sums and max(sums) == 4 * 79000, max(sums)


def test_gpus_renumbered_by_cuda_visible_devices_are_the_ones_freed(cli: Any, tmp_path: Path) -> None:
    """server_args say GPUs 0–3 but nvidia-smi saw 4–7 freed at the death (CUDA_VISIBLE_DEVICES
    or docker --gpus renumber what a server sees): as many GPUs as it takes fell empty, so those
    are its — the healthy server on 0–3 is still not taken for memory left behind."""
    logs = _two_servers_on_one_host(tmp_path, batch_base=4)
    text = (logs / "journal.json").read_text()
    (logs / "journal.json").write_text(text.replace("port=30001, base_gpu_id=4", "port=30001, base_gpu_id=0"))
    text = _batch_report(cli, tmp_path, logs)
    assert "left behind" not in text and "51260" not in text
    assert "ran on GPUs 4–7 of the host's 8 (nvidia-smi saw exactly 4 GPUs' memory freed" in text


def test_without_server_args_no_other_servers_process_is_claimed(cli: Any, tmp_path: Path) -> None:
    """No server_args to place the server and an nvidia-smi loop started long after both servers
    loaded: every process is 'new' to it, so none is claimed as the killed server's — the other
    server's are not reported as memory left behind."""
    logs = _two_servers_on_one_host(tmp_path, batch_base=4)
    lines = [ln for ln in (logs / "journal.json").read_text().splitlines() if "server_args" not in ln]
    (logs / "journal.json").write_text("\n".join(lines) + "\n")
    text = _batch_report(cli, tmp_path, logs)
    assert "left behind" not in text and "51260" not in text


def test_a_systemd_oomd_kill_names_its_rule_candidates_and_settings(cli: Any, tmp_path: Path) -> None:
    """systemd-oomd kills a cgroup, not a process: no made-up victim ('The kernel killed None'),
    its line is oomd's in the timeline (not the kernel's), the summary gives the rule that fired,
    and the advice names its candidates and its own settings, not a unit memory limit."""
    out = tmp_path / "reports"
    journal = REPO / "tests" / "data" / "journal_short" / "oomd_kill.log"
    r = cli("build", "--logs", journal, "--db", tmp_path / "pm.duckdb", "--out", out, "--tz", "UTC")
    assert r.code == 0, r
    (report,) = [p for p in out.glob("*sglang-llama*.md")]
    text = report.read_text()
    assert "None" not in text and "The kernel killed" not in text and "Chosen by the kernel" not in text
    assert (
        "systemd-oomd killed every process of /system.slice/sglang-llama.service due to memory pressure "
        "for /system.slice being 63.18% &gt; 50.00% for &gt; 20s with reclaim activity." in text
    )
    assert "| 2025-06-03 11:47:52 | systemd-oomd | Killed /system.slice/sglang-llama.service" in text
    assert (
        "systemd-oomd's top candidates were /system.slice/sglang-llama.service (402.7G), "
        "/system.slice/embed-batch.service (96.1G)" in text
    )
    assert "ManagedOOMPreference=avoid" in text and "the unit's memory limit" not in text
    # what the unit itself held, from systemd's account of the run at its end
    assert (
        "- The unit's memory peak over the run that was killed (systemd's `Consumed` line at its end): "
        "402.7 GiB, and 7.8 GiB of swap." in text
    )


@pytest.mark.parametrize("same_name", [True, False])
def test_a_recovery_from_another_checkpoint_says_whether_clients_see_another_model(same_name: bool) -> None:
    """An FP8 copy served under the same name is not 'another model' to the clients."""
    from postmortem.analysis.facts import IncidentFacts
    from postmortem.analysis.model import Incident, Load
    from postmortem.analysis.summary import summarise
    from postmortem.analysis.timeline import Timeline

    inc = Incident(1, "h", T, "a.service", "oomd", 0.9)
    inc.killed_load = Load(
        1,
        "h",
        "a.service",
        T - timedelta(hours=3),
        T - timedelta(hours=2),
        600.0,
        "killed",
        "/m/L70",
        None,
        30000,
    )
    inc.recovery_load = Load(
        2,
        "h",
        "b.service",
        T + timedelta(seconds=140),
        T + timedelta(seconds=250),
        110.0,
        "ready",
        "/m/L70-FP8",
        None,
        30000,
    )
    inc.recovery_unit, inc.recovered_ts, inc.downtime_s = "b.service", T + timedelta(seconds=250), 250.0
    tl = Timeline(kill_ts=T, start=T - timedelta(minutes=30), end=T + timedelta(minutes=30), bucket_s=30)
    facts = IncidentFacts(incident=inc, timeline=tl, offsets=[])
    facts.config = {"served_model_name": "llama-70b"}
    facts.recovery_config = {"served_model_name": "llama-70b" if same_name else "llama-70b-fp8"}
    text = summarise(facts, UTC)
    if same_name:
        assert (
            "It loads another checkpoint (/m/L70-FP8, not /m/L70) under the same served model name (llama-70b)."
            in text
        )
    else:
        assert "It serves another model (/m/L70-FP8, not /m/L70)." in text


def test_the_start_that_came_back_is_not_called_the_first(cli: Any, tmp_path: Path) -> None:
    """A unit that failed two automatic restarts before the third came back: 'Kill → started'
    is the third start's, and says that the two before it failed."""
    u = "sglang.service"
    lines = [
        f"2025-06-18T12:00:00+0000 h systemd[1]: Starting {u} - LLM...",
        f"2025-06-18T12:00:00+0000 h systemd[1]: Started {u} - LLM.",
        "2025-06-18T12:01:00+0000 h sglang[100]: [2025-06-18 12:01:00] The server is fired up and ready to roll!",
        f"2025-06-18T14:02:37+0000 h systemd[1]: {u}: Main process exited, code=killed, status=9/KILL",
        f"2025-06-18T14:02:37+0000 h systemd[1]: {u}: Failed with result 'signal'.",
    ]
    t = 14 * 3600 + 3 * 60 + 7
    for n in (1, 2, 3):
        hh, mm, ss = t // 3600, t // 60 % 60, t % 60
        at = f"2025-06-18T{hh:02d}:{mm:02d}:{ss:02d}+0000"
        lines += [
            f"{at} h systemd[1]: {u}: Scheduled restart job, restart counter is at {n}.",
            f"{at} h systemd[1]: Starting {u} - LLM...",
            f"{at} h systemd[1]: Started {u} - LLM.",
            f"{at} h sglang[{200 + n}]: [{at[:10]} {at[11:19]}] server_args=ServerArgs(model_path='/m', "
            "tp_size=8, port=30000)",
        ]
        if n < 3:
            end = t + 20
            at_end = f"2025-06-18T{end // 3600:02d}:{end // 60 % 60:02d}:{end % 60:02d}+0000"
            lines += [
                f"{at_end} h systemd[1]: {u}: Main process exited, code=exited, status=1/FAILURE",
                f"{at_end} h systemd[1]: {u}: Failed with result 'exit-code'.",
            ]
        t += 40
    lines.append(
        "2025-06-18T14:05:00+0000 h sglang[203]: [2025-06-18 14:05:00] The server is fired up and ready to roll!"
    )
    journal = tmp_path / "journal.txt"
    journal.write_text("\n".join(lines) + "\n")
    out = tmp_path / "reports"
    r = cli("build", "--logs", journal, "--db", tmp_path / "pm.duckdb", "--out", out, "--tz", "UTC")
    assert r.code == 0, r
    text = next(p for p in out.glob("*sglang.service.md")).read_text()
    assert (
        f"| Kill → {u} started | 1 min 50 s (the start that came back; 2 restarts failed before it, the first "
        "scheduled 30 s after the kill) |" in text
    ), [ln for ln in text.splitlines() if "Kill →" in ln]


def test_a_whole_second_death_report_follows_the_kill_of_its_second(cli: Any, tmp_path: Path) -> None:
    """SGLang stamps whole seconds: its 'Rank 0 scheduler is dead' of 18:04:19 was written at
    some instant of that second, after the kernel's kill at 18:04:19.604 that it reports — the
    timeline lists it after the kill, not before (as 18:04:19.000 would). A line of that second
    that is no death report (the last batch line) keeps its place before the kill."""
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "journal.txt").write_text(
        "2025-06-03T18:04:19.604211+00:00 gpu1 kernel: Out of memory: Killed process 53213 (sglang::schedul) "
        "total-vm:285017324kB, anon-rss:79572404kB, file-rss:757768kB, shmem-rss:1048576kB, UID:1001 "
        "pgtables:167968kB oom_score_adj:0\n"
        "2025-06-03T18:04:20.120000+00:00 gpu1 systemd[1]: sglang-llm.service: Main process exited, code=killed, "
        "status=9/KILL\n"
        "2025-06-03T18:04:20.130000+00:00 gpu1 systemd[1]: sglang-llm.service: Failed with result 'oom-kill'.\n"
    )
    (logs / "sglang-llm.log").write_text(
        "[2025-06-03 18:00:00] server_args=ServerArgs(model_path='/m', tp_size=1, port=30000)\n"
        "[2025-06-03 18:02:00] The server is fired up and ready to roll!\n"
        "[2025-06-03 18:04:19 TP0] Decode batch, #running-req: 3, #token: 100, token usage: 0.10, "
        "cuda graph: True, gen throughput (token/s): 90.00, #queue-req: 0\n"
        "[2025-06-03 18:04:19] Rank 0 scheduler is dead. Please check if there are relevant logs.\n"
        "[2025-06-03 18:04:19] Exit code: -9\n"
    )
    out = tmp_path / "reports"
    r = cli("build", "--logs", logs, "--db", tmp_path / "pm.duckdb", "--out", out, "--tz", "UTC")
    assert r.code == 0, r
    (report,) = [p for p in out.glob("*.md") if p.name != "index.md"]
    timeline = report.read_text().split("## E. Full timeline", 1)[1].split("\n## ", 1)[0]
    events = [ln.split(" | ")[2] for ln in timeline.splitlines() if ln.startswith("| 2025-06-03 18:04:")]
    assert [e.split(":")[0].split(" (")[0] for e in events] == [
        "sglang-llm.service",  # the last batch line before the kill
        "Out of memory",
        "sglang-llm.service",  # Rank 0 scheduler is dead
        "sglang-llm.service",  # systemd: main process exited
        "sglang-llm.service",
    ], events
    assert "last batch line" in events[0] and "scheduler is dead" in events[2], events


def test_a_faulted_gpu_that_nvidia_smi_stopped_listing_is_named(tmp_path: Path) -> None:
    """After an Xid 79 the GPU falls off the bus: nvidia-smi lists the others and not it. The
    advice says when its rows stopped while the others went on."""
    from postmortem.analysis import rebuild

    journal = tmp_path / "journal.txt"
    journal.write_text(
        "2025-06-11T03:12:44+0000 gpu1 kernel: NVRM: Xid (PCI:0000:9a:00): 79, pid=31880, "
        "name=sglang::schedul, GPU has fallen off the bus.\n"
        "2025-06-11T03:17:45+0000 gpu1 systemd[1]: llm.service: Main process exited, code=killed, status=9/KILL\n"
    )
    rows = ["timestamp, index, pci.bus_id, memory.total [MiB], memory.used [MiB]"]
    for s in range(0, 20 * 60, 30):
        ts = datetime(2025, 6, 11, 3, 5, tzinfo=UTC) + timedelta(seconds=s)
        for i, bus in enumerate(("00000000:9A:00.0", "00000000:9B:00.0")):
            if i == 0 and ts > datetime(2025, 6, 11, 3, 12, 50, tzinfo=UTC):
                continue  # gone from the bus
            rows.append(f"{ts:%Y/%m/%d %H:%M:%S}.000, {i}, {bus}, 81559 MiB, 70000 MiB")
    csv = tmp_path / "nvidia-smi-gpu.csv"
    csv.write_text("\n".join(rows) + "\n")
    store = Store.open(tmp_path / "pm.duckdb")
    ingest_paths(store, [str(journal), str(csv)], IngestOptions(zone=get_zone("UTC"), strict=True))
    result = rebuild(store)
    (inc,) = result.incidents
    rules = {r.rule: r for r in result.recommendations[inc.incident_id]}
    assert (
        "nvidia-smi stopped listing it after 03:12:30 UTC while the other GPUs went on until 03:24:30 UTC"
        in rules["gpu_fault"].detail
    )
    store.close()


def test_the_threads_setting_comes_back_after_the_gathering(tmp_path: Path) -> None:
    """The gathering runs DuckDB on a share of the CPUs per thread; the store's setting is what
    it was afterwards, also when the block fails."""
    store = Store.memory()
    try:
        store.execute("SET threads = 3")
        with store.threads(1):
            assert store.fetchall("SELECT current_setting('threads')") == [(1,)]

        def fail() -> None:
            with store.threads(0):
                assert store.fetchall("SELECT current_setting('threads')") == [(1,)]
                raise ZeroDivisionError

        with pytest.raises(ZeroDivisionError):
            fail()
        assert store.fetchall("SELECT current_setting('threads')") == [(3,)]
    finally:
        store.close()


def test_a_guessed_recovery_of_no_known_unit_is_not_called_none() -> None:
    """The first server ready after the kill, whose unit no source names, is taken as the
    recovery: the Summary said "(None is taken as the recovery …)"."""
    from postmortem.analysis.facts import IncidentFacts
    from postmortem.analysis.model import Incident
    from postmortem.analysis.summary import summarise
    from postmortem.analysis.timeline import Timeline

    back = load("x", 16, 96)
    back.unit = None
    inc = Incident(1, "h", T, "vllm.service", "host_oom", 0.97)
    inc.recovered_ts, inc.recovery_load, inc.recovery_guessed = back.ready_ts, back, True
    tl = Timeline(kill_ts=T, start=T - timedelta(minutes=30), end=T + timedelta(minutes=30), bucket_s=30)
    text = summarise(IncidentFacts(incident=inc, timeline=tl, offsets=[]))
    assert "None" not in text
    assert "(it is taken as the recovery: the first server ready on this host after the kill)" in text


def _serving_facts(last_running: int | None) -> Any:
    """A run that served until a restart 10 minutes before the end, then a start that failed
    loading (its own buckets carry no requests)."""
    from postmortem.analysis.facts import IncidentFacts, _summarise_timeline
    from postmortem.analysis.model import Incident
    from postmortem.analysis.timeline import Bucket, Timeline

    inc = Incident(1, "h", T, "a.service", "gpu_oom", 0.9)
    start = T - timedelta(minutes=10)
    inc.killed_load = Load(1, "h", "a.service", start, None, None, "failed", None, None, None)
    tl = Timeline(kill_ts=T, start=T - timedelta(minutes=30), end=T + timedelta(minutes=5), bucket_s=60)
    for m in range(30, 0, -1):
        b = Bucket(ts=T - timedelta(minutes=m))
        if b.ts < start:  # the run before: serving, its queue full
            b.running_req, b.queue_req, b.token_usage = 40 + m, 100, 0.9
        tl.buckets.append(b)
    facts = IncidentFacts(incident=inc, timeline=tl, offsets=[])
    if last_running is not None:
        facts.last_batch = {"running_req": last_running, "queue_req": 0}
    _summarise_timeline(facts)
    return facts


def test_a_failed_starts_serving_signals_are_its_own_not_the_run_befores() -> None:
    """A start that failed served nothing: the Trigger's "with N requests running", the memory
    notes and the queue rule must not take the previous run's requests as its own."""
    facts = _serving_facts(None)
    assert (facts.running_first, facts.running_last) == (None, None)
    assert facts.queue_max is None and facts.token_usage_max is None


def test_the_running_requests_at_the_end_are_the_last_statistics_lines() -> None:
    """Impact quotes the run's last statistics line; the Trigger's count at the end is the same."""
    facts = _serving_facts(7)
    assert facts.running_last == 7 and facts.running_first is None


def test_gaps_are_told_before_the_runs_own_end() -> None:
    """A source silent before a crash or a failed start: "before the crash", not "the kill"."""
    from postmortem.analysis.timeline import find_gaps

    cov = [
        {"series": "host_memory", "last_ts": None, "first_ts": None, "samples": 0},
        {
            "series": "server_stats",
            "last_ts": T - timedelta(seconds=300),
            "first_ts": T - timedelta(seconds=900),
            "samples": 61,
        },
    ]
    words = [g.detail for g in find_gaps(cov, T, 1800, "failure")]
    assert words == [
        "no data in the window before the failure",
        "last sample 5 min before the failure (usual interval 10 s)",
    ]


def test_a_source_never_ingested_has_no_gap_and_a_busy_one_no_zero_interval() -> None:
    """No journal in the data is no gap in the journal ("journal: no data in the window" read as
    if one had been given); a journal writing several lines a second, silent for 264 s, said
    "usual interval 0 s" (seed 161803, nights 11 and 6)."""
    from postmortem.analysis.timeline import find_gaps

    cov = [
        {"series": "journal", "last_ts": None, "first_ts": None, "samples": 0, "held": False},
        {
            "series": "host_memory",
            "last_ts": T - timedelta(seconds=264),
            "first_ts": T - timedelta(seconds=1500),
            "samples": 5000,
            "held": True,
        },
    ]
    assert [(g.series, g.detail) for g in find_gaps(cov, T, 1800, "kill")] == [
        ("host_memory", "last sample 4 min 24 s before the kill (usual interval under a second)")
    ]


def test_falling_host_memory_is_worded_without_a_double_negative() -> None:
    """Host RAM in use that fell over the window, rising at its end: the rate says which way
    (it read "fell from … -147.0 GiB; -1.1 GiB a minute")."""
    from postmortem.analysis.facts import _summarise_timeline
    from postmortem.report.context.memory import _growth_words

    facts: Any = _facts_with_recovery()
    total = 2_063_588.0
    facts.timeline.host_points = [
        (T - timedelta(minutes=25), total - 1_870_000.0, total),
        (T - timedelta(minutes=1), total - 1_719_000.0, total),
    ]
    _summarise_timeline(facts)
    facts.host_rate_mib_min = -1126.4
    words = _growth_words(facts)
    assert words is not None and "fell from" in words and "; falling 1.1 GiB a minute" in words, words
    facts.host_rate_mib_min = 4096.0
    assert "; rising 4.0 GiB a minute" in (_growth_words(facts) or "")


def _gpu_night(samples: list[tuple[float, int]]) -> Any:
    """A store with GPU 0's used memory at seconds from T (the kill)."""
    from postmortem.store.parts import native

    store = Store.memory()
    for i, (dt, mib) in enumerate(samples):
        store.execute(
            f"INSERT INTO {native(store, 'gpu_samples')} (source_id, line_no, ts, gpu_index, mem_used_mib, mem_total_mib) "
            "VALUES (1, ?, ?, 0, ?, 81559)",
            [i + 1, T + timedelta(seconds=dt), mib],
        )
    return store


@pytest.mark.parametrize(
    ("samples", "next_load_s", "freed", "at_s"),
    [
        # 2,330 MiB of 109,491 left 30 s on (within 5 %): freed then, not "within a second"
        ([(-5, 109_491), (25, 109_491), (30, 2_330)], None, True, 30),
        # an automatic restart began at +5 s and took 9.5 GiB before the next sample: released
        ([(-5, 66_446), (30, 9_734)], 5, True, 30),
        # the same drop with no load begun: not told as released
        ([(-5, 66_446), (30, 9_734)], None, False, None),
        # a load begun, but the memory stayed up: a holder, not a release
        ([(-5, 66_446), (30, 60_000)], 5, False, None),
        # a whole-second sample in the kill's own second shows it freed: after the kill (as
        # before, the GPU read as idle and its release as unknown)
        ([(-10.604211, 67_432), (-0.604211, 1), (9.395789, 1)], None, True, -0.604211),
    ],
)
def test_gpu_memory_is_released_when_a_sample_shows_it(
    samples: list[tuple[float, int]], next_load_s: float | None, freed: bool, at_s: float | None
) -> None:
    """When the memory counts as released, and when: at the first sample that shows it (the
    report said "within a second" when only the 5 % rule held), also when the next load took
    part of the GPU before nvidia-smi's next sample (it said the memory "did not drop")."""
    from postmortem.analysis.facts import _gpus_after_kill
    from postmortem.analysis.model import Incident

    store = _gpu_night(samples)
    inc = Incident(1, None, T, "a.service", "cgroup_oom", 0.9)
    nxt = T + timedelta(seconds=next_load_s) if next_load_s is not None else None
    (row,) = _gpus_after_kill(store, inc, nxt)
    store.close()
    assert row["freed"] is freed
    assert row["freed_ts"] == (T + timedelta(seconds=at_s) if at_s is not None else None)


def test_the_trigger_tells_memory_that_did_not_grow_from_no_samples(tmp_path: Path) -> None:
    """Host memory that fell over the window was told as "no host-memory samples in the 30
    minutes before it", while other sections quoted those samples; a falling rate read
    "-19,968 MiB a minute"."""
    from types import SimpleNamespace

    from postmortem.report.context.story import _trigger
    from postmortem.text.templates import environment

    facts: Any = _facts_with_recovery()
    facts.incident.cause = "host_oom"
    facts.timeline.host_points = [
        (T - timedelta(minutes=25), 150_000.0, 2_063_588.0),
        (T - timedelta(minutes=4), 368_640.0, 2_063_588.0),
    ]
    facts.host_avail_start_mib, facts.host_avail_end_mib = 150_000.0, 368_640.0
    facts.host_rate_mib_min = -19_968.0
    st = _trigger(facts)
    template = environment().get_template("partials/story.md.j2")
    ctx = SimpleNamespace(
        end="kill", memory_figure=None, cause_words="x", cause="host_oom", cause_explanation=""
    )
    rest = {"factors": [], "victim": None, "limit_kb": None, "root_cite": None, "detected_utc": None}
    rest |= {"restart_utc": None, "recovery_how": None, "fallback_gain_s": None}
    rest |= {"detected_what": "", "undated_commands": 0, "restart_cite": ""}
    imp = SimpleNamespace(serving=True, stop_utc="—", downtime="—")
    text = template.render(ctx=ctx, st=SimpleNamespace(**st, **rest), imp=imp)
    trigger = text.split("## Root cause")[0]
    assert "Host memory in use did not grow (it fell by 214 GiB)" in trigger, trigger
    assert "falling 20 GiB a minute" in trigger and "no host-memory samples" not in trigger


def test_a_cuda_ooms_sizes_keep_the_errors_two_decimals() -> None:
    """ "1.4 GiB asked, 1.4 GiB free" hid why the allocation failed (1.42 GiB asked, 1.36 free)."""
    from postmortem.report.context.story import _trigger

    facts: Any = _facts_with_recovery()
    facts.incident.cause = "gpu_oom"
    facts.cuda_oom = {"phase": "runtime", "tried_mib": 1.42 * 1024, "free_mib": 1.36 * 1024}
    st = _trigger(facts)
    assert (st["oom_asked_gib"], st["oom_free_gib"]) == (1.42, 1.36)


def test_the_queues_peak_is_never_below_the_last_lines_queue() -> None:
    """Impact quoted the last statistics line's 270 queued (in the kill's own second, past the
    last whole bucket) while the root cause and the lessons said the queue grew to 268."""
    facts = _serving_facts(7)
    facts.last_batch["queue_req"] = 270
    from postmortem.analysis.facts import _summarise_timeline

    _summarise_timeline(facts)
    assert facts.queue_max == 270


def test_an_oomd_kill_is_memory_pressure_not_ram_run_out() -> None:
    """systemd-oomd kills at a pressure or swap threshold: its Summary said "Host RAM ran out"."""
    from postmortem.analysis.summary import _ran_out

    facts: Any = _facts_with_recovery()
    facts.incident.cause = "oomd"
    assert _ran_out(facts) == {"kind": "pressure"}
    facts.incident.cause = "earlyoom"  # below its threshold: RAM ran low, not out
    assert _ran_out(facts) == {"kind": "low"}
    facts.incident.cause = "host_oom"
    assert _ran_out(facts) == {"kind": "host"}


def test_a_vllm_runs_settings_are_shown_by_vllms_names() -> None:
    """The configuration table showed a vLLM run's gpu_memory_utilization as SGLang's
    mem_fraction_static (the store's columns are SGLang's)."""
    from postmortem.report.context.incident import _config_rows

    rows = _config_rows({"engine": "vllm", "mem_fraction_static": 0.9, "max_running_requests": 256}, str)
    assert rows == {"gpu_memory_utilization": "0.9", "max_num_seqs": "256"}
    rows = _config_rows({"engine": "sglang", "mem_fraction_static": 0.9}, str)
    assert rows == {"mem_fraction_static": "0.9"}


def test_the_default_engine_does_not_follow_import_order() -> None:
    """engines() is in ENGINE_MODULES order whichever engine module was imported first (a test
    importing vLLM's first made its words the default advice for an unknown engine)."""
    import postmortem.engines as e

    saved = dict(e._REGISTRY)
    try:
        e._REGISTRY.clear()
        e._REGISTRY.update({"vllm": saved["vllm"], "sglang": saved["sglang"]})
        assert list(e.engines())[:2] == ["sglang", "vllm"]
    finally:
        e._REGISTRY.clear()
        e._REGISTRY.update(saved)


def test_detection_finds_the_first_operator_command_past_the_timelines_end() -> None:
    """A failed start that never came back: the operator's `systemctl stop` 16 minutes later is
    past the timeline's ten minutes, and Detection said no operator action appears."""
    from types import SimpleNamespace

    from postmortem.query import run_named_dicts
    from postmortem.report.context.story import _detection
    from postmortem.store.parts import native

    store = Store.memory()
    sudo = "ops : TTY=pts/0 ; PWD=/home/ops ; USER=root ; COMMAND=/usr/bin/systemctl {} a.service"
    for i, (dt, verb) in enumerate(((-60, "restart"), (958, "stop"), (4000, "start"))):
        store.execute(
            f"INSERT INTO {native(store, 'journal_entries')} (source_id, line_no, ts, host, ident, message) "
            "VALUES (1, ?, ?, 'h', 'sudo', ?)",
            [i + 1, T + timedelta(seconds=dt), sudo.format(verb)],
        )
    p = {"after": T, "until": T + timedelta(hours=1), "host": "h"}
    (act,) = run_named_dicts(store, "operator_after", p)
    store.close()
    assert act["message"] == "/usr/bin/systemctl stop a.service" and act["line_no"] == 2
    facts: Any = _facts_with_recovery()
    facts.first_operator = act
    sources: Any = SimpleNamespace(cite=lambda sid, line: f"j:{line}")
    got = _detection(facts, sources, str)
    assert (got["detected_after_s"], got["detected_cite"]) == (958.0, "j:2")


def test_a_fallback_systemd_started_by_onfailure_is_said_so() -> None:
    """ "Triggering OnFailure= dependencies." then the fallback's start: systemd started it (the
    report named no starter, and Detection said no operator action)."""
    from postmortem.analysis.timeline import TimelineEvent
    from postmortem.report.context.story import _resolution

    facts: Any = _facts_with_recovery()
    assert _resolution(facts)["on_failure_started"] is False
    facts.timeline.events = [
        TimelineEvent(T + timedelta(seconds=1), "systemd", "a.service", "on_failure", "x", 1, 9)
    ]
    got = _resolution(facts)
    assert got["recovery_how"] == "fallback" and got["on_failure_started"] is True


def test_a_failed_start_tells_the_operator_restart_that_stopped_a_serving_run() -> None:
    """Seed 24680's n37: the operator restarted a unit that was serving 63 requests, and the
    new start failed 7 minutes later. The report dated the outage at the failure and never said
    the restart had stopped a serving run."""
    from postmortem.analysis.facts import _started_by
    from postmortem.store.parts import native

    store = Store.memory()
    cmd = "ops : TTY=pts/0 ; PWD=/home/ops ; USER=root ; COMMAND=/usr/bin/systemctl restart a.service"
    store.execute(
        f"INSERT INTO {native(store, 'journal_entries')} (source_id, line_no, ts, host, ident, message) "
        "VALUES (1, 5, ?, 'h', 'sudo', ?)",
        [T - timedelta(seconds=1), cmd],
    )
    for line, dt, running in ((3, -8, 63), (9, 30, 1)):  # the last line before it, and one after
        store.execute(
            f"INSERT INTO {native(store, 'server_stats')} (source_id, line_no, ts, host, unit, phase, engine, running_req) "
            "VALUES (1, ?, ?, 'h', 'a.service', 'decode', 'sglang', ?)",
            [line, T + timedelta(seconds=dt), running],
        )
    got = _started_by(store, "a.service", T, "h")
    assert got is not None and got["command"] == "/usr/bin/systemctl restart a.service"
    assert got["serving"] == {"ts": T - timedelta(seconds=8), "running_req": 63}
    assert _started_by(store, "b.service", T, "h") is None  # no command named it
    store.close()


def test_a_vllm_workers_startup_lines_fill_its_loads_phases(tmp_path: Path) -> None:
    """vLLM 0.10+ prints the weights and the CUDA graphs from its workers ("(Worker_TP0 pid=…)"):
    their role is the process's, not a model's, and the loads table showed no phase at all."""
    log = tmp_path / "vllm.log"
    log.write_text(
        "INFO 05-06 19:25:10 [api_server.py:1] vLLM API server version 0.10.1\n"
        "(Worker_TP0 pid=7) INFO 05-06 19:25:19 [model_runner.py:1] Starting to load model /m...\n"
        "(Worker_TP0 pid=7) INFO 05-06 19:29:38 [gpu_model_runner.py:1] Model loading took 63.3 GiB and 258.2 seconds\n"
        "(EngineCore_DP0 pid=9) INFO 05-06 19:29:41 [kv_cache_utils.py:1] GPU KV cache size: 528,504 tokens\n"
        "(Worker_TP0 pid=7) INFO 05-06 19:30:43 [model_runner.py:1] Graph capturing finished in 61 secs, took 2.34 GiB\n"
        "(APIServer pid=5) INFO 05-06 19:30:45 [api_server.py:1] Starting vLLM API server 0 on http://0.0.0.0:8000\n"
    )
    store = Store.memory()
    ingest_paths(store, [log], IngestOptions(zone=get_zone("UTC"), zone_given=True, year=2025))
    rebuild(store)
    rows = store.execute("SELECT weight_load_s, cuda_graph_s FROM service_loads").fetchall()
    store.close()
    assert rows and rows[0] == (258.2, 61.0), rows


def test_a_kill_known_to_its_minute_bounds_the_servers_lines_at_the_minutes_end() -> None:
    """dmesg -e/-H dates a kill to its minute, placed at the minute's start: the server's last
    statistics line 37 s into that minute was left out, and the one before it quoted as the
    requests at the kill (seed 135791, n53)."""
    from postmortem.analysis.facts import kill_bound
    from postmortem.analysis.model import Evidence, Incident

    t = datetime(2024, 10, 3, 1, 12, tzinfo=UTC)
    inc = Incident(1, None, t, None, "host_oom", 0.9)
    ev = Evidence("oom_kill", t, 1, 7, "k", None)
    inc.evidence = [ev]
    assert kill_bound(inc, t) == t + timedelta(seconds=0, microseconds=999_999)
    ev.raw["ts_inferred"] = "minute"
    assert kill_bound(inc, t) == t + timedelta(seconds=59, microseconds=999_999)


def test_a_timers_runs_stay_out_of_the_short_timeline(cli: Any, tmp_path: Path) -> None:
    """sysstat's collector, started every ten minutes, filled the short timeline with "Starting
    system activity accounting tool..." (seed 314159, nights 2 and 8); a neighbour started once
    before the kill, and any failure, stay in it. The full timeline keeps every row."""
    lines = []
    for minute in (0, 10, 20, 30):
        lines += [
            f"2025-06-11T03:{minute:02d}:24+0000 gpu1 systemd[1]: Starting system activity accounting tool...",
            f"2025-06-11T03:{minute:02d}:24+0000 gpu1 systemd[1]: sysstat-collect.service: Deactivated successfully.",
            f"2025-06-11T03:{minute:02d}:24+0000 gpu1 systemd[1]: Finished system activity accounting tool.",
        ]
    lines += [
        "2025-06-11T03:31:00+0000 gpu1 systemd[1]: Starting Nightly ETL export...",
        "2025-06-11T03:35:45+0000 gpu1 systemd[1]: llm.service: Main process exited, code=killed, status=9/KILL",
        "2025-06-11T03:35:45+0000 gpu1 systemd[1]: llm.service: Failed with result 'signal'.",
    ]
    text = _journal_report(cli, tmp_path, lines)
    body = text.split("\n# Appendix", 1)[0]
    assert "system activity accounting" not in body
    assert "Starting Nightly ETL export..." in body
    full = text.split("## E. Full timeline", 1)[1]
    assert full.count("Starting system activity accounting tool...") == 3  # (the window's 30 min)


def test_an_earlyoom_victims_resident_memory_is_in_the_report(cli: Any, tmp_path: Path) -> None:
    """earlyoom prints its victim's VmRSS (its whole resident memory): the victims table gave
    "—" for it (the kernel's anon-rss column) and the Root cause no size."""
    lines = [
        "2025-06-11T03:10:00+0000 gpu1 earlyoom[900]: mem avail: 40960 of 2063588 MiB ( 1.98%), swap free:    0 of    0 MiB ( 0.00%)",
        "2025-06-11T03:10:02+0000 gpu1 earlyoom[900]: low memory! at or below SIGTERM limits: mem  2.00%, swap  1.00%",
        '2025-06-11T03:10:02+0000 gpu1 earlyoom[900]: sending SIGTERM to process 4242 uid 0 "sglang::schedul": '
        'oom_score 1134, VmRSS 61234 MiB, cmdline "python3 -m sglang.launch_server"',
        "2025-06-11T03:10:03+0000 gpu1 systemd[1]: llm.service: Main process exited, code=killed, status=15/TERM",
        "2025-06-11T03:10:03+0000 gpu1 systemd[1]: llm.service: Failed with result 'signal'.",
    ]
    text = _journal_report(cli, tmp_path, lines)
    assert "| PID | Name | Resident memory (VmRSS) | Chosen by earlyoom | Evidence |" in text
    assert "| 4242 | `sglang::schedul` | 59.8 GiB | yes |" in text
    assert "(pid 4242, 60 GiB)" in text
    rows = cli(
        "query", "SELECT vm_rss_kb FROM incident_victims", "--db", tmp_path / "pm.duckdb", "--format", "json"
    )
    assert json.loads(rows.out) == [{"vm_rss_kb": 61234 * 1024}]


def _journal_report(cli: Any, tmp_path: Path, lines: list[str]) -> str:
    """The one incident report of a journal of ``lines`` (zone UTC)."""
    journal = tmp_path / "journal.txt"
    journal.write_text("\n".join(lines) + "\n")
    out = tmp_path / "reports"
    r = cli("build", "--logs", journal, "--db", tmp_path / "pm.duckdb", "--out", out, "--tz", "UTC")
    assert r.code == 0, r
    (report,) = [p for p in out.glob("*.md") if p.name != "index.md"]
    return report.read_text()
