"""Load-time statistics over ``service_loads``: per unit and model, count, min, median, p90 and
max of ``load_s`` and each phase, the trend over time, and a regression flag."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from statistics import median

from .model import Load

PHASES = (
    "load_s",
    "weight_load_s",
    "draft_weight_load_s",
    "kv_alloc_s",
    "cuda_graph_s",
    "draft_cuda_graph_s",
)
REGRESSION_RATIO = 1.5
REGRESSION_MIN_S = 60.0


def percentile(values: Sequence[float], q: float) -> float | None:
    """Linear-interpolated percentile (``q`` in 0–100).

    >>> percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 90)
    9.1
    """
    data = sorted(values)
    if not data:
        return None
    if len(data) == 1:
        return float(data[0])
    pos = (len(data) - 1) * q / 100
    lo, hi = math.floor(pos), math.ceil(pos)
    return float(data[lo] + (data[hi] - data[lo]) * (pos - lo))


@dataclass
class PhaseStats:
    phase: str
    count: int
    min: float | None
    median: float | None
    p90: float | None
    max: float | None


@dataclass
class LoadStats:
    unit: str | None
    model_path: str | None
    speculative_algorithm: str | None
    loads: list[Load]
    phases: dict[str, PhaseStats] = field(default_factory=dict)
    host: str | None = None

    @property
    def ready(self) -> list[Load]:
        return [ld for ld in self.loads if ld.outcome == "ready" and ld.load_s is not None]

    @property
    def count(self) -> int:
        return len(self.ready)

    @property
    def median_load_s(self) -> float | None:
        return self.phases["load_s"].median if "load_s" in self.phases else None


def _stats(phase: str, values: list[float]) -> PhaseStats:
    return PhaseStats(
        phase,
        len(values),
        min(values) if values else None,
        median(values) if values else None,
        percentile(values, 90),
        max(values) if values else None,
    )


def load_statistics(loads: Sequence[Load]) -> list[LoadStats]:
    """Group loads by (host, unit, model) and summarise the ones that reached ready: a host's
    loads are its own (its disks, page cache and GPUs), not its fleet's.

    >>> from datetime import UTC, datetime
    >>> mk = lambda s: Load(1, "h", "u.service", datetime(2025, 1, 1, tzinfo=UTC), None, s, "ready", "/m", None, 1)
    >>> st = load_statistics([mk(500.0), mk(600.0), mk(570.0)])[0]
    >>> st.count, st.phases["load_s"].median, st.phases["load_s"].max
    (3, 570.0, 600.0)
    """
    groups: dict[tuple[str | None, str | None, str | None], list[Load]] = {}
    for ld in loads:
        groups.setdefault((ld.host, ld.unit, ld.model_path), []).append(ld)
    out = []
    for (host, unit, model), group in sorted(groups.items(), key=lambda kv: tuple(k or "" for k in kv[0])):
        group.sort(key=lambda ld: (ld.start_ts is None, ld.start_ts))
        algos = [ld.speculative_algorithm for ld in group if ld.speculative_algorithm]
        st = LoadStats(unit, model, algos[-1] if algos else None, group, host=host)
        ready = st.ready
        for phase in PHASES:
            values = [float(v) for ld in ready if (v := getattr(ld, phase)) is not None]
            if values:
                st.phases[phase] = _stats(phase, values)
        out.append(st)
    return out


def up_to(stats: LoadStats | None, until: datetime) -> LoadStats | None:
    """``stats`` of the loads that began no later than ``until``: an incident's report compares
    with the history it had, and does not change as later nights are ingested."""
    if stats is None:
        return None
    kept = [ld for ld in stats.loads if ld.start_ts is None or ld.start_ts <= until]
    if len(kept) == len(stats.loads):
        return stats
    if not kept:
        return None
    (st,) = load_statistics(kept)
    return st


def is_regression(load: Load, stats: LoadStats) -> bool:
    """A load far above its unit's median (1.5× and at least a minute more), judged against the
    other ready loads of the same unit and model."""
    if load.load_s is None:
        return False
    others = [ld.load_s for ld in stats.ready if ld is not load and ld.load_s is not None]
    if len(others) < 2:
        return False
    med = median(others)
    return load.load_s > med * REGRESSION_RATIO and load.load_s - med >= REGRESSION_MIN_S


def stats_for(unit: str | None, all_stats: Sequence[LoadStats], host: str | None = None) -> LoadStats | None:
    """The loads of ``unit`` on ``host`` (any host when it is None; a host-less load counts for
    every host): the model it loaded most often."""
    best = None
    for st in all_stats:
        if st.unit != unit or (host is not None and st.host is not None and st.host != host):
            continue
        if best is None or len(st.loads) > len(best.loads):
            best = st
    return best


def stats_of(
    load: Load | None, unit: str | None, all_stats: Sequence[LoadStats], host: str | None = None
) -> LoadStats | None:
    """The loads ``load`` is one of — its unit's, or those of its log's model when no unit is
    named for it (a server started by hand) — else :func:`stats_for` ``unit``: an incident's
    killed and recovery loads are in the statistics that describe them, whatever their unit.

    >>> from datetime import UTC, datetime
    >>> mk = lambda i, u: Load(i, "h", u, datetime(2025, 1, 1, tzinfo=UTC), None, 300.0, "ready", "/m", None, 1)
    >>> stats = load_statistics([mk(1, "u.service"), mk(2, None)])
    >>> stats_of(mk(2, None), "u.service", stats).unit is None, stats_of(None, "u.service", stats).unit
    (True, 'u.service')
    """
    if load is not None:
        for st in all_stats:
            if any(ld.load_id == load.load_id for ld in st.loads):
                return st
    return stats_for(unit, all_stats, host)
