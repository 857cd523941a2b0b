"""Each rule's finding, asserted on its data (its words are the templates'; the report tests
and the sample snapshot check those). One test per rule at least: the contract test in
tests/test_contracts.py checks that every registered rule has one here (``test_rule_<name>``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from postmortem.analysis.facts import Consumer, GpuHolder, GpuRelease, IncidentFacts, Reboot, Systemd
from postmortem.analysis.load_stats import load_statistics
from postmortem.analysis.model import Evidence, Incident, Load, Victim
from postmortem.analysis.rules import Finding, explain, rules, run
from postmortem.analysis.timeline import Timeline, TimelineEvent

T = datetime(2025, 5, 25, 20, 17, 19, tzinfo=UTC)


def facts(cause: str = "cgroup_oom", unit: str = "a.service", **kw: Any) -> IncidentFacts:
    inc = Incident(1, "h", T, unit, cause, 0.9, **kw)
    tl = Timeline(kill_ts=T, start=T - timedelta(minutes=30), end=T + timedelta(minutes=30), bucket_s=30)
    return IncidentFacts(incident=inc, timeline=tl, offsets=[])


def load(unit: str, start: float, ready: float | None, spec: str | None = None) -> Load:
    return Load(
        int(start) + 1000,
        "h",
        unit,
        T + timedelta(seconds=start),
        T + timedelta(seconds=ready) if ready is not None else None,
        (ready - start) if ready is not None else None,
        "ready" if ready is not None else "killed",
        "/m",
        spec,
        30000,
        engine="sglang",
    )


def finding(name: str, f: IncidentFacts) -> Finding | None:
    return next((x for x in run(f, only=[name]) if x.rule == name), None)


def test_rule_host_ram_not_gpu_names_what_ran_out() -> None:
    f = facts("cgroup_oom", memcg_usage_kb=1024**3, memcg_limit_kb=1024**3)
    f.host_avail_start_mib, f.host_avail_end_mib, f.host_total_mib = 600_000.0, 500_000.0, 2_000_000.0
    f.gpu_used_start_mib, f.gpu_used_end_mib, f.gpu_total_mib = 130_000.0, 130_000.0, 140_000.0
    f.config = {"engine": "sglang", "model_path": "/m"}
    got = finding("host_ram_not_gpu", f)
    assert got is not None and got.severity == "high"
    assert (got.data["cause"], got.data["noun"], got.data["gpu"], got.data["gpu_full"]) == (
        "cgroup_oom",
        "unit",
        True,
        True,
    )
    g = finding("host_ram_not_gpu", facts("gpu_oom"))
    assert g is not None and g.data == {
        "cause": "gpu_oom",
        "other": None,
        "gpu_holders": False,
        "gpu_headroom": False,
    }
    assert finding("host_ram_not_gpu", facts("signal")) is None


def test_rule_host_ram_not_gpu_names_a_bigger_consumer_in_a_host_oom() -> None:
    f = facts("host_oom", victims=[Victim(7, "python3", T, 10, 1, 1, True)])
    f.consumers = [Consumer("loader", 3, 900_000_000, 0.9), Consumer("python3", 1, 100, 0.1)]
    got = finding("host_ram_not_gpu", f)
    assert got is not None and got.data["other"] == {"name": "loader", "processes": 3, "rss_kb": 900_000_000}
    rec = explain("host_ram_not_gpu", f)
    assert (
        rec is not None
        and rec.action
        == "Cap or move loader, the host's largest memory user, and find what grows in a.service"
    )


def test_rule_host_ram_not_gpu_counts_an_engines_own_workers_as_the_server() -> None:
    # vLLM's TP workers beside its killed engine core are the server itself, not a neighbour
    # to cap ("VLLM::Worker_TP held more host memory than the server: cap it too")
    f = facts("host_oom", victims=[Victim(7, "VLLM::EngineCor", T, 10, 1, 1, True)])
    f.consumers = [
        Consumer("VLLM::Worker_TP", 8, 301 << 20, 0.85),
        Consumer("VLLM::EngineCor", 1, 45 << 20, 0.13),
        Consumer("loader", 2, 9 << 20, 0.02),
    ]
    got = finding("host_ram_not_gpu", f)
    assert got is not None and got.data["other"] is None
    # a neighbour bigger than all the server's processes together is still named
    f.consumers.insert(0, Consumer("loader2", 4, 400 << 20, 0.5))
    got = finding("host_ram_not_gpu", f)
    assert got is not None and got.data["other"] == {"name": "loader2", "processes": 4, "rss_kb": 400 << 20}


def test_rule_bound_queue_carries_the_configured_bounds_and_the_growth() -> None:
    f = facts("cgroup_oom")
    assert finding("bound_queue", f) is None  # no queue
    f.queue_max, f.token_usage_max, f.retractions, f.retracted_reqs = 40, 0.97, 3, 9
    f.config = {
        "engine": "sglang",
        "raw": "ServerArgs(max_queued_requests=100, port=1)",
        "max_running_requests": None,
    }
    f.limits = {"max_running_requests": 512}
    got = finding("bound_queue", f)
    assert got is not None
    assert (got.data["max_queued"], got.data["max_running"], got.data["growth"]) == (
        "100",
        {"configured": None, "effective": 512},
        None,
    )
    f.queue_max = 10
    assert finding("bound_queue", f) is None  # a short queue is not the story


def test_rule_gpu_held_by_another_process_lists_the_holders() -> None:
    f = facts("gpu_oom", killed_load=load("a.service", -100, None))
    f.gpu_holders = [GpuHolder(88001, 118.2, "python3", 2, T - timedelta(minutes=10), (3, 4))]
    got = finding("gpu_held_by_another_process", f)
    assert (
        got is not None and got.data["holders"][0]["pid"] == 88001 and got.data["holders"][0]["before_start"]
    )
    assert [(e.source_id, e.line_no) for e in got.evidence] == [(3, 4)]


def test_rule_speculative_gpu_settings_gives_a_first_step_for_each_setting() -> None:
    f = facts("gpu_oom")
    f.config = {
        "engine": "sglang",
        "speculative_algorithm": "EAGLE3",
        "mem_fraction_static": 0.88,
        "cuda_graph_max_bs": 256,
    }
    got = finding("speculative_gpu_settings", f)
    assert got is not None
    assert (got.data["fraction_try"], got.data["graph_bs_try"], got.data["draft_tokens"]) == (0.85, 128, None)
    f.config = {"engine": "sglang"}
    assert finding("speculative_gpu_settings", f) is None  # no draft model


@pytest.mark.parametrize(("phase", "fires"), [("cuda_graph", True), ("runtime", True), ("weights", False)])
def test_rule_gpu_headroom_only_where_a_batch_or_graph_did_not_fit(phase: str, fires: bool) -> None:
    f = facts("gpu_oom")
    f.cuda_oom = {"phase": phase, "ranks": "TP3", "gpu": 3, "tried_mib": 2048.0, "free_mib": 512.0}
    f.config = {"engine": "sglang", "mem_fraction_static": 0.9}
    got = finding("gpu_headroom", f)
    assert (got is not None) == fires
    if got is not None:
        assert (got.data["ranks"], got.data["gpu"], got.data["fraction_try"]) == ("TP3", 3, 0.87)


def test_rule_fallback_autoregressive_budgets_the_fallbacks_load() -> None:
    rec_load = load("b.service", 100, 700)
    f = facts("cgroup_oom", fallback_unit="b.service", recovery_load=rec_load)
    f.config = {"engine": "sglang", "speculative_algorithm": "EAGLE3"}
    f.recovery_loads = load_statistics(
        [load("b.service", -9000, -8400), load("b.service", -5000, -4420), rec_load]
    )[0]
    got = finding("fallback_autoregressive", f)
    assert got is not None
    assert (got.data["last_s"], got.data["loads"], got.data["median_s"]) == (600.0, 3, 600.0)


def test_rule_unit_memory_limits_weighs_raising_the_limit() -> None:
    f = facts("cgroup_oom", memcg_limit_kb=1024**3)
    f.host_avail_end_mib, f.host_rate_mib_min = 100_000.0, 1000.0
    f.earlier_peaks = [
        {"ts": T - timedelta(hours=2), "memory_peak_bytes": 0.9 * 1024**4, "source_id": 1, "line_no": 5}
    ]
    got = finding("unit_memory_limits", f)
    assert got is not None and got.severity == "medium"
    assert got.data["growth_mib_min"] == 1000.0 and got.data["earlier_peak"]["share"] == pytest.approx(0.9)
    host = finding("unit_memory_limits", facts("host_oom"))
    assert host is not None and host.severity == "high" and host.data["case"] == "host_oom"


def test_rule_unit_memory_limits_tells_a_peak_above_the_limit() -> None:
    """A previous run that peaked above the limit that fired ran under another limit: the words
    are not "close to the limit" at 1417 %."""
    f = facts("cgroup_oom", memcg_limit_kb=31 * 1024**2)
    f.earlier_peaks = [
        {"ts": T - timedelta(hours=2), "memory_peak_bytes": 439 * 1024**3, "source_id": 1, "line_no": 5}
    ]
    rec = explain("unit_memory_limits", f)
    assert rec is not None
    assert "below the previous run's 439 GiB peak" in rec.headline
    assert rec.factor.startswith("The limit was below what the workload used before")
    assert "close to" not in rec.headline + rec.factor + rec.detail


@pytest.mark.parametrize(
    ("systemd", "action", "absent"),
    [
        # EL7 (v219): no MemoryMax= (v231) and no OOMPolicy= (v243)
        (Systemd(219, 219), "Review MemoryLimit= of a.service", ("MemoryMax=", "OOMPolicy=")),
        # v220-v238 wording: before OOMPolicy=; MemoryMax= from v231
        (
            Systemd(None, 238),
            "Review MemoryMax= (MemoryLimit= before systemd 231) of a.service",
            ("OOMPolicy=",),
        ),
        (Systemd(239, 239), "Review MemoryMax= of a.service", ("OOMPolicy=", "MemoryLimit=")),
        (
            Systemd(243, None),
            "Review MemoryMax= and OOMPolicy= of a.service",
            ("MemoryLimit=", "243 and later"),
        ),
        # nothing in the data tells the version
        (
            Systemd(),
            "Review MemoryMax= and OOMPolicy= (systemd 243 and later) of a.service",
            ("MemoryLimit=",),
        ),
    ],
)
def test_rule_unit_memory_limits_names_the_settings_the_hosts_systemd_has(
    systemd: Systemd, action: str, absent: tuple[str, ...]
) -> None:
    f = facts("cgroup_oom", memcg_limit_kb=1024**3)
    f.systemd = systemd
    rec = explain("unit_memory_limits", f)
    assert rec is not None and rec.action == action
    # (the detail names the limit's setting by its cgroup: "MemoryMax= or a container limit")
    words = " ".join((rec.title, rec.headline, rec.summary, rec.action or ""))
    assert not [w for w in absent if w in words]
    assert "OOMPolicy=" not in rec.detail or "OOMPolicy=" not in absent
    host = explain("unit_memory_limits", facts("host_oom"))
    assert host is not None and "MemoryMax=" in host.title
    f = facts("host_oom")
    f.systemd = systemd
    host = explain("unit_memory_limits", f)
    assert host is not None and host.title == f"Put a.service under {systemd.memory_max}"


def test_rule_restart_policy_tells_a_restart_from_none() -> None:
    f = facts("cgroup_oom", restart_count=1)
    f.restarts = [{"ts": T + timedelta(seconds=60), "source_id": 1, "line_no": 9, "restart_count": 1}]
    got = finding("restart_policy", f)
    assert got is not None and got.data["case"] == "restarted" and got.data["restart_count"] == 1
    f = facts("cgroup_oom")
    f.timeline.events = [TimelineEvent(T, "systemd", "a.service", "failed", "a.service: Failed", 1, 2)]
    none = finding("restart_policy", f)
    assert none is not None and none.data["case"] == "none" and not none.data["blocked"]
    assert finding("restart_policy", facts("gpu_fault")) is None


@pytest.mark.parametrize(("after", "fires"), [(["failed"], True), (["failed", "started"], False)])
def test_rule_reset_failed_reads_the_state_after_the_kill(after: list[str], fires: bool) -> None:
    f = facts("cgroup_oom")
    f.timeline.events = [
        TimelineEvent(T + timedelta(seconds=i), "systemd", "a.service", k, k, 1, i)
        for i, k in enumerate(after)
    ]
    got = finding("reset_failed", f)
    assert (got is not None) == fires
    if got is not None:
        assert got.data == {"state": "failed"}


def test_rule_verify_gpu_freed_cases() -> None:
    f = facts("cgroup_oom", unit="a.service")
    f.config = {"engine": "sglang"}
    f.gpu_release = [
        GpuRelease("GPU 0", 30_000, 0, 4.0, True, (2, 3)),
        GpuRelease("GPU 1", 30_000, 0, 6.0, True),
    ]
    got = finding("verify_gpu_freed", f)
    assert got is not None and got.severity == "info"
    assert (got.data["case"], got.data["count"], got.data["within_s"], got.data["left_mib"]) == (
        "released",
        2,
        6.0,
        0,
    )
    f.gpu_release = [GpuRelease("GPU 0", 30_000, 29_000, None, False)]
    stayed = finding("verify_gpu_freed", f)
    assert stayed is not None and stayed.severity == "high" and stayed.data["case"] == "stayed"
    f.gpu_release = []
    unknown = finding("verify_gpu_freed", f)
    assert unknown is not None and unknown.data["case"] == "unknown"


def test_rule_host_rebooted_tells_a_hang_from_a_plain_reboot() -> None:
    f = facts("cgroup_oom")
    f.reboot = Reboot(T + timedelta(minutes=20), True, (4, 1), "b2", T + timedelta(minutes=12), None)
    plain = finding("host_rebooted", f)
    assert plain is not None and plain.severity == "medium" and plain.data["up_after_s"] == 1200
    f.timeline.events = [
        TimelineEvent(T + timedelta(minutes=5), "kernel", None, "hung_task", "task blocked", 1, 8)
    ]
    hung = finding("host_rebooted", f)
    assert hung is not None and hung.severity == "high" and hung.data["hung_from"] == T + timedelta(minutes=5)


def test_rule_health_check_backoff_counts_the_polls() -> None:
    f = facts("cgroup_oom", recovery_unit="b.service", recovered_ts=T + timedelta(seconds=600))
    f.polls = [
        {
            "ts": T + timedelta(seconds=570 + 15 * i),
            "path": "/v1/models",
            "status": s,
            "source_id": 1,
            "line_no": i,
        }
        for i, s in enumerate((503, 200, 200))
    ]
    got = finding("health_check_backoff", f)
    assert got is not None
    assert (got.data["polls"], got.data["interval_s"], got.data["not_ready"], got.data["early_ok"]) == (
        3,
        15.0,
        1,
        1,
    )


def test_rule_load_regression_compares_with_the_units_other_loads() -> None:
    slow = load("b.service", 100, 1300)
    f = facts("cgroup_oom", recovery_load=slow)
    f.recovery_loads = load_statistics(
        [load("b.service", -9000, -8400), load("b.service", -5000, -4420), slow]
    )[0]
    got = finding("load_regression", f)
    assert got is not None and (got.data["load_s"], got.data["median_s"]) == (1200.0, 590.0)


def test_rule_restart_loop_from_the_start_limit_or_repeated_kills() -> None:
    f = facts("cgroup_oom", restart_count=5)
    f.timeline.events = [
        TimelineEvent(T + timedelta(minutes=3), "systemd", "a.service", "start_limit_hit", "x", 1, 3)
    ]
    got = finding("restart_loop", f)
    assert got is not None and got.data["case"] == "start_limit" and got.data["restart_count"] == 5
    loop = finding("restart_loop", facts("cgroup_oom", kills_last_hour=2))
    assert loop is not None and loop.data == {"case": "kill_loop", "kills": 3}
    # systemd gave up already: the action is not to stop a loop that stopped
    rec = explain("restart_loop", f)
    assert rec is not None and rec.action == "Fix the start-up failure of a.service before its next start"


def test_rule_stop_timeout_measures_the_drain() -> None:
    f = facts("timeout")
    f.stop_ts, f.stop_at, f.last_batch = T - timedelta(seconds=90), (1, 7), {"running_req": 12}
    got = finding("stop_timeout", f)
    assert got is not None and got.data == {
        "stop_ts": T - timedelta(seconds=90),
        "waited_s": 90.0,
        "running": 12,
    }


def test_rule_gpu_fault_names_the_xid() -> None:
    xid = Evidence(
        "xid", T - timedelta(seconds=5), 3, 9, "Xid 79", "h", None, {"xid": 79, "bus_id": "0000:18:00"}
    )
    got = finding("gpu_fault", facts("gpu_fault", evidence=[xid]))
    assert got is not None and (got.data["xid"], got.data["bus_id"]) == (79, "0000:18:00")


def test_rule_server_error_tells_a_watchdog_from_an_error() -> None:
    def ev(kind: str, detail: str = "x") -> Evidence:
        return Evidence(kind, T, 1, 2, detail, "h", "a.service", {})

    assert finding("server_error", facts("crash", evidence=[ev("server_exception")])).data == {
        "case": "error",
        "quoted": True,
    }  # type: ignore[union-attr]
    dog = finding("server_error", facts("crash", evidence=[ev("server_watchdog")]))
    assert dog is not None and dog.data == {"case": "server_watchdog", "quoted": True}
    nccl = finding(
        "server_error", facts("crash", evidence=[ev("server_exception", "collective operation timeout")])
    )
    assert nccl is not None and nccl.data == {"case": "nccl_watchdog", "quoted": True}
    # a failed start known from systemd's lines alone: no error of the server's to quote
    alone = finding("server_error", facts("crash", evidence=[ev("unit_start_failed")]))
    assert alone is not None and alone.data == {"case": "error", "quoted": False}


def test_rule_hicache_host_memory_sums_the_pools() -> None:
    f = facts("cgroup_oom", memcg_limit_kb=1024**3)
    f.hicache = [{"gb": 100.0, "ts": T - timedelta(minutes=30), "source_id": 1, "line_no": 4}] * 8
    got = finding("hicache_host_memory", f)
    assert got is not None and (got.data["pools"], got.data["total_gb"], got.data["first_before_s"]) == (
        8,
        800.0,
        1800.0,
    )


def test_rule_find_the_signal_prefers_an_undated_oom_record() -> None:
    plain = finding("find_the_signal", facts("signal"))
    assert plain is not None and plain.data == {"undated": False} and plain.severity == "medium"
    f = facts("signal")
    f.undated_kills = [{"victim_pid": 7, "victim_comm": "python3", "source_id": 2, "line_no": 30}]
    undated = finding("find_the_signal", f)
    assert undated is not None and undated.severity == "high" and undated.data["victim_pid"] == 7


def test_rules_run_after_the_rules_they_read() -> None:
    from postmortem.analysis.rules import run_order

    order = run_order()
    for name, sp in rules().items():
        assert all(order.index(dep) < order.index(name) for dep in sp.after)


def test_a_users_template_rewords_a_rule(tmp_path: Any) -> None:
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "reset_failed.md.j2").write_text(
        "{% block title %}Reset {{ inc_unit }}{% endblock %}{% block text %}It is {{ state }}.{% endblock %}"
    )
    f = facts("cgroup_oom")
    f.timeline.events = [TimelineEvent(T, "systemd", "a.service", "failed", "x", 1, 1)]
    rec = explain("reset_failed", f, templates=[str(tmp_path)])
    assert rec is not None and (rec.title, rec.detail, rec.action) == (
        "Reset a.service",
        "It is failed.",
        None,
    )


def _k8s_facts(cause: str, **kw: Any) -> IncidentFacts:
    from postmortem.analysis.kubernetes import K8sFacts

    f = facts(cause, unit="k8s:inference/vllm-0/vllm", **kw)
    f.k8s = K8sFacts(
        "k8s:inference/vllm-0/vllm",
        {
            "limit_memory_bytes": 64 << 30,
            "request_memory_bytes": 32 << 30,
            "qos_class": "Burstable",
            "shm_medium_memory": True,
            "shm_size_bytes": 16 << 30,
            "startup_probe": '{"type": "httpGet", "target": "/health:8000", "delay": 0, "period": 10, "timeout": 1, "failure": 30}',
        },
        [],
    )
    return f


def test_rule_k8s_memory_limit_names_the_limit_and_sizes_it() -> None:
    f = _k8s_facts("cgroup_oom", memcg_usage_kb=64 * 1024**2, memcg_limit_kb=64 * 1024**2)
    f.oom = {"oom_memcg": "/kubepods/burstable/pod8f14e45f-ceea-467f-a0e6-1b1a2c3d4e5f/" + "ab" * 32}
    got = finding("k8s_memory_limit", f)
    assert got is not None
    assert (got.data["level"], got.data["suggest_gib"], got.data["shm"], got.data["qos"]) == (
        "container",
        77,
        True,
        "Burstable",
    )
    f.oom = {"oom_memcg": "/kubepods/burstable/pod8f14e45f-ceea-467f-a0e6-1b1a2c3d4e5f"}
    pod = finding("k8s_memory_limit", f)
    assert pod is not None and pod.data["level"] == "pod"
    f.oom = {"oom_memcg": "/kubepods.slice"}  # every pod's cgroup: kubelet's allocatable
    node = finding("k8s_memory_limit", f)
    assert node is not None and node.data["level"] == "allocatable"
    evicted = finding("k8s_memory_limit", _k8s_facts("eviction"))
    assert evicted is not None and evicted.data["level"] == "node"
    assert finding("k8s_memory_limit", facts("cgroup_oom")) is None  # a systemd unit: not this rule
    assert finding("unit_memory_limits", f) is None  # … and no MemoryMax= for a pod


def test_rule_k8s_startup_probe_budgets_from_the_loads() -> None:
    f = _k8s_facts("probe_kill")
    f.unit_loads = load_statistics([load("k8s:inference/vllm-0/vllm", -9000, -8580)])[0]
    got = finding("k8s_startup_probe", f)
    assert got is not None
    assert (got.data["budget_s"], got.data["longest_s"], got.data["threshold"]) == (300, 420.0, 63)
    ok = _k8s_facts("cgroup_oom")
    ok.unit_loads = load_statistics([load("k8s:inference/vllm-0/vllm", -9000, -8800)])[0]
    assert finding("k8s_startup_probe", ok) is None  # 300 s allowed, 200 s needed


def test_rule_k8s_oom_group_needs_several_victims() -> None:
    f = _k8s_facts("cgroup_oom")
    assert finding("k8s_oom_group", f) is None
    f.incident.victims = [
        Victim(1, "VLLM::EngineCor", T, 1, 1, 1, True),
        Victim(2, "python3", T, 1, 1, 2, False),
    ]
    got = finding("k8s_oom_group", f)
    assert got is not None and got.data == {"processes": 2, "victim": "VLLM::EngineCor"}


def test_rule_k8s_keep_events_when_none_was_read() -> None:
    f = _k8s_facts("cgroup_oom")
    got = finding("k8s_keep_events", f)
    assert got is not None and got.data == {"pod_object": True}
    assert f.k8s is not None
    f.k8s.events = [{"origin": "event", "kind": "other"}]
    assert finding("k8s_keep_events", f) is None


def test_rule_host_ram_not_gpu_says_earlyoom_killed_one_process() -> None:
    # earlyoom signals one process (systemd-oomd kills the whole cgroup): "earlyoom killed the
    # whole unit" misstated it
    f = facts("earlyoom", killer="earlyoom", victims=[Victim(5200, "VLLM::EngineCor", T, 10, 1, 1, True)])
    rec = explain("host_ram_not_gpu", f)
    assert rec is not None
    assert "earlyoom killed VLLM::EngineCor as host memory ran low" in rec.summary
    assert "whole unit" not in rec.summary + rec.detail


def test_rule_words_for_one_gpu_no_ranks_and_no_recovery() -> None:
    """Words a vLLM server on one GPU got wrong: a headline without a subject ("on GPU 0 asked
    for …"), "all 1 of its GPUs", and "stayed down until an operator acted" when nothing
    shows it back."""
    f = facts("gpu_oom")
    f.cuda_oom = {"phase": "runtime", "ranks": None, "gpu": 0, "tried_mib": 1250.0, "free_mib": 470.0}
    f.config = {"engine": "vllm", "gpu_memory_utilization": 0.9}
    rec = explain("gpu_headroom", f)
    assert rec is not None and rec.headline.startswith("The server on GPU 0 asked for 1.22 GiB"), rec.headline
    f = facts("cgroup_oom")
    f.config = {"engine": "sglang"}
    f.gpu_release = [GpuRelease("GPU 0", 30_000, 0, 4.0, True)]
    rec = explain("verify_gpu_freed", f)
    assert rec is not None and "all 1" not in rec.headline + rec.detail + (rec.went_well or "")
    assert "released: the GPU within 4 s" in rec.headline, rec.headline
    f = facts("cgroup_oom")
    f.timeline.events = [TimelineEvent(T, "systemd", "a.service", "failed", "a.service: Failed", 1, 2)]
    rec = explain("restart_policy", f)
    assert (
        rec is not None
        and rec.went_wrong == "Nothing restarted a.service: it stayed down (no source shows it back)."
    )
    f.incident.recovered_ts, f.incident.recovery_unit = T + timedelta(minutes=9), "a.service"
    rec = explain("restart_policy", f)
    assert (
        rec is not None
        and rec.went_wrong == "Nothing restarted a.service: it stayed down until someone started it again."
    )


def test_an_old_host_memory_sample_is_not_told_as_the_memory_at_the_kill() -> None:
    """earlyoom prints every few minutes: its last "mem avail" (here 4 min 45 s before the kill)
    was told as what the host had "at the kill" and, in the lessons, as "free"."""
    f = facts("cgroup_oom", memcg_usage_kb=143 * 1024**2, memcg_limit_kb=144 * 1024**2)
    f.host_avail_end_mib, f.host_total_mib, f.host_avail_age_s = 218_112.0, 2_063_588.0, 285.0
    rec = explain("unit_memory_limits", f)
    assert rec is not None
    assert "available (its last sample, 4 min 45 s before the kill)" in rec.went_well, rec.went_well
    assert "free" not in rec.went_well and "at the kill" not in rec.detail, rec.detail
    f = facts("host_oom")
    f.host_avail_end_mib, f.host_total_mib, f.host_avail_age_s = 368_640.0, 2_063_588.0, 235.0
    rec = explain("host_ram_not_gpu", f)
    assert rec is not None and "left" not in rec.headline, rec.headline
    assert "Host RAM available at its last sample, 3 min 55 s before the kill: 360 GiB" in rec.detail
    f.host_avail_age_s = 5.0  # a host OOM's headline quotes no sample: the kernel ran out
    rec = explain("host_ram_not_gpu", f)
    assert rec is not None and rec.headline == "Host RAM ran out", rec.headline
    for cause, words in (("oomd", "Host memory came under pressure"), ("earlyoom", "Host RAM ran low")):
        rec = explain("host_ram_not_gpu", facts(cause))
        assert rec is not None and rec.title == words, rec.title
    # systemd-oomd acts on pressure (PSI), not on low memory: its summary said "ran low"
    f = facts("oomd", killer="systemd-oomd")
    rec = explain("host_ram_not_gpu", f)
    assert rec is not None and "killed the whole unit as host memory came under pressure" in rec.summary
    assert "ran low" not in rec.summary


def test_rule_bound_queue_lays_no_growth_on_a_queue_when_memory_fell() -> None:
    """Host RAM that fell read "grew by -36,705 MiB before requests began to queue … most of the
    growth came with the queue" (seed 24680, n27)."""
    f = facts("cgroup_oom")
    f.queue_max, f.queue_start_ts = 40, T - timedelta(minutes=10)
    f.config = {"engine": "sglang", "raw": "ServerArgs(port=1)"}
    f.host_queue_split = (-36_705.0, 20.0, -110_873.0, 10.0)
    rec = explain("bound_queue", f)
    assert rec is not None and "grew by -" not in rec.detail and "most of the growth" not in rec.detail
    f.host_queue_split = (-36_705.0, 20.0, 51_200.0, 10.0)
    rec = explain("bound_queue", f)
    assert rec is not None and "Host RAM in use fell by 36 GiB before requests began to queue" in rec.detail
    assert "grew by 50 GiB after (falling 1.8 GiB a minute, then rising 5.0 GiB)" in " ".join(
        rec.detail.split()
    )


def test_rule_gpu_headroom_tells_fragmentation_from_too_little_headroom() -> None:
    """0.7 GiB asked with 2.71 GiB reserved by PyTorch but unallocated (seed 97531, n16): the
    memory was fragmented; the advice was to lower --mem-fraction-static."""
    f = facts("gpu_oom")
    f.config = {"engine": "sglang", "mem_fraction_static": 0.88}
    f.cuda_oom = {"phase": "runtime", "ranks": "TP1", "gpu": 1, "tried_mib": 716.8, "free_mib": 1945.6}
    f.cuda_oom |= {"allocated_mib": 70_000.0, "reserved_mib": 72_775.0}
    rec = explain("gpu_headroom", f)
    assert rec is not None and rec.action.startswith("Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True")
    assert rec.factor.startswith("GPU memory was fragmented: PyTorch held 2.7 GiB reserved but unallocated")
    f.cuda_oom["reserved_mib"] = 70_100.0  # 100 MiB unallocated: too little headroom, as before
    rec = explain("gpu_headroom", f)
    assert rec is not None and rec.action.startswith("Lower the GPU memory settings")
