"""Recommendation rules: small named functions over :class:`IncidentFacts`.

Each rule returns a :class:`Recommendation` or ``None`` when its evidence is absent; the text
cites the numbers it relies on so a reader can check it. Rules never guess: a GPU setting is
not recommended for a host-RAM OOM, a restart policy is not recommended when the unit's restart
behaviour was not observed.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from statistics import median

from ..engines import get_engine
from ..text.formats import seconds, size_kb, size_mib
from .facts import (
    GPU_FREED_MIB,
    Consumer,
    GpuRelease,
    IncidentFacts,
    blocked_restarts,
    gpu_label_text,
    killed_in_vain,
    left_processes,
)
from .incidents import GPU_FAULT_XIDS, limit_setting
from .load_stats import is_regression
from .model import Incident, Recommendation, SourceRef, is_container, is_service, restartable, unit_words
from .summary import retraction_words
from .timeline import TimelineEvent

Rule = Callable[[IncidentFacts], Recommendation | None]
RULES: list[tuple[str, Rule]] = []

HOST_CAUSES = ("host_oom", "cgroup_oom", "oomd", "earlyoom")
UNLIMITED_QUEUE = 2**62


def rule(name: str) -> Callable[[Rule], Rule]:
    def deco(fn: Rule) -> Rule:
        if any(n == name for n, _ in RULES):
            raise ValueError(f"rule {name!r} registered twice")
        RULES.append((name, fn))
        return fn

    return deco


gib = size_kb
gib_mib = size_mib
dur = seconds


def _ref(facts: IncidentFacts, kind: str) -> list[SourceRef]:
    for ev in facts.incident.evidence:
        if ev.kind == kind:
            return [ev.ref]
    return []


def _spec(facts: IncidentFacts) -> str | None:
    cfg = facts.config or {}
    algo = cfg.get("speculative_algorithm")
    if algo:
        return str(algo)
    load = facts.incident.killed_load
    return load.speculative_algorithm if load else None


def held_before(g: GpuRelease) -> bool:
    """Whether a GPU held memory before the kill (unknown counts as held): an idle GPU — one the
    killed server never used, as with a container given some of the host's GPUs — released
    nothing when it died."""
    return g.before_mib is None or g.before_mib > GPU_FREED_MIB


def released(f: IncidentFacts) -> list[GpuRelease]:
    """The GPUs that held memory before the kill and fell to (nearly) nothing after it."""
    return [g for g in f.gpu_release if g.freed and held_before(g)]


def idle_gpus(f: IncidentFacts) -> list[GpuRelease]:
    """The GPUs that held (nearly) nothing before the kill."""
    return [g for g in f.gpu_release if not held_before(g)]


def gpu_names(gpus: list[GpuRelease]) -> str:
    """``GPUs 0–3``, ``GPU 2``, ``GPUs 0, 2, 5``; bus ids or uuids as they are.

    >>> g = lambda label: GpuRelease(label, 0, 0, None, True)
    >>> gpu_names([g(f"GPU {i}") for i in range(4)]), gpu_names([g("GPU 2")]), gpu_names([g("GPU 0"), g("GPU 5")])
    ('GPUs 0–3', 'GPU 2', 'GPUs 0, 5')
    """
    return gpu_label_text([g.gpu for g in gpus])


def memory_limit_words(inc: Incident) -> str:
    """The setting an operator changes to give the killed unit more (or less) memory."""
    box = inc.container
    if box is not None and box.runtime == "podman":
        return f"the memory limit of {box.words()} (podman run --memory)"
    if box is not None or is_container(inc.unit):
        return f"the memory limit of {unit_words(inc)} (docker run --memory, compose mem_limit)"
    return f"MemoryMax= and OOMPolicy= of {unit_words(inc)}"


#: process names of GPU inference servers (the OOM record's comm, cut to 15 characters)
_GPU_COMMS = ("sglang", "vllm", "tritonserver", "text-generation", "ray::")


def gpu_workload(f: IncidentFacts) -> bool:
    """Whether the killed service used GPUs, as far as the data tells: an SGLang configuration
    or load of it, GPU memory that fell when it died, or a victim named like an inference
    server. GPU samples alone say only that the host has GPUs: GPU advice is not given for a
    data loader, a database or a web server killed beside a server that keeps its GPUs."""
    inc = f.incident
    if f.config or f.unit_loads is not None:
        return True
    # GPUs emptied at the kill of a service (or container): it was using them (a session's
    # process killed beside a server that died a moment later is not)
    if restartable(inc.unit) and released(f):
        return True
    names = [inc.unit or ""] + [v.comm or "" for v in inc.victims]
    return any(n.lower().startswith(_GPU_COMMS) or "sglang" in n.lower() for n in names)


@rule("host_ram_not_gpu")
def host_ram_not_gpu(f: IncidentFacts) -> Recommendation | None:
    inc = f.incident
    if inc.cause not in HOST_CAUSES and inc.cause != "gpu_oom":
        return None
    if inc.cause == "gpu_oom":
        return Recommendation(
            "host_ram_not_gpu",
            "high",
            "GPU memory ran out, not host RAM",
            "A CUDA out-of-memory error ended the server and no OOM killer fired: the GPU's memory "
            "was exhausted. Host-RAM limits (MemoryMax=, swap) would not have helped; what the server "
            "allocates (--mem-fraction-static, CUDA graphs, a draft model) and what else holds the "
            "GPUs decide it.",
            _ref(f, "cuda_oom") or _ref(f, "server_cuda_oom"),
        )
    parts = []
    noun = "container" if is_container(inc.unit) else "unit"
    if inc.cause == "cgroup_oom":
        parts.append(
            f"The {noun}'s memory cgroup hit its limit: {gib(inc.memcg_usage_kb)} used of "
            f"{gib(inc.memcg_limit_kb)} allowed, and the kernel killed inside that cgroup."
        )
    elif inc.cause == "host_oom":
        parts.append("The whole machine ran out of RAM and the kernel chose a victim host-wide.")
    else:
        parts.append(f"{inc.killer} killed the service because host memory ran low.")
    if f.host_avail_end_mib is not None and f.host_total_mib:
        drop = f.host_drop_mib
        grew = f" (down {gib_mib(drop)} over the window)" if drop and drop > 0 else ""
        parts.append(
            f"Host RAM available just before the kill: {gib_mib(f.host_avail_end_mib)} of "
            f"{gib_mib(f.host_total_mib)}{grew}."
        )
    if f.gpu_used_end_mib is not None and f.gpu_total_mib:
        flat = "flat" if f.gpu_flat else "changing"
        full = f.gpu_used_end_mib >= 0.8 * f.gpu_total_mib
        why = (
            "SGLang pre-allocates its KV pool, so nearly-full GPUs are normal and not the cause"
            if full
            else "the GPUs still had room: they were not the cause"
        )
        parts.append(
            f"GPU memory was {flat} at {gib_mib(f.gpu_used_end_mib)} of {gib_mib(f.gpu_total_mib)} per "
            f"GPU — {why}."
        )
    if f.consumers:
        top = f.consumers[0]
        parts.append(
            f"The biggest consumers in the kernel's task table: {top.processes} × {top.name} with "
            f"{gib(top.rss_kb)} ({top.share:.0%} of the listed RSS)"
            + (
                f", then {f.consumers[1].processes} × {f.consumers[1].name} with {gib(f.consumers[1].rss_kb)}"
                if len(f.consumers) > 1
                else ""
            )
            + "."
        )
    other = _bigger_consumer(f)
    if other is not None:
        parts.append(
            f"The kernel chose {inc.victim.comm if inc.victim else 'this unit'}, but {other.name} held more "
            f"({gib(other.rss_kb)} in {other.processes} process{'es' if other.processes > 1 else ''}): the "
            f"host ran out for everything together — cap {other.name}'s job too (MemoryMax= on its unit or "
            "scope), or move it off this host."
        )
    gpu = gpu_workload(f)
    if gpu and _while_loading(f):
        parts.append(
            "The run was still loading — it served nothing, so no request held that memory. "
            "GPU-side settings (--mem-fraction-static, --cuda-graph-max-bs) do not change host RAM; "
            "look at what a load holds in host memory: every rank reads its weight shards through "
            "it (the page cache, pinned staging buffers), and host pools (the hierarchical KV "
            f"cache's) come at the end of the load — and at the {noun}'s memory limit."
        )
    elif gpu:
        parts.append(
            "GPU-side settings (--mem-fraction-static, draft tokens, --cuda-graph-max-bs) do not change "
            "host RAM; look at what the server keeps in host memory (queued and retracted requests, "
            "pinned buffers)" + (f" and at the {noun}'s memory limit." if inc.cause != "oomd" else ".")
        )
    if inc.cause == "oomd":
        parts.append(_oomd_advice(f))
    title = f"The {noun}'s memory limit was reached" if inc.cause == "cgroup_oom" else "Host RAM ran out"
    return Recommendation(
        "host_ram_not_gpu",
        "high",
        f"{title}, not GPU memory" if gpu else title,
        " ".join(parts),
        _ref(f, "oom_kill"),
    )


def _oomd_advice(f: IncidentFacts) -> str:
    """What to change for a systemd-oomd kill: its candidates, and its own settings."""
    text = ""
    if f.oomd_candidates:
        listed = ", ".join(f"{path} ({usage})" for path, usage in f.oomd_candidates[:3])
        text = f"systemd-oomd's top candidates were {listed}. "
    return text + (
        "oomd kills a whole cgroup of the slice whose pressure (ManagedOOMMemoryPressure=kill, "
        "ManagedOOMMemoryPressureLimit=) or swap use (ManagedOOMSwap=kill, SwapUsedLimit= in "
        "oomd.conf) crossed its limit, not a process: keep the server out of its choice with "
        "ManagedOOMPreference=avoid (or omit) on its unit, move the other large jobs off its slice or "
        "cap them (MemoryMax=), or raise the limit that fired."
    )


def _while_loading(f: IncidentFacts) -> bool:
    """Whether the killed run died before it was ready (it never served)."""
    load = f.incident.killed_load
    return load is not None and load.never_ready


def _bigger_consumer(f: IncidentFacts) -> Consumer | None:
    """In a host-wide OOM, the largest consumer of the task table when it is another program
    than the chosen victim (a data loader beside the server)."""
    victim = f.incident.victim
    if f.incident.cause != "host_oom" or victim is None or not f.consumers:
        return None
    top = f.consumers[0]
    return top if top.name != victim.comm else None


@rule("bound_queue")
def bound_queue(f: IncidentFacts) -> Recommendation | None:
    inc = f.incident
    if inc.cause not in HOST_CAUSES:
        return None
    if not f.queue_max or f.queue_max < 16:
        return None
    cfg = f.config or {}
    raw = str(cfg.get("raw") or "")
    mqr = _field(raw, "max_queued_requests")
    parts = [
        f"Before the kill the scheduler's queue grew to {f.queue_max} requests"
        + (f" while KV-cache usage reached {f.token_usage_max:.2f}" if f.token_usage_max is not None else "")
        + (
            f" and {retraction_words(f.retractions, f.retracted_reqs)} pushed requests back to the queue"
            if f.retractions
            else ""
        )
        + "; the server holds queued and retracted requests in host memory, so an unbounded "
        "queue is one way its memory grows." + _queue_versus_growth(f)
    ]
    if f.config is None:
        # the killed run's settings are not in the data (its start was not logged): not "unlimited"
        parts.append(
            "Bound them: set --max-queued-requests so excess requests get a fast 503 instead of growing "
            "memory, and --max-running-requests (the killed run's settings are not in the data: its "
            "start was not logged)."
        )
    else:
        q = "unlimited" if mqr is None or (mqr.isdigit() and int(mqr) >= UNLIMITED_QUEUE) else mqr
        parts.append(
            f"Bound them: set --max-queued-requests (configured: {q}) so excess requests get a fast 503 "
            f"instead of growing memory, and --max-running-requests (configured: {_mrr_text(f)})."
        )
    return Recommendation("bound_queue", "high", "Bound the request queue", " ".join(parts))


def _queue_versus_growth(f: IncidentFacts) -> str:
    """How host RAM grew before and after requests began to queue, with the numbers: growth
    before the queue means the queue is not (or not alone) what made it grow."""
    split = f.host_queue_split
    if split is None or f.queue_start_ts is None or split[1] <= 0 or split[3] <= 0:
        return " Compare the queue with host RAM in the memory timeline before acting on this."
    before, before_min, after, after_min = split
    total = before + after
    when = f"{f.queue_start_ts.astimezone(UTC):%H:%M:%S} UTC"
    rates = f"{gib_mib(before / before_min)} a minute, then {gib_mib(after / after_min)}"
    text = (
        f" Host RAM in use grew by {gib_mib(before)} before requests began to queue ({when}) and by "
        f"{gib_mib(after)} after ({rates})"
    )
    if total > 0 and before >= 0.25 * total:
        running = (
            f"; running requests went from {f.running_first} to {f.running_last}"
            if f.running_first is not None and f.running_last is not None
            else ""
        )
        return (
            f"{text}{running}: memory grew with the load before anything queued, so the queue is "
            "not all of it — bounding it caps one part; find what each running request holds."
        )
    return f"{text}: most of the growth came with the queue."


def _field(raw: str, name: str) -> str | None:
    """The text of one field of a ``server_args`` body (``server_configs.raw``), unquoted."""
    parsed = get_engine("sglang").parse_args(raw)
    value = parsed[0].get(name) if parsed else None
    return value.strip("'") if value is not None else None


@rule("gpu_held_by_another_process")
def gpu_held_by_another_process(f: IncidentFacts) -> Recommendation | None:
    """A CUDA OOM whose message names another process holding the GPU: free the GPU first."""
    if not f.gpu_holders:
        return None
    inc = f.incident
    parts = []
    for h in f.gpu_holders[:4]:
        seen = ""
        if h.first_ts is not None:
            where = f" on {h.gpus} GPU{'s' if h.gpus != 1 else ''}" if h.gpus else ""
            before = ""
            load = inc.killed_load
            if load is not None and load.start_ts is not None and h.first_ts < load.start_ts:
                before = f", before {inc.unit} started"
            seen = f"; nvidia-smi listed it{where} from {h.first_ts.astimezone(UTC):%H:%M:%S} UTC{before}"
        parts.append(f"pid {h.pid}{f' ({h.name})' if h.name else ''} held {h.gib:,.1f} GiB{seen}")
    refs = [SourceRef(*h.at) for h in f.gpu_holders if h.at is not None][:2]
    return Recommendation(
        "gpu_held_by_another_process",
        "high",
        "Another process held the GPU memory",
        "The CUDA out-of-memory error names other processes on the GPU: "
        + "; ".join(parts)
        + f". {inc.unit or 'The server'} cannot fit beside them: stop them or move them to other GPUs "
        "before starting it (check `nvidia-smi --query-compute-apps=pid,process_name,used_memory "
        "--format=csv`); lowering --mem-fraction-static would only shrink the server's KV cache.",
        (_ref(f, "cuda_oom") or _ref(f, "server_cuda_oom")) + refs,
    )


@rule("speculative_gpu_settings")
def speculative_gpu_settings(f: IncidentFacts) -> Recommendation | None:
    inc = f.incident
    algo = _spec(f)
    gpu_evidence = inc.cause == "gpu_oom" or any(
        e.kind in ("cuda_oom", "server_cuda_oom") for e in inc.evidence
    )
    if not algo or not gpu_evidence:
        return None
    cfg = f.config or {}
    mfs = cfg.get("mem_fraction_static")
    ndt = cfg.get("speculative_num_draft_tokens")
    bs = cfg.get("cuda_graph_max_bs")
    detail = (
        f"This {algo} server ran out of GPU memory. Speculative decoding adds a draft model, its KV "
        "cache and draft CUDA graphs on every GPU. Lower, one at a time: "
        f"--mem-fraction-static (configured {mfs if mfs is not None else 'default'}; try "
        f"{round(mfs - 0.03, 2) if isinstance(mfs, float) else '0.03 lower'}), "
        f"--speculative-num-draft-tokens (configured {ndt if ndt is not None else 'default'}), "
        f"--cuda-graph-max-bs (configured {bs if bs is not None else 'default'}; try "
        f"{bs // 2 if isinstance(bs, int) else 'half'})."
    )
    return Recommendation(
        "speculative_gpu_settings", "high", "Give the speculative server GPU headroom", detail
    )


def _mrr_text(f: IncidentFacts) -> str:
    """--max-running-requests as configured, and what the server made of 'auto' at startup."""
    mrr = (f.config or {}).get("max_running_requests")
    if mrr is not None:
        return str(mrr)
    eff = (f.limits or {}).get("max_running_requests")
    return f"auto, which the server set to {eff} at startup" if eff is not None else "auto"


@rule("gpu_headroom")
def gpu_headroom(f: IncidentFacts) -> Recommendation | None:
    """A CUDA OOM of the server itself (no other process on the GPU, no draft model): where it
    happened, how much it asked for, and the setting that decides that headroom."""
    inc, oom = f.incident, f.cuda_oom
    if inc.cause != "gpu_oom" or oom is None or f.gpu_holders or _spec(f):
        return None
    cfg = f.config or {}
    mfs, bs = cfg.get("mem_fraction_static"), cfg.get("cuda_graph_max_bs")
    where = " ".join(
        x for x in (oom.get("ranks"), f"on GPU {oom['gpu']}" if oom.get("gpu") is not None else None) if x
    )
    asked = ""
    if oom.get("tried_mib") is not None:
        asked = f" asked for {oom['tried_mib'] / 1024:.2f} GiB" + (
            f" with {oom['free_mib'] / 1024:.2f} GiB free" if oom.get("free_mib") is not None else ""
        )
    phase = oom.get("phase")
    lower = (
        f"--mem-fraction-static (configured {mfs}; try {round(mfs - 0.03, 2)})"
        if isinstance(mfs, float)
        else "--mem-fraction-static (0.03 lower)"
    )
    if phase == "cuda_graph":
        detail = (
            f"{where or 'A rank'}{asked} while capturing CUDA graphs: the graphs for the largest batch "
            f"sizes did not fit beside the KV pool. Lower --cuda-graph-max-bs (configured "
            f"{bs if bs is not None else 'default'}{f'; try {bs // 2}' if isinstance(bs, int) else ''}) or {lower}."
        )
    elif phase in ("runtime", "warmup"):
        lb = f.last_batch or {}
        load = (
            f" (the last batch line: {lb['running_req']} running, {lb['queue_req']} queued"
            + (f", KV usage {lb['token_usage']:.2f}" if lb.get("token_usage") is not None else "")
            + ")"
            if lb.get("running_req") is not None
            else ""
        )
        detail = (
            f"{where or 'A rank'}{asked} while serving{load}: a batch's activations did not fit in the "
            f"headroom the KV pool leaves. Give it more — {lower} — or keep batches smaller: "
            f"--max-running-requests (configured {_mrr_text(f)}), --cuda-graph-max-bs "
            f"(configured {bs if bs is not None else 'default'}), --chunked-prefill-size for long prompts."
        )
    else:
        return None  # loading: the weights or the pool itself did not fit — the quoted error says which
    return Recommendation(
        "gpu_headroom", "high", "Leave the server GPU headroom for its batches", detail, _ref(f, "cuda_oom")
    )


@rule("fallback_autoregressive")
def fallback_autoregressive(f: IncidentFacts) -> Recommendation | None:
    inc = f.incident
    algo = _spec(f)
    if not algo:
        return None
    unit = inc.fallback_unit
    stats = f.recovery_loads if unit else None
    if not unit or stats is None:
        return None
    med = stats.median_load_s
    last = inc.recovery_load.load_s if inc.recovery_load else None
    detail = (
        f"{inc.unit} ({algo}) died; {unit} serves the same model without speculative decoding and "
        f"brought service back. For throughput-bound batch work, run {unit} (in general speculative "
        f"decoding gains little at large batch sizes; measure it on your traffic) and budget its load "
        "time: "
        f"{dur(last)} this time"
        + (f", median {dur(med)} over {stats.count} loads" if med is not None and stats.count > 1 else "")
        + (f", p90 {dur(stats.phases['load_s'].p90)}" if "load_s" in stats.phases and stats.count > 2 else "")
        + f". Until it is ready, about {dur(med or last)}, it cannot serve: the port refuses "
        "connections until the HTTP server starts near the end of the load, then answers 503 until "
        "the model is ready — route or queue traffic elsewhere for that long."
    )
    return Recommendation(
        "fallback_autoregressive", "medium", f"Fall back to {unit} for throughput-bound work", detail
    )


def _earlier_peak(f: IncidentFacts) -> str:
    """How close the unit's previous run came to the limit, from systemd's "memory peak"."""
    limit_kb = f.incident.memcg_limit_kb
    if not f.earlier_peaks or not limit_kb:
        return ""
    p = f.earlier_peaks[0]
    share = int(p["memory_peak_bytes"]) / (limit_kb * 1024)
    return (
        f"Its previous run, which ended at {p['ts'].astimezone(UTC):%Y-%m-%d %H:%M} UTC, peaked at "
        f"{gib(int(p['memory_peak_bytes']) / 1024)} — {share:.0%} of the limit"
        + (": the workload runs close to it, not only on the night it was killed." if share >= 0.8 else ".")
    )


@rule("unit_memory_limits")
def unit_memory_limits(f: IncidentFacts) -> Recommendation | None:
    inc = f.incident
    noun = "container" if is_container(inc.unit) else "unit"
    if inc.cause == "cgroup_oom":
        group = 1 + len(inc.killed_with)
        setting = limit_setting((f.oom or {}).get("oom_memcg"))
        rate = f.host_rate_mib_min
        detail = (
            f"The limit that fired, {gib(inc.memcg_limit_kb)} ({setting}), worked as a guard: the host "
            "kept running. "
            + (
                f"The kernel killed all {group} processes of the {noun} together (memory.oom.group"
                + ("" if is_container(inc.unit) else ", set by OOMPolicy=kill")
                + "), so the server could not log anything. "
                if group > 1
                else ""
            )
            + (
                f"The host still had {gib_mib(f.host_avail_end_mib)} available at the kill, so the limit "
                "could be raised if the workload needs it — or keep it and "
                + (
                    "bound the queue (above). "
                    if bound_queue(f) is not None
                    else "make what the run holds in host memory smaller. "
                )
                if f.host_avail_end_mib
                else ""
            )
            + (
                "The run was still loading: the limit must cover a whole load (weights read through "
                "host memory, and host pools such as the hierarchical KV cache's), or the load must "
                "take less. "
                if _while_loading(f)
                else f"But host RAM in use was still growing at {gib_mib(rate)} a minute over the last 10 "
                "minutes before the kill: a higher limit only delays the kill unless what grows is "
                "bounded, and moves the risk to a host-wide OOM. "
                if rate is not None and rate > 256
                else ""
            )
            + _earlier_peak(f)
        ).rstrip()
        peak = f.earlier_peaks[:1]
        return Recommendation(
            "unit_memory_limits",
            "medium",
            f"Review {memory_limit_words(inc)}"
            if is_container(inc.unit)
            else "Review the unit's MemoryMax= and OOM settings",
            detail,
            [SourceRef(int(p["source_id"]), int(p["line_no"])) for p in peak],
        )
    if inc.cause == "host_oom" and is_container(inc.unit):
        return Recommendation(
            "unit_memory_limits",
            "high",
            f"Give {unit_words(inc)} a memory limit",
            f"The kernel had to pick a victim from the whole machine. Set {memory_limit_words(inc)} "
            "below the host's RAM minus what the system needs, so the kill stays inside the container, "
            "and OOMScoreAdjust=-900 on sshd and systemd-journald so they survive.",
        )
    if inc.cause == "host_oom" and inc.unit:
        return Recommendation(
            "unit_memory_limits",
            "high",
            f"Put {inc.unit} under MemoryMax=",
            f"The kernel had to pick a victim from the whole machine. Set MemoryMax= on {inc.unit} "
            "(below the host's RAM minus what the system needs) so the kill stays inside the service, "
            "and OOMScoreAdjust=-900 on sshd and systemd-journald so they survive.",
        )
    return None


def _restart_versus_fallback(f: IncidentFacts, ended: str | None) -> str:
    """When the restart, left alone, would have been ready against when the fallback was
    (``ended``: how that restart ended, when it did not reach ready, from :func:`_restart_ended`)."""
    inc = f.incident
    med = f.unit_loads.median_load_s if f.unit_loads is not None else None
    if not f.restarts or med is None or inc.recovered_ts is None:
        return ""
    restart_ts = f.restarts[0]["ts"]
    if not isinstance(restart_ts, datetime):
        return ""
    if ended is not None:
        return ended
    expected = restart_ts + timedelta(seconds=med)
    gain = (expected - inc.recovered_ts).total_seconds()
    verdict = (
        "about the same time: switching did not shorten this outage (it avoided loading the "
        "configuration that had just been killed, under the same load)"
        if abs(gain) < 60
        else (
            f"{dur(gain)} sooner: switching shortened the outage"
            if gain > 0
            else f"{dur(-gain)} later than the restart would have been: switching lengthened the outage"
        )
    )
    return (
        f" Left alone, the restart begun at {restart_ts.astimezone(UTC):%H:%M:%S} would have been ready "
        f"at about {expected.astimezone(UTC):%H:%M:%S} UTC (the unit's median load, {dur(med)}); the "
        f"fallback was ready at {inc.recovered_ts.astimezone(UTC):%H:%M:%S} — {verdict}."
    )


def _restart_ended(f: IncidentFacts, restart_ts: datetime) -> str | None:
    """How the automatic restart ended when it did not reach ready before the operator's
    fallback did (killed again, failed, stopped): then there is nothing to weigh it against."""
    inc = f.incident
    for ld in sorted(f.unit_loads.loads if f.unit_loads else [], key=lambda x: x.start_ts or restart_ts):
        if ld.start_ts is None or ld.start_ts < restart_ts - timedelta(seconds=5):
            continue
        if inc.recovered_ts is not None and ld.start_ts > inc.recovered_ts:
            break
        if ld.outcome in ("killed", "failed"):
            how = "killed again" if ld.outcome == "killed" else "failed"
            return (
                f" The automatic restart begun at {ld.start_ts.astimezone(UTC):%H:%M:%S} was {how} before "
                "it was ready: restarting the same configuration did not bring the service back."
            )
        return None
    return None


@rule("restart_policy")
def restart_policy(f: IncidentFacts) -> Recommendation | None:
    inc = f.incident
    if is_container(inc.unit):
        return _container_restart_policy(f)
    if not is_service(inc.unit):
        return None  # a session's scope or a slice: nothing systemd starts, so nothing it restarts
    if inc.cause == "gpu_fault":
        return None  # a restart loads onto the failed GPU: the gpu_fault advice says what to do
    if inc.restart_count:
        after = ""
        if inc.fallback_unit:
            ended = _restart_ended(f, f.restarts[0]["ts"]) if f.restarts else None
            what = (
                f" The automatic restart did not come back and the operator started {inc.fallback_unit}"
                if ended
                else f" The operator stopped the automatic restart and started {inc.fallback_unit} instead"
            )
            after = (
                f"{what}; with a fallback, Restart=no plus OnFailure= starting {inc.fallback_unit} "
                "avoids a second load of a configuration that just failed."
                + _restart_versus_fallback(f, ended)
            )
        blocked = blocked_restarts(f)
        return Recommendation(
            "restart_policy",
            "medium",
            "Decide what an automatic restart should do",
            f"systemd restarted {inc.unit} (restart counter {inc.restart_count}); "
            + (
                (
                    f"{'the restart' if blocked == 1 else f'{blocked} restarts'} that found the old "
                    "processes still holding the GPUs never became ready: no restart can load beside "
                    "processes stuck in the kernel, which only a reboot ends (see above) — an ExecStartPre= "
                    "that checks nvidia-smi for them fails such a start at once instead."
                    if killed_in_vain(f) and f.gpu_freed_late is None
                    else f"{'the restart' if blocked == 1 else f'{blocked} restarts'} that found the old "
                    "processes still holding the GPUs never became ready: no restart can load beside them, "
                    "so kill them first (see above) — a RestartSec= long enough for that, or an "
                    "ExecStartPre= that checks nvidia-smi, saves the failed attempts."
                )
                if blocked
                else "it reloads the same "
                + (
                    "configuration, which had just failed while loading."
                    if _while_loading(f)
                    else "configuration, under the same load."
                )
            )
            + after,
            [SourceRef(int(r["source_id"]), int(r["line_no"])) for r in f.restarts[:1]],
        )
    if not _death_seen(f):
        return None  # no journal of the kill: whether a restart was scheduled is not known
    rec = inc.recovery_load
    if (
        f.reboot is not None
        and rec is not None
        and rec.start_ts is not None
        and rec.start_ts >= f.reboot.up_ts
    ):
        return None  # it came back with the host's boot, not by a restart
    if inc.recovered_ts is None or (inc.recovery_unit == inc.unit and not _operator_started(f)):
        return Recommendation(
            "restart_policy",
            "medium",
            f"Set Restart= on {inc.unit}",
            f"No restart was scheduled after the kill. Restart=on-failure with RestartSec=30 brings "
            f"{inc.unit} back without an operator.",
        )
    return None


def _death_seen(f: IncidentFacts) -> bool:
    """Whether systemd's account of the unit's death is in the data (a journal covering the
    kill): without it, no restart line proves nothing."""
    inc = f.incident
    if inc.ts is None:
        return False
    return any(
        ev.origin == "systemd" and ev.unit == inc.unit and abs((ev.ts - inc.ts).total_seconds()) <= 120
        for ev in f.timeline.events
    )


def _container_restart_policy(f: IncidentFacts) -> Recommendation | None:
    """A container's runtime restarts it under a restart policy (``--restart``), not systemd."""
    inc = f.incident
    box = inc.container
    runtime = box.runtime_name if box is not None else "Its runtime"
    cli = box.runtime if box is not None else "docker"
    name = unit_words(inc)
    if inc.cause == "gpu_fault":
        return None
    if inc.restart_count:
        return Recommendation(
            "restart_policy",
            "medium",
            "Decide what an automatic restart should do",
            f"{runtime} restarted {name} by its restart policy ({inc.restart_count} "
            f"restart{'s' if inc.restart_count > 1 else ''}); it reloads the same "
            + (
                "configuration, which had just failed while loading."
                if _while_loading(f)
                else "configuration, under the same load."
            ),
            [SourceRef(int(r["source_id"]), int(r["line_no"])) for r in f.restarts[:1]],
        )
    if inc.recovered_ts is None:
        # (back without a start systemd logged: the cgroupfs driver has no scope to start; a
        # restart policy or an operator brought it back, nothing to advise)
        return Recommendation(
            "restart_policy",
            "medium",
            f"Give {name} a restart policy",
            f"No restart of {name} was seen after the kill. `{cli} run --restart unless-stopped` "
            + ("(compose `restart: unless-stopped`) " if cli == "docker" else "")
            + "or `--restart on-failure` brings it back without an operator.",
        )
    return None


def _operator_started(f: IncidentFacts) -> bool:
    """Whether an operator's ``systemctl start|restart`` of the unit came between the kill's
    run-up and the recovery's start: then it was brought back on purpose, not left down."""
    inc = f.incident
    rec = inc.recovery_load
    if inc.ts is None or inc.unit is None:
        return False
    until = rec.start_ts if rec is not None and rec.start_ts is not None else inc.recovered_ts or inc.ts
    for ev in f.timeline.events:
        if ev.origin != "operator" or not (inc.ts - timedelta(minutes=15) <= ev.ts <= until):
            continue
        words = ev.message.split()
        if inc.container is not None:
            # docker start|restart|run … <name>, docker compose up
            if inc.container.name in words and {"start", "restart", "run", "up"} & set(words):
                return True
        elif inc.unit in words and ("start" in words or "restart" in words):
            return True
    return False


@rule("reset_failed")
def reset_failed(f: IncidentFacts) -> Recommendation | None:
    inc = f.incident
    if inc.unit is None or is_container(inc.unit):
        return None  # a container's runtime starts it whatever systemd thinks of its scope
    ended_failed = False
    for ev in f.timeline.events:
        if ev.unit != inc.unit or ev.ts < f.timeline.kill_ts:
            continue
        if ev.kind in ("failed", "start_limit_hit"):
            ended_failed = True
        elif ev.kind in ("started", "starting", "deactivated"):
            ended_failed = False
    if not ended_failed:
        return None  # stopped or deactivated since: nothing to reset
    why = "it is still in the failed state, and start-rate limits count its past failures"
    return Recommendation(
        "reset_failed",
        "low",
        f"Run systemctl reset-failed {inc.unit} before starting it again",
        f"Before starting {inc.unit} again, run `systemctl reset-failed {inc.unit}`: {why}.",
    )


@rule("verify_gpu_freed")
def verify_gpu_freed(f: IncidentFacts) -> Recommendation | None:
    inc = f.incident
    if f.gpu_procs_after:
        pids = sorted({int(r["pid"]) for r in f.gpu_procs_after})
        last = max(r["last_ts"] for r in f.gpu_procs_after)
        until = ""
        if inc.ts is not None and isinstance(last, datetime):
            until = f", the last of them until {last.astimezone(UTC):%H:%M:%S} UTC, {dur((last - inc.ts).total_seconds())} after the kill"
        return Recommendation(
            "verify_gpu_freed",
            "high",
            "GPU memory was left behind by dead processes",
            f"nvidia-smi still listed {len(pids)} process(es) of the killed unit after the kill "
            f"(pids {', '.join(map(str, pids[:8]))}{until}); their memory is not available to the next "
            "server (a restart in that time fails, e.g. SGLang's 'memory capacity is unbalanced'). "
            "Check `nvidia-smi --query-compute-apps=pid,used_memory --format=csv` and kill them, or "
            "reset or reboot the GPU if they persist.",
        )
    held = [g for g in f.gpu_release if g.freed is False]
    if held and gpu_workload(f):
        on = ", ".join(f"{g.gpu} ({g.min_after_mib} MiB)" for g in held[:8])
        others = [h for h in f.gpu_holders if h.first_ts is not None]
        if others:
            names = ", ".join(f"pid {h.pid}{f' ({h.name})' if h.name else ''}" for h in others)
            return Recommendation(
                "verify_gpu_freed",
                "medium",
                "GPU memory stayed in use after the kill — by another process",
                f"Used memory stayed up on {on} after the server died: {names} held it (see above), "
                "not the server's own processes.",
            )
        stuck = _left_running(f)
        return Recommendation(
            "verify_gpu_freed",
            "high",
            "GPU memory did not drop after the kill",
            (
                f"Used memory stayed up on {on} after the kill{_held_until(f)}. "
                + _left_words(f, stuck)
                + ("" if f.reboot is not None else "Verify with nvidia-smi before starting a replacement.")
            ).rstrip(),
            [SourceRef(e.source_id, e.line_no) for _, e in stuck[:1]],
        )
    freed = released(f)
    if freed and gpu_workload(f):
        worst = max((g.freed_after_s or 0.0) for g in freed)
        idle = idle_gpus(f)
        which = (
            f"All {len(freed)} of its GPUs ({f.unit_gpus.text}) fell"
            if f.unit_gpus
            else f"{gpu_names(freed)} fell"
            if idle
            else f"All {len(freed)} GPUs fell"
        )
        return Recommendation(
            "verify_gpu_freed",
            "info",
            "GPU memory was released",
            f"{which} to {_at_most(max(g.min_after_mib or 0 for g in freed))} MiB within "
            f"{worst:.0f} s of the kill (nvidia-smi samples)"
            + (f"; {gpu_names(idle)} held no memory before it" if idle else "")
            + ". Keep checking "
            "`nvidia-smi --query-compute-apps` before starting a fallback: a surviving child holds "
            "its GPU memory.",
        )
    if inc.cause != "signal" and gpu_workload(f) and f.reboot is None:  # a reboot frees every GPU
        return Recommendation(
            "verify_gpu_freed",
            "medium",
            "Check that GPU memory was freed",
            "No nvidia-smi samples cover the minutes after the kill, so it is unknown whether the GPUs "
            "were released. Run `nvidia-smi --query-compute-apps=pid,process_name,used_memory "
            "--format=csv` before starting a replacement, and keep a `--query-gpu … -l 5` loop running.",
        )
    return None


def _held_until(f: IncidentFacts) -> str:
    """Until when memory left behind was held: the reboot, or the sample that saw it freed
    (and the operator's command just before), or nothing known."""
    inc, late = f.incident, f.gpu_freed_late
    if late is None and f.reboot is not None:
        return f" until the host was rebooted (up again at {f.reboot.up_ts.astimezone(UTC):%H:%M:%S} UTC)"
    if late is None or inc.ts is None:
        return ""
    by = (
        f" (freed after the operator's command at {late.command.ts.astimezone(UTC):%H:%M:%S})"
        if late.command is not None
        else ""
    )
    return f" until {late.ts.astimezone(UTC):%H:%M:%S} UTC, {dur((late.ts - inc.ts).total_seconds())} after it{by}"


def _left_words(f: IncidentFacts, stuck: list[tuple[str, TimelineEvent]]) -> str:
    """What the unit's processes that outlived it did: stuck past systemd's final SIGKILL (for
    good, until a reboot, or for a while), or left running by KillMode=process/none."""
    if not stuck:
        return ""
    names, late = _some([name for name, _ in stuck]), f.gpu_freed_late
    if killed_in_vain(f):
        if late is not None:
            how = (
                "its final SIGKILL and held that memory until they were gone — stuck in the kernel for a "
                "while (in the GPU driver, as a rule); when one stays, only a GPU reset or a reboot frees "
                "its memory. "
            )
        elif f.reboot is not None:
            how = "its final SIGKILL — stuck in the kernel, usually in the GPU driver — and held that memory until the reboot. "
        else:
            how = (
                "its final SIGKILL — stuck in the kernel, usually in the GPU driver — and hold that memory; "
                "only a GPU reset or a reboot frees it. "
            )
        return f"systemd could not end {names}: they outlived {how}"
    tense = "held" if late is not None or f.reboot is not None else "hold"
    found = (
        ": the restarts found them still in the unit's cgroup, and a new server cannot fit beside them"
        if _restarts_found_them(f)
        else ""
    )
    return (
        f"systemd left {names} running when the unit stopped (with KillMode=process or none it signals "
        f"the main process alone), and they {tense} that memory{found}. Kill them (`kill -9` their pids; "
        "one that does not exit is stuck in the GPU driver, and only a GPU reset or a reboot frees its "
        "memory), and let systemd end them with the server: KillMode=control-group (the default) or mixed. "
    )


def _some(names: list[str], most: int = 6) -> str:
    """At most ``most`` names, and how many more.

    >>> _some(["a", "b"]), _some([str(i) for i in range(8)])
    ('a, b', '0, 1, 2, 3, 4, 5 and 2 more')
    """
    more = len(names) - most
    return ", ".join(names[:most]) + (f" and {more} more" if more > 0 else "")


def _left_running(f: IncidentFacts) -> list[tuple[str, TimelineEvent]]:
    """The unit's processes systemd reported still running after it stopped, or found still in
    its cgroup when it started again: ``pid (name)``, each once."""
    out = []
    seen = set()
    for pid, name, ev in left_processes(f):
        if pid not in seen:
            seen.add(pid)
            out.append((f"pid {pid} ({name})", ev))
    return out


def _restarts_found_them(f: IncidentFacts) -> bool:
    """Whether a start of the unit after the kill found its old processes in its cgroup."""
    return any(ev.kind == "left_over" for _pid, _name, ev in left_processes(f))


def _at_most(mib: float) -> str:
    """``0`` when nothing was left, else ``≤ N``."""
    return "0" if not mib else f"≤ {mib:,.0f}"


@rule("host_rebooted")
def host_rebooted(f: IncidentFacts) -> Recommendation | None:
    """The host booted again after the kill: hung in the kernel (hung-task warnings, processes
    that outlived systemd's final SIGKILL), or for a reason the data does not give."""
    inc, rb = f.incident, f.reboot
    if rb is None or inc.ts is None:
        return None
    up = f"{rb.up_ts.astimezone(UTC):%H:%M:%S} UTC, {dur((rb.up_ts - inc.ts).total_seconds())} after the kill"
    last = (
        f"; the previous boot's last line was at {rb.last_old_ts.astimezone(UTC):%H:%M:%S} UTC"
        if rb.last_old_ts is not None
        else ""
    )
    hung = [ev for ev in f.timeline.events if ev.kind == "hung_task" and inc.ts <= ev.ts < rb.up_ts]
    stuck = killed_in_vain(f)
    if hung or stuck:
        signs = []
        if hung:
            signs.append(
                f"the kernel reported tasks blocked for minutes (from {hung[0].ts.astimezone(UTC):%H:%M:%S} UTC)"
            )
        if stuck:
            signs.append("systemd could not end the unit's processes (they outlived its final SIGKILL)")
        return Recommendation(
            "host_rebooted",
            "high",
            "The host hung after the kill and was rebooted",
            f"After the kill {' and '.join(signs)}: processes stuck in the kernel, usually in the GPU "
            f"driver, which only a reboot ends. The host was up again at {up}{last}. Next time, save "
            "the evidence before the reboot (`nvidia-bug-report.sh`, `dmesg`, `journalctl -b`), and keep "
            "the journal across reboots (journald Storage=persistent) so the previous boot's kernel log "
            "is not lost. If a reboot is the accepted fix, let the node take it itself "
            "(kernel.hung_task_panic=1 with kernel.panic=30, or a hardware watchdog) and alert on the "
            "kernel's 'blocked for more than' messages, instead of waiting for an operator.",
            [SourceRef(*rb.at)] + [SourceRef(ev.source_id, ev.line_no) for ev in hung[:1]],
        )
    return Recommendation(
        "host_rebooted",
        "medium",
        "Find out why the host rebooted",
        f"The host was rebooted after the kill: up again at {up}{last}. Nothing in the data says "
        "whether an operator, a watchdog or a crash did it: look at `journalctl -b -1 -n 100` and "
        "`last -x reboot`, and keep the journal across reboots (journald Storage=persistent).",
        [SourceRef(*rb.at)],
    )


@rule("health_check_backoff")
def health_check_backoff(f: IncidentFacts) -> Recommendation | None:
    # SGLang's own warmup asks /get_model_info once; the operator's poller is the path asked most
    by_path: dict[str, list[dict[str, object]]] = {}
    for p in f.polls:
        by_path.setdefault(str(p["path"]), []).append(p)
    polls = max(by_path.values(), key=len, default=[])
    if len(polls) < 2:
        return None
    path = str(polls[0]["path"])
    times = [p["ts"] for p in polls if isinstance(p["ts"], datetime)]
    gaps = [(b - a).total_seconds() for a, b in pairwise(times)]
    interval = median(gaps) if gaps else 0.0
    ready = f.incident.recovered_ts

    def status(p: dict[str, object]) -> int:
        return int(str(p["status"] or 0))

    def before_ready(p: dict[str, object]) -> bool:
        ts = p["ts"]
        return ready is None or (isinstance(ts, datetime) and ts < ready)

    early = [p for p in polls if before_ready(p)]
    not_ready = sum(1 for p in early if status(p) >= 500)
    early_ok = [p for p in early if 200 <= status(p) < 300]
    first_ok = next((p for p in polls if 200 <= status(p) < 300 and not before_ready(p)), None)
    unit = f.incident.recovery_unit
    seen = (
        f"{len(polls)} readiness polls of {path} reached {unit}, {interval:.0f} s apart: "
        f"{not_ready} answered 5xx before it was ready"
    )
    unseen = (
        "Polls made before its HTTP server listened (near the end of the load) are refused and leave "
        "no line in its log, so the log cannot show them."
    )
    alert = "alert when a load exceeds the unit's p90 load time"
    refs = [SourceRef(int(str(p["source_id"])), int(str(p["line_no"]))) for p in polls[:1]]
    if early_ok:
        p = early_ok[0]
        ts = p["ts"]
        when = f"{ts.astimezone(UTC):%H:%M:%S}" if isinstance(ts, datetime) else "?"
        ahead = (
            f", {(ready - ts).total_seconds():.0f} s before the server was ready"
            if ready and isinstance(ts, datetime)
            else ""
        )
        return Recommendation(
            "health_check_backoff",
            "low",
            f"Make the readiness check parse {path}",
            f"{seen}, and {len(early_ok)} got a {status(p)} already (the first at {when}{ahead}). {unseen} "
            "A 2xx from the port is not readiness here: parse the JSON and wait until it lists the "
            f"expected model id, keep the interval short, and {alert}.",
            [SourceRef(int(str(p["source_id"])), int(str(p["line_no"])))],
            action=f"Change the readiness poller to parse {path}",
        )
    tail = " and none answered 2xx before it"
    if first_ok is not None and ready is not None and isinstance(first_ok["ts"], datetime):
        lag = (first_ok["ts"] - ready).total_seconds()
        tail += f"; the first 2xx came at {first_ok['ts'].astimezone(UTC):%H:%M:%S}, " + (
            f"{lag:.0f} s after the server was ready" if lag >= 1 else "as the server became ready"
        )
    return Recommendation(
        "health_check_backoff",
        "low",
        "Keep the readiness poll short and alert on slow loads",
        f"{seen}{tail}: the status code was a correct readiness signal. {unseen} "
        f"A poll interval adds up to its length to the outage: keep it short, and {alert}.",
        refs,
        action=f"Alert when {unit} takes longer than its p90 load time to be ready",
    )


@rule("load_regression")
def load_regression(f: IncidentFacts) -> Recommendation | None:
    for load, stats in ((f.incident.recovery_load, f.recovery_loads), (f.incident.killed_load, f.unit_loads)):
        if load is None or stats is None:
            continue
        if is_regression(load, stats):
            med = median([ld.load_s for ld in stats.ready if ld is not load and ld.load_s is not None])
            return Recommendation(
                "load_regression",
                "medium",
                f"{load.unit} loaded much slower than usual",
                f"This load took {dur(load.load_s)} against a median of {dur(med)} for {load.unit}; "
                "check the weight phase (storage or page cache cold after the kill) before relying on "
                "the usual load time.",
            )
    return None


@rule("restart_loop")
def restart_loop(f: IncidentFacts) -> Recommendation | None:
    inc = f.incident
    limit = [
        ev
        for ev in f.timeline.events
        if ev.unit == inc.unit
        and ev.origin == "systemd"
        and ev.kind == "start_limit_hit"
        and ev.ts >= f.timeline.kill_ts
    ]
    if limit and inc.recovered_ts is None:
        first = limit[0]
        return Recommendation(
            "restart_loop",
            "high",
            f"{inc.unit} failed every restart until systemd gave up",
            f"After {inc.restart_count or 'several'} automatic restart(s) systemd stopped trying at "
            f"{first.ts.astimezone(UTC):%H:%M:%S} UTC (start request repeated too quickly: the start "
            "limit, StartLimitBurst=/StartLimitIntervalSec=). Every attempt failed the same way: "
            "restarting cannot fix it — remove the cause (the first failure above) before the next start.",
            [SourceRef(first.source_id, first.line_no)],
        )
    if inc.kills_last_hour < 1:
        return None
    return Recommendation(
        "restart_loop",
        "high",
        f"{inc.unit} is in a kill/restart loop",
        f"{inc.kills_last_hour + 1} kills of {inc.unit} within an hour. Stop automatic restarts "
        "(systemctl stop, or Restart=no) and change the configuration or the load before the next start.",
    )


@rule("stop_timeout")
def stop_timeout(f: IncidentFacts) -> Recommendation | None:
    inc = f.incident
    if inc.cause != "timeout" or inc.ts is None:
        return None
    lb = f.last_batch
    running = (
        f", {lb['running_req']} requests still running at its last batch line,"
        if lb and lb.get("running_req")
        else ""
    )
    if f.stop_ts is not None and f.stop_at is not None:
        waited = (inc.ts - f.stop_ts).total_seconds()
        detail = (
            f"systemd began stopping {inc.unit} at {f.stop_ts.astimezone(UTC):%H:%M:%S} UTC (SIGTERM: the server "
            f"stopped taking requests then and drained){running} and killed it {dur(waited)} later, when "
            "TimeoutStopSec= ran out. The outage began at the SIGTERM, not at the kill. Raise "
            "TimeoutStopSec= above the longest drain you accept, or bound the drain (shorter requests, "
            "a smaller --max-running-requests) so a stop ends by itself."
        )
        refs = [SourceRef(*f.stop_at)]
    else:
        detail = (
            f"systemd killed {inc.unit} when a start or stop timeout ran out (TimeoutStartSec= / "
            "TimeoutStopSec=). A model load takes minutes: TimeoutStartSec= must exceed the longest "
            "load (or use Type=exec / notify with EXTEND_TIMEOUT_USEC), and TimeoutStopSec= the "
            "longest drain."
        )
        refs = []
    return Recommendation(
        "stop_timeout", "high", "systemd's timeout ended the service, not a crash", detail, refs
    )


@rule("gpu_fault")
def gpu_fault(f: IncidentFacts) -> Recommendation | None:
    """A GPU failed before the death (cause ``gpu_fault``): drain, reset, check — no restart."""
    inc = f.incident
    if inc.cause != "gpu_fault":
        return None
    xid = next((e for e in inc.evidence if e.kind == "xid"), None)
    if xid is None:
        return None
    code = int(xid.raw.get("xid") or 0)
    bus = xid.raw.get("bus_id")
    where = f"GPU {bus}" if bus else "the GPU"
    stuck = [g for g in f.gpu_release if g.freed is False]
    held = (
        f" Memory stayed in use on {', '.join(g.gpu for g in stuck[:4])} after the death: a "
        "process stuck in the driver holds it, and only a GPU reset or a reboot frees it."
        if stuck
        else ""
    )
    at = xid.ts.astimezone(UTC).strftime("%H:%M:%S") if xid.ts else "an unknown time"
    if f.fault_gpu_gone is not None:
        last, rest = f.fault_gpu_gone
        held += (
            f" nvidia-smi stopped listing it after {last.astimezone(UTC):%H:%M:%S} UTC while the other "
            f"GPUs went on until {rest.astimezone(UTC):%H:%M:%S} UTC: the driver no longer reaches it."
        )
    return Recommendation(
        "gpu_fault",
        "high",
        f"A GPU failed: take {where} out of service before serving from it again",
        f"The NVIDIA driver reported Xid {code} ({GPU_FAULT_XIDS.get(code, 'a GPU fault')}) on {where} "
        f"at {at} UTC. A restart on this host loads onto the same GPU and fails the same way (an "
        f"automatic one is not advised here).{held} Drain the host, then reset the GPU (`nvidia-smi -r`, "
        "with no process on it) or reboot, and check it (`nvidia-smi -q -d ECC,PAGE_RETIREMENT,"
        "ROW_REMAPPER`, the kernel log's Xid lines) before serving from it again; an Xid 79, 48, "
        "94/95 or 119 that comes back after a reset is for the vendor. Meanwhile serve from another "
        "host, or from GPUs of this one that nvidia-smi lists healthy and with no stuck process.",
        [xid.ref],
    )


@rule("server_error")
def server_error(f: IncidentFacts) -> Recommendation | None:
    """The server stopped on its own error (cause ``crash``): the traceback is the lead, not
    memory settings."""
    inc = f.incident
    if inc.cause != "crash":
        return None
    lines = [e for e in inc.evidence if e.kind.startswith("server_") and e.kind != "server_sigquit"]
    if any(e.kind == "server_watchdog" or "collective operation timeout" in e.detail for e in lines):
        nccl = not any(e.kind == "server_watchdog" for e in lines)
        return Recommendation(
            "server_error",
            "high",
            "The server hung until NCCL's watchdog ended it"
            if nccl
            else "The server hung until SGLang's watchdog ended it",
            (
                "A collective (all-gather, all-reduce) waited past NCCL's timeout, so PyTorch's "
                "watchdog aborted the process. "
                if nccl
                else "No step finished within --watchdog-timeout, so SGLang killed its own processes. "
            )
            + "A hang "
            "like this is a collective waiting on a rank that stopped (NCCL: run with NCCL_DEBUG=INFO; "
            "look for one rank's error before the others'), a GPU that stopped answering (the kernel "
            "log's Xid lines) or a step legitimately slower than the timeout (then raise it). "
            "Restarting helps only once the stuck rank's cause is gone.",
            [e.ref for e in lines[:2]],
        )
    return Recommendation(
        "server_error",
        "high",
        "The server stopped on its own error: fix the error, not the memory settings",
        "Nothing killed it and no memory ran out, so memory limits and --mem-fraction-static are "
        "not the fix. The exception and the frames of the traceback quoted above name what failed "
        "(a model, a kernel, a feature such as speculative decoding or the overlap scheduler); if "
        "the same traceback comes at every start it is deterministic — turn that feature off or "
        "change the version (search SGLang's issues for the exception line) — and a restart only "
        "repeats it; a one-off (a network or NCCL blip) is what Restart= is for.",
        [e.ref for e in lines[:2]],
    )


@rule("hicache_host_memory")
def hicache_host_memory(f: IncidentFacts) -> Recommendation | None:
    """Host RAM ran out (or the unit's limit was reached) after the run's hierarchical KV cache
    took its host pools: size them."""
    inc = f.incident
    if inc.cause not in HOST_CAUSES or not f.hicache or inc.ts is None:
        return None
    total = sum(float(r["gb"] or 0) for r in f.hicache)
    sizes = sorted({float(r["gb"] or 0) for r in f.hicache})
    each = f"{sizes[0]:,.2f} GB" if len(sizes) == 1 else f"{sizes[0]:,.2f}–{sizes[-1]:,.2f} GB"
    first = f.hicache[0]
    ago = dur((inc.ts - first["ts"]).total_seconds())
    limit = (
        f" against the unit's limit of {gib(inc.memcg_limit_kb)}"
        if inc.cause == "cgroup_oom" and inc.memcg_limit_kb
        else ""
    )
    return Recommendation(
        "hicache_host_memory",
        "high",
        "The hierarchical KV cache took the host memory",
        f"The killed run allocated {len(f.hicache)} host-memory pool{'s' if len(f.hicache) > 1 else ''} "
        f"for SGLang's hierarchical KV cache ({each} each, {total:,.0f} GB in all{limit}), the first "
        f"{ago} before the kill. --hicache-ratio sizes each rank's pool from its GPU KV pool; set "
        "--hicache-size (GB per rank) so that the ranks' pools plus the server's own host memory "
        "fit the host (or the unit's MemoryMax=), or start without --enable-hierarchical-cache.",
        [SourceRef(int(first["source_id"]), int(first["line_no"]))],
    )


@rule("find_the_signal")
def find_the_signal(f: IncidentFacts) -> Recommendation | None:
    if f.incident.cause != "signal":
        return None
    if f.undated_kills:
        k = f.undated_kills[0]
        who = f"pid {k['victim_pid']} ({k['victim_comm']})" if k["victim_pid"] is not None else "a process"
        return Recommendation(
            "find_the_signal",
            "high",
            "An OOM kill of this unit has no time: most likely this one",
            f"No OOM record is dated at this kill, but the kernel recorded an OOM kill of {who} in "
            f"{f.incident.unit}'s cgroup whose time could not be told: its stamps count seconds since a "
            "boot that no journal given dates (a dmesg saved before a reboot). Ingest that boot's journal "
            "(`journalctl -b -1 -o export`, or the kern.log of those days) or give --boot-time with that "
            "boot's start, and build again: the kill is then dated, and the report tells what ran out.",
            [SourceRef(int(k["source_id"]), int(k["line_no"]))],
        )
    return Recommendation(
        "find_the_signal",
        "medium",
        "Find who sent the signal",
        "No OOM killer recorded this kill. Look for an operator command, a watchdog "
        "(systemd WatchdogSec=, SGLang's --watchdog-timeout) or a deployment tool in the same "
        "minute; the timeline lists the systemd and operator events around it.",
    )


def _action(rec: Recommendation, f: IncidentFacts) -> str | None:
    unit = unit_words(f.incident)
    actions = {
        "host_ram_not_gpu": f"Find what grows in {unit}'s host memory under load before starting it again",
        "bound_queue": f"Set --max-queued-requests and --max-running-requests on {unit}",
        "speculative_gpu_settings": f"Lower the GPU memory settings of {unit} and test under peak load",
        "gpu_headroom": f"Lower the GPU memory settings of {unit} and test under peak load",
        "fallback_autoregressive": (
            f"Write {f.incident.fallback_unit} into the runbook as the fallback for {unit}, with its load time"
        ),
        "unit_memory_limits": f"Review {memory_limit_words(f.incident)}",
        "restart_policy": (
            f"Decide the restart policy (--restart) of {unit}"
            if is_container(f.incident.unit)
            else f"Decide Restart=/OnFailure= for {unit}"
        ),
        "reset_failed": f"Run `systemctl reset-failed {unit}` before its next start",
        "verify_gpu_freed": "Check `nvidia-smi --query-compute-apps` before starting a replacement",
        "health_check_backoff": "Change the readiness poller to parse /v1/models",
        "load_regression": "Find why the load was slower than usual",
        "restart_loop": f"Stop the restart loop of {unit}",
        "find_the_signal": (
            "Date the undated OOM record (ingest that boot's journal or give --boot-time) and build again"
            if f.undated_kills
            else "Find the process or person that sent the signal"
        ),
        "gpu_held_by_another_process": "Free the GPUs of other processes before starting the server",
        "stop_timeout": f"Set TimeoutStopSec=/TimeoutStartSec= of {unit} to its longest drain and load",
        "gpu_fault": "Drain the host, then reset and check the failed GPU before it serves again",
        "server_error": f"Find the error that stopped {unit} in its traceback and fix it before the next start",
        "hicache_host_memory": f"Set --hicache-size of {unit} so its host pools fit under the memory limit",
        "host_rebooted": (
            "Keep the journal across reboots, and decide whether a hung node reboots itself"
            if rec.severity == "high"
            else "Find out who or what rebooted the host"
        ),
    }
    if rec.severity == "info":
        return None
    other = _bigger_consumer(f)
    if rec.rule == "host_ram_not_gpu" and other is not None:
        return f"Cap or move {other.name}, the host's largest memory user, and find what grows in {unit}"
    if rec.rule == "host_ram_not_gpu" and f.incident.cause in HOST_CAUSES and _while_loading(f):
        return f"Find what {unit} holds in host memory while it loads before starting it again"
    if rec.rule == "host_ram_not_gpu" and f.incident.cause == "gpu_oom":
        # another process's memory is freed, not the server's settings lowered (and a settings
        # rule of its own says which ones)
        return None if f.gpu_holders or gpu_headroom(f) else actions["speculative_gpu_settings"]
    if rec.rule == "verify_gpu_freed" and _left_running(f) and not killed_in_vain(f):
        return f"Set KillMode=control-group (or mixed) on {unit}, so its processes end with it"
    if rec.rule == "verify_gpu_freed" and f.gpu_holders:
        return None  # the holders' own action says it
    if rec.rule == "verify_gpu_freed" and f.reboot is not None:
        return None  # the reboot freed it
    return actions.get(rec.rule)


def recommend(facts: IncidentFacts) -> list[Recommendation]:
    out = []
    actions: set[str] = set()
    for _name, fn in RULES:
        rec = fn(facts)
        if rec is not None:
            rec.action = rec.action or _action(rec, facts)
            if rec.action in actions:
                rec.action = None  # two findings, one thing to do: listed once
            elif rec.action:
                actions.add(rec.action)
            out.append(rec)
    order = {"high": 0, "medium": 1, "low": 2, "info": 3}
    out.sort(key=lambda r: order.get(r.severity, 9))
    return out
