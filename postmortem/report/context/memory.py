"""The incident report's memory section: its sentences and its table."""

from __future__ import annotations

from ...analysis.facts import IncidentFacts, UnitGpus, host_samples
from ...analysis.model import incident_end, is_container
from ...analysis.rules.words import engine_of
from ...lazyre import lazy_re
from ...text.formats import human, retraction_words, size_kb, size_mib
from .common import gib_mib, utc_text
from .types import MemoryRow


def _gpu_start_words(facts: IncidentFacts, span: str) -> str:
    """Where the first GPU figure of the window comes from: its start, or — nvidia-smi began
    later — its first sample."""
    tl, at = facts.timeline, facts.gpu_used_start_ts
    if at is None or (at - tl.start).total_seconds() <= 2 * tl.bucket_s:
        return f"at the start of {span}"
    return f"in the {human(tl.bucket_s)} from {utc_text(at)[11:]} UTC (nvidia-smi's first samples in {span})"


def _flat_words(facts: IncidentFacts) -> str:
    """What flat GPU memory before the kill means for the cause."""
    if facts.incident.cause == "gpu_oom":
        # the server takes its KV pool at start: used memory is flat by design, and a CUDA OOM
        # is an allocation outside the pool (activations, graphs) that the rest did not fit
        engine = engine_of(facts)
        fraction = engine.setting("gpu_memory_fraction").flag or "its memory fraction"
        return (
            f" — flat, as {engine.label} takes its memory pool at start: the CUDA OOM was an allocation "
            f"outside that pool, in the headroom {fraction} leaves."
        )
    return " — flat: the GPUs did not run out."


#: systemd's binary units (``7.8G`` is 7.8 GiB)
_SWAP_PEAK = lazy_re(r"([\d.]+)([KMGT]) memory swap peak")


def _last_sample_words(before_s: float | None, end: str, limit_pct: float | None = None) -> str:
    """When the last host-memory sample was: just before the end, (earlyoom prints every few
    minutes) how long before it (``before_s``: :attr:`IncidentFacts.host_avail_before_s`), or
    earlyoom's limit at the kill.

    >>> _last_sample_words(None, "kill"), _last_sample_words(235.0, "kill")
    (' just before the kill', ' at its last sample, 3 min 55 s before the kill')
    >>> _last_sample_words(None, "kill", 9.87)
    " at the kill (earlyoom's limit, 9.87 %)"
    """
    if limit_pct is not None:  # (the figure is said as "at most")
        return f" at the {end} (earlyoom's limit, {limit_pct:g} %)"
    if before_s is not None:
        return f" at its last sample, {human(before_s)} before the {end}"
    return f" just before the {end}"


def _busiest(gpus: UnitGpus) -> str:
    """Which GPU the memory figures are of: the busiest of the server's, or its only one."""
    return f"its {gpus.text}" if len(gpus.indexes) == 1 else f"busiest of its {gpus.text}"


def silent_text(seconds: float) -> str:
    """A gap between two printed times: under a minute to a tenth of a second, since both ends
    are shown to the second and a rounded ``5 s`` between 20:17:15 and 20:17:19 reads as wrong.

    >>> silent_text(4.604), silent_text(75.2)
    ('4.6 s', '1 min 15 s')
    """
    return f"{seconds:.1f} s" if seconds < 60 else human(seconds)


def memory_rows_note(facts: IncidentFacts, max_rows: int = 14) -> str:
    """How to read the memory table: what a row covers and what its retractions count."""
    before = facts.timeline.before_kill()
    if not before:
        return ""
    step = max(1, len(before) // (max_rows - 1))
    b = facts.timeline.bucket_s
    end = incident_end(facts.incident)
    every = f", a row every {human(step * b)} and the last before the {end}" if step > 1 else ""
    return (
        f"each row is the {human(b)} from its time — the highest value in it, host RAM as of its last "
        f"sample{every}; retractions are those since the previous row, up to the end of this row's {human(b)}"
    )


def memory_rows(facts: IncidentFacts, max_rows: int = 14) -> list[MemoryRow]:
    before = facts.timeline.before_kill()
    if not before:
        return []
    step = max(1, len(before) // (max_rows - 1))
    chosen = before[::step]
    if chosen[-1] is not before[-1]:
        chosen.append(before[-1])
    out = []
    host_last: float | None = None
    pending_retractions = 0
    for b in facts.timeline.buckets:
        if b.host_avail_mib is not None:
            host_last = b.host_avail_mib
        pending_retractions += b.retractions
        if b in chosen:
            gpus = b.gpus or 1
            out.append(
                MemoryRow(
                    utc=utc_text(b.ts),
                    host_avail_gib=gib_mib(b.host_avail_mib if b.host_avail_mib is not None else host_last),
                    gpu_used_gib=gib_mib(b.gpu_used_mib_max),
                    gpu_total_gib=gib_mib(b.gpu_total_mib_sum / gpus) if b.gpu_total_mib_sum else None,
                    token_usage=round(b.token_usage, 2) if b.token_usage is not None else None,
                    running=b.running_req,
                    queued=b.queue_req,
                    retractions=pending_retractions,
                )
            )
            pending_retractions = 0
    return out


def _growth_words(facts: IncidentFacts) -> str | None:
    """What grew before the kill, in one sentence: host RAM in use from the first sample to the
    last (earlyoom's last reading, then its limit at the kill: a bound), its rate at the end,
    and the running requests meanwhile."""
    pts = facts.host_used
    if len(pts) < 2:
        return None
    if facts.host_avail_limit_pct is not None:
        text = _limit_growth_words(facts)
    else:
        (t0, u0), (t1, u1), grew = pts[0], pts[-1], facts.host_growth_mib
        if grew is None:
            return None
        text = (
            f"Host RAM in use {'grew' if grew >= 0 else 'fell'} from {gib_mib(u0)} GiB ({utc_text(t0)[11:]} UTC) "
            f"to {gib_mib(u1)} GiB ({utc_text(t1)[11:]} UTC), {grew / 1024:+,.1f} GiB"
        )
    if facts.host_rate_mib_min is not None:
        rate = facts.host_rate_mib_min  # (as the Trigger says it: size_mib rounds it once)
        way = "rising" if rate >= 0 else "falling"
        least = "at least " if facts.host_avail_limit_pct is not None else ""
        text += f"; {way} {least}{size_mib(abs(rate))} a minute {_rate_span_words(facts)}"
    if facts.running_first is not None and facts.running_last is not None:
        text += f"; running requests went from {facts.running_first} to {facts.running_last} meanwhile"
    return text + "."


def _limit_growth_words(facts: IncidentFacts) -> str:
    """Host RAM in use up to earlyoom's last reading, then up to at least its limit at the kill;
    in all over the window when that bound says it grew."""
    pts = facts.host_used
    (t0, u0), (tr, ur), (tk, uk) = pts[0], pts[-2], pts[-1]
    after = facts.host_end_growth_mib or 0.0
    end = f"at least {gib_mib(uk)} GiB ({utc_text(tk)[11:]} UTC, earlyoom's limit), at least {after / 1024:+,.1f} GiB"
    before = facts.host_reading_growth_mib
    if before is None:  # one reading, then the limit
        return f"Host RAM in use grew from {gib_mib(u0)} GiB ({utc_text(t0)[11:]} UTC) to {end}"
    text = (
        f"Host RAM in use {'grew' if before >= 0 else 'fell'} from {gib_mib(u0)} GiB ({utc_text(t0)[11:]} UTC) "
        f"to {gib_mib(ur)} GiB ({utc_text(tr)[11:]} UTC, earlyoom's last reading), {before / 1024:+,.1f} GiB, "
        f"then to {end}"
    )
    grew = facts.host_growth_mib
    return text + (f": at least {grew / 1024:+,.1f} GiB over the window" if grew is not None else "")


def _rate_span_words(facts: IncidentFacts) -> str:
    """Over which span the rate was measured: the ten minutes up to the last sample, at the kill,
    or (it is an old reading) from their first sample to that reading."""
    frm = facts.host_rate_from
    if facts.host_avail_before_s is None or frm is None or not facts.host_used:
        return "over its last 10 minutes"
    return f"from {utc_text(frm)[11:]} to {utc_text(facts.host_used[-1][0])[11:]} UTC"


def memory_facts(facts: IncidentFacts) -> list[str]:
    inc = facts.incident
    end = incident_end(inc)
    out = []
    if inc.cause == "cgroup_oom" and inc.memcg_limit_kb:
        owner = "Container" if is_container(inc.unit) else "Unit"
        out.append(
            f"{owner} cgroup memory at the kill: {size_kb(inc.memcg_usage_kb)} of a {size_kb(inc.memcg_limit_kb)} "
            "limit (the kernel's `memory: usage … limit …` line)."
        )
    if facts.consumed is not None:
        swap = _SWAP_PEAK.search(str(facts.consumed["message"] or ""))
        out.append(
            f"The unit's memory peak over the run that was killed (systemd's `Consumed` line at its end): "
            f"{facts.consumed['memory_peak_bytes'] / 2**30:,.1f} GiB"  # (as systemd prints it)
            + (f", and {swap.group(1)} {swap.group(2)}iB of swap" if swap else "")
            + "."
        )
    oom = facts.oom or {}
    if oom.get("free_kb") is not None:
        out.append(f"Free host RAM in the kernel's Mem-Info at the kill: {size_kb(oom['free_kb'])}.")
    tl = facts.timeline
    span = f"the {round((tl.kill_ts - tl.start).total_seconds() / 60)} minutes before the {end}"
    if facts.host_avail_start_mib is not None and facts.host_avail_end_mib is not None:
        first = host_samples(facts.timeline)[0][0]
        out.append(
            f"Host RAM available (earlyoom): {gib_mib(facts.host_avail_start_mib)} GiB at "
            f"{utc_text(first)[11:]} UTC (its first sample in {span}), "
            + ("at most " if facts.host_avail_limit_pct is not None else "")
            + f"{gib_mib(facts.host_avail_end_mib)}"
            + (f" of {gib_mib(facts.host_total_mib)} GiB" if facts.host_total_mib else " GiB")
            + _last_sample_words(facts.host_avail_before_s, end, facts.host_avail_limit_pct)
            + "."
        )
    growth = _growth_words(facts)
    if growth:
        out.append(growth)
    if facts.gpu_used_start_mib is not None and facts.gpu_used_end_mib is not None:
        out.append(
            "GPU memory ("
            + (_busiest(facts.unit_gpus) if facts.unit_gpus else "busiest GPU")
            + f"): {gib_mib(facts.gpu_used_start_mib)} GiB {_gpu_start_words(facts, span)}, "
            f"{gib_mib(facts.gpu_used_end_mib)}"
            + (f" of {gib_mib(facts.gpu_total_mib)} GiB" if facts.gpu_total_mib else " GiB")
            + f" just before the {end}"
            + (_flat_words(facts) if facts.gpu_flat else ".")
        )
        if facts.unit_gpus:
            out.append(
                f"{inc.unit} ran on {facts.unit_gpus.text} of the host's {facts.unit_gpus.of} "
                f"({facts.unit_gpus.how}): the GPU figures here are of those alone."
            )
    if facts.token_usage_max is not None:
        out.append(
            f"KV-cache token usage peaked at {facts.token_usage_max:.2f}"
            + (f"; {retraction_words(facts.retractions, facts.retracted_reqs)}" if facts.retractions else "")
            + (f"; up to {facts.queue_max} requests queued." if facts.queue_max else ".")
        )
    v = inc.victim
    if v is not None and v.anon_rss_kb:
        out.append(
            f"The chosen victim {v.comm} (pid {v.pid}) held {size_kb(v.anon_rss_kb)} of anonymous memory."
        )
    return out
