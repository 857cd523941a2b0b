"""What the reports' figures show, as plain data: built from an incident's facts where the analysis
ran, drawn by :mod:`postmortem.plots` where matplotlib is (the drawing process ``build`` forks).

The data holds exactly what is drawn — times already in the report's zone, sizes in GiB, labels
as printed — so the drawing process imports neither the analysis nor DuckDB nor the report
templates (half its start-up before), and a figure's digest (:mod:`postmortem.figkeys`) covers
everything the figure depends on besides the plotting code. Standard library only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .analysis.facts import IncidentFacts
    from .analysis.model import Load
    from .engines import Engine

GIB = 1024.0
#: a bucket whose lowest GPU sample is this far (MiB) below its highest gets its range drawn
DIP_MIB = 2048.0

#: a series: times (naive, in the report's zone) and values
Series = tuple[list[datetime], list[float]]


@dataclass
class MemoryData:
    """The memory figure: host RAM, per-GPU memory and KV-cache usage, the kill and recovery."""

    title: str
    zone_name: str
    unit: str | None
    #: panels, in order: ``host``, ``gpu``, ``kv`` (those with something to show)
    panels: list[str]
    #: how the figure names the killed server's engine (its serving panel's title)
    engine_label: str = "Server"
    host_used: Series | None = None  # GiB in use (earlyoom: total − available)
    host_total_gib: float | None = None
    memcg: tuple[datetime, float] | None = None  # the unit cgroup's usage at the kill, GiB
    memcg_limit_gib: float | None = None
    #: who the cgroup and its limit are: "unit", "container" or "pod" (the kernel's cgroup)
    owner: str = "unit"
    #: the unit's memory up to the kill, estimated as host RAM in use less what the rest of the
    #: host used right after the kill (``rest_gib``): drawn against the unit's limit, which the
    #: host-wide line cannot be compared with
    unit_est: Series | None = None
    rest_gib: float | None = None
    gpus: list[tuple[str, Series]] = field(default_factory=list)  # GiB used, per GPU, in order
    #: per GPU (as ``gpus``), the lowest sample of each bucket where it is well below the highest
    #: (a short drop hidden in the bucket's maximum); the buckets' length in seconds
    gpu_lows: list[tuple[str, Series]] = field(default_factory=list)
    bucket_s: float | None = None
    gpu_total_gib: float | None = None
    kv_usage: Series | None = None
    queued: Series | None = None
    #: the killed server's running requests (drawn beside host RAM: what the memory grew with)
    running: Series | None = None
    kill: datetime | None = None
    #: what the kill's line is called: "kill", "crash" or "failure" (analysis.summary.death_noun)
    kill_label: str = "kill"
    ready: datetime | None = None
    #: when the load that brought service back started (its label names the unit), and the
    #: automatic restart begun in between, if any (the memory after the kill comes from them)
    restart_start: datetime | None = None
    recovery_start: tuple[datetime, str] | None = None
    #: the GPU fault (NVIDIA Xid) the incident's cause names, with its label
    gpu_fault: tuple[datetime, str] | None = None
    #: the host booted again after the kill (the new boot's start or first line)
    reboot: datetime | None = None


@dataclass
class LoadBar:
    """One start of a service: its phases (seconds, name, colour) and the rest of its load."""

    label: str
    phases: list[tuple[float, str, str]]
    load_s: float
    outcome: str
    framed: bool


@dataclass
class LoadsData:
    """The load-times figure: each start's load split into phases."""

    bars: list[LoadBar]
    zone_name: str = "UTC"  # the zone of the start times in the labels
    #: what the frames mark, for the title: "the killed instance and the recovery", "the
    #: crashed instance", … ("" when no bar is framed)
    framed_words: str = ""


PHASE_COLORS = (
    ("weight_load_s", "weights", "#1565c0"),
    ("draft_weight_load_s", "draft weights", "#64b5f6"),
    ("kv_alloc_s", "KV cache", "#8e24aa"),
    ("cuda_graph_s", "CUDA graphs", "#ef6c00"),
    ("draft_cuda_graph_s", "draft CUDA graphs", "#ffb74d"),
)


def local(ts: datetime, zone: tzinfo) -> datetime:
    """``ts`` as the wall-clock time of ``zone`` (naive: how the figure's axis reads it)."""
    return ts.astimezone(zone).replace(tzinfo=None)


def _series(points: Sequence[tuple[datetime, float]], zone: tzinfo) -> Series:
    return [local(t, zone) for t, _ in points], [v for _, v in points]


def gpu_sort(label: str) -> tuple[int, str]:
    """GPU labels in card order (``GPU 2`` before ``GPU 10``), others after."""
    tail = label.rsplit(" ", 1)[-1]
    return (int(tail), label) if tail.isdigit() else (10_000, label)


def _end_of(facts: IncidentFacts) -> str:
    """What the figure calls the moment the process ended (kill, crash, failure)."""
    return facts.timeline.ended


def engine_of_facts(facts: IncidentFacts) -> Engine:
    """The killed server's engine, as the rules' words name it."""
    from .analysis.rules.words import engine_of

    return engine_of(facts)


def memory_data(facts: IncidentFacts, zone: tzinfo, title: str = "") -> MemoryData | None:
    """What the memory figure of ``facts`` shows (None: nothing to show)."""
    tl, inc = facts.timeline, facts.incident
    if tl.start.astimezone(zone).utcoffset() != tl.end.astimezone(zone).utcoffset():
        # the clocks changed in the window (summer time began or ended): on the host's wall
        # clock the hour repeats or is skipped, and a line drawn in it runs backwards — in UTC
        zone = UTC
    have_host = bool(tl.host_points) or inc.memcg_usage_kb is not None
    have_gpu = bool(tl.per_gpu)
    have_kv = any(b.token_usage is not None for b in tl.buckets)
    panels = [p for p, ok in (("host", have_host), ("gpu", have_gpu), ("kv", have_kv)) if ok]
    if not panels:
        return None
    data = MemoryData(
        title=title,
        zone_name=str(getattr(zone, "key", "UTC")),
        unit=inc.unit or "no unit named",
        panels=panels,
        engine_label=engine_of_facts(facts).label,
        kill=local(inc.ts, zone) if inc.ts is not None else None,
        kill_label=_end_of(facts),
        ready=local(inc.recovered_ts, zone) if inc.recovered_ts is not None else None,
    )
    rec = inc.recovery_load
    if rec is not None and rec.start_ts is not None and inc.ts is not None and rec.start_ts > inc.ts:
        data.recovery_start = (local(rec.start_ts, zone), f"{rec.unit or 'service'} started")
    restart = next((r["ts"] for r in facts.restarts if isinstance(r.get("ts"), datetime)), None)
    refused = restart is not None and any(
        ev.kind == "start_limit_hit" and ev.unit == inc.unit and 0 <= (ev.ts - restart).total_seconds() <= 5
        for ev in tl.events
    )  # the start limit turned it down: nothing started
    if (
        restart is not None
        and not refused
        and (rec is None or rec.start_ts is None or restart < rec.start_ts)
    ):
        data.restart_start = local(restart, zone)
    if facts.reboot is not None:
        data.reboot = local(facts.reboot.up_ts, zone)
    xid = next((e for e in inc.evidence if e.kind == "xid" and e.ts is not None), None)
    if xid is not None and xid.ts is not None:
        bus = xid.raw.get("bus_id")
        data.gpu_fault = (local(xid.ts, zone), f"Xid {xid.raw.get('xid')}" + (f" (GPU {bus})" if bus else ""))
    if tl.host_points:
        data.host_used = _series([(t, (tot - a) / GIB) for t, a, tot in tl.host_points], zone)
        data.host_total_gib = max(tot for _, _, tot in tl.host_points) / GIB
    if inc.memcg_usage_kb is not None and inc.ts is not None:
        data.memcg = (local(inc.ts, zone), inc.memcg_usage_kb / 1024 / 1024)
        data.memcg_limit_gib = (inc.memcg_limit_kb or 0) / 1024 / 1024 or None
        from .analysis.model import limit_owner

        data.owner = limit_owner(
            inc.unit, (facts.oom or {}).get("oom_memcg"), boxed=inc.container is not None
        )
        est = unit_estimate(
            [(t, (tot - a) / GIB) for t, a, tot in tl.host_points], inc.ts, inc.memcg_usage_kb / 1024 / 1024
        )
        if est is not None:
            points, data.rest_gib = est
            data.unit_est = _series(points, zone)
    from .analysis.facts import gpu_label_text

    for labels in gpu_groups(tl.per_gpu, tl.per_gpu_low):
        label, first = gpu_label_text(labels), labels[0]
        data.gpus.append((label, _series([(t, u / GIB) for t, u, _ in tl.per_gpu[first]], zone)))
        lows = tl.per_gpu_low.get(first, [])
        if any(hi - lo > DIP_MIB for (_, hi, _), (_, lo) in zip(tl.per_gpu[first], lows, strict=False)):
            data.gpu_lows.append((label, _series([(t, lo / GIB) for t, lo in lows], zone)))
    if data.gpu_lows:
        data.bucket_s = tl.bucket_s
    totals = [tot for pts in tl.per_gpu.values() for _, _, tot in pts if tot]
    data.gpu_total_gib = max(totals) / GIB if totals else None
    if have_kv:
        data.kv_usage = _series(
            [(b.ts, b.token_usage) for b in tl.buckets if b.token_usage is not None], zone
        )
        queued = [(b.ts, float(b.queue_req)) for b in tl.buckets if b.queue_req is not None]
        data.queued = _series(queued, zone) if queued else None
    running = [(b.ts, float(b.running_req)) for b in tl.buckets if b.running_req is not None]
    if running and "host" in panels:
        data.running = _series(running, zone)
    return data


#: two GPUs whose buckets differ by at most this much (MiB) anywhere behave the same: one line
SAME_GPU_MIB = 512.0


def gpu_groups(
    per_gpu: dict[str, list[tuple[datetime, float, float]]], lows: dict[str, list[tuple[datetime, float]]]
) -> list[list[str]]:
    """The GPUs in card order, grouped by behaviour: GPUs whose every bucket (highest and lowest
    sample) is within :data:`SAME_GPU_MIB` of the group's first GPU's share one line — eight
    identical lines of a TP8 server are one.

    >>> from datetime import UTC, datetime
    >>> t = datetime(2025, 1, 1, tzinfo=UTC)
    >>> series = {f"GPU {i}": [(t, 1000.0 + i, 80000.0)] for i in range(3)} | {"GPU 3": [(t, 9000.0, 80000.0)]}
    >>> gpu_groups(series, {})
    [['GPU 0', 'GPU 1', 'GPU 2'], ['GPU 3']]
    """
    groups: list[list[str]] = []
    for label in sorted(per_gpu, key=gpu_sort):
        for group in groups:
            if _same(per_gpu[group[0]], per_gpu[label], lows.get(group[0], []), lows.get(label, [])):
                group.append(label)
                break
        else:
            groups.append([label])
    return groups


def _same(
    a: list[tuple[datetime, float, float]],
    b: list[tuple[datetime, float, float]],
    lows_a: list[tuple[datetime, float]],
    lows_b: list[tuple[datetime, float]],
) -> bool:
    if [t for t, _, _ in a] != [t for t, _, _ in b] or [t for t, _ in lows_a] != [t for t, _ in lows_b]:
        return False
    highs = all(abs(x - y) <= SAME_GPU_MIB for (_, x, _), (_, y, _) in zip(a, b, strict=True))
    return highs and all(abs(x - y) <= SAME_GPU_MIB for (_, x), (_, y) in zip(lows_a, lows_b, strict=True))


#: how long after the kill a host sample still tells what the rest of the host used
REST_WITHIN_S = 300.0


def unit_estimate(
    used: Sequence[tuple[datetime, float]], kill: datetime, at_kill_gib: float
) -> tuple[list[tuple[datetime, float]], float] | None:
    """The killed unit's memory up to the kill, estimated from host RAM in use (GiB): less what
    the rest of the host used at the first sample after the kill (within :data:`REST_WITHIN_S`),
    taken as constant. Returned with that rest only when the estimate at the last sample before
    the kill agrees with the kernel's own count of the cgroup at the kill (within 5 %, at least
    4 GiB) — otherwise the rest of the host changed too much for the estimate to mean anything.

    >>> from datetime import UTC, timedelta
    >>> k = datetime(2025, 5, 25, 20, 17, 19, tzinfo=UTC)
    >>> pts = [(k - timedelta(minutes=2), 880.0), (k - timedelta(seconds=2), 894.0), (k + timedelta(seconds=58), 250.0)]
    >>> series, rest = unit_estimate(pts, k, 640.0)
    >>> rest, [v for _, v in series]
    (250.0, [630.0, 644.0])
    >>> unit_estimate(pts, k, 400.0) is None  # 644 GiB estimated, the kernel counted 400
    True
    """
    before = [(t, v) for t, v in used if t <= kill]
    after = [(t, v) for t, v in used if t > kill and (t - kill).total_seconds() <= REST_WITHIN_S]
    if not before or not after:
        return None
    rest = min(after, key=lambda p: p[0])[1]
    series = [(t, v - rest) for t, v in before]
    if abs(series[-1][1] - at_kill_gib) > max(0.05 * at_kill_gib, 4.0):
        return None
    return series, rest


def loads_data(
    loads: Sequence[Load],
    zone: tzinfo,
    framed: tuple[int | None, int | None] = (None, None),
    cold: Sequence[int] = (),
    ended: str = "kill",
) -> LoadsData | None:
    """What the load-times figure shows (None: no load with a load time); ``framed``: the load
    ids of the ended run and of the recovery (None: none); ``cold``: the loads begun in a new
    boot after the kill (marked: a cold page cache); ``ended``: what ended the run
    (:attr:`Timeline.ended`)."""
    from .analysis.model import ended_word

    bars = []
    shown = {ld.load_id for ld in loads if ld.load_s is not None}
    what = [
        words
        for lid, words in zip(framed, (f"the {ended_word(ended)} instance", "the recovery"), strict=True)
        if lid is not None and lid in shown
    ]
    if framed[0] is not None and framed[0] == framed[1]:
        what = what[:1]
    for ld in loads:
        if ld.load_s is None:
            continue
        phases = [(v, name, color) for attr, name, color in PHASE_COLORS if (v := getattr(ld, attr))]
        who = ld.unit or "no unit named"
        label = f"{who}  {ld.start_ts.astimezone(zone):%m-%d %H:%M}" if ld.start_ts else who
        if ld.load_id in cold:
            label += "  (after reboot)"
        bars.append(LoadBar(label, phases, ld.load_s, ld.outcome, ld.load_id in framed))
    return LoadsData(bars, str(getattr(zone, "key", "UTC")), " and ".join(what)) if bars else None
