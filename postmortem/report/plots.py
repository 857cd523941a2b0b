"""PNG figures for reports (matplotlib, Agg backend, no display needed)."""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Sequence
from datetime import datetime, tzinfo
from pathlib import Path
from typing import Any

import matplotlib
import matplotlib.dates as mdates
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from ..analysis.facts import IncidentFacts
from ..analysis.model import Load
from ..timeutil import UTC
from . import figkeys

KILL_COLOR = "#c62828"
READY_COLOR = "#2e7d32"
GIB = 1024.0


def _mark(ax: Any, ts: datetime | None, color: str, label: str | None, zone: tzinfo) -> None:
    if ts is None:
        return
    style = "-" if color == KILL_COLOR else "--"
    ax.axvline(_x(ts, zone), color=color, linewidth=1.6, linestyle=style, label=label)


def _x(ts: datetime, zone: tzinfo) -> float:
    return float(mdates.date2num(ts.astimezone(zone).replace(tzinfo=None)))  # type: ignore[no-untyped-call]


def _figure(figsize: tuple[float, float]) -> Any:
    """A figure drawn by Agg, without pyplot (no global figure state to import or close)."""
    fig = Figure(figsize=figsize)
    FigureCanvasAgg(fig)
    return fig


def _save(fig: Any, path: Path, key: str | None = None) -> Path:
    """Write the PNG (whole or not at all: it is written aside, then renamed), with ``key``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    meta: dict[str, str | None] = {"Software": None}
    if key is not None:
        meta[figkeys.KEYWORD] = key
    part = path.with_name(f".{path.name}.part")
    # zlib level 1 instead of PIL's 6: a memory figure is drawn about 13 % faster and its file is
    # about 16 % larger (130 KB instead of 113)
    try:
        fig.savefig(part, format="png", dpi=110, metadata=meta, pil_kwargs={"compress_level": 1})
        os.replace(part, path)
    finally:
        part.unlink(missing_ok=True)
    return path


@functools.cache
def _salt() -> bytes:
    """What a figure depends on besides its inputs: this module's code, matplotlib's version and
    its settings (a ``matplotlibrc``)."""
    h = hashlib.sha256(Path(__file__).read_bytes())
    h.update(matplotlib.__version__.encode())
    settings = sorted(
        (k, repr(v)) for k, v in dict.items(matplotlib.rcParams) if k != "backend" and " at 0x" not in repr(v)
    )
    h.update(repr(settings).encode("utf-8", "surrogatepass"))
    return h.digest()


def _key(kind: str, *inputs: object) -> str | None:
    """The digest a figure of ``kind`` drawn from ``inputs`` carries (None: not computable)."""
    return figkeys.digest(_salt(), kind, inputs)


def _kept(path: Path, key: str | None) -> bool:
    """Whether ``path`` is this figure already: drawn from the same inputs by the same code."""
    return key is not None and figkeys.recorded(path) == key


def memory_figure(facts: IncidentFacts, path: Path, zone: tzinfo = UTC, title: str = "") -> Path | None:
    """Host RAM, per-GPU memory and KV-cache usage over the window, kill and recovery marked.
    A PNG at ``path`` drawn from the same inputs is kept as it is."""
    key = _key("memory", facts, zone, title)
    if _kept(path, key):
        return path
    tl = facts.timeline
    inc = facts.incident
    have_host = bool(tl.host_points) or inc.memcg_usage_kb is not None
    have_gpu = bool(tl.per_gpu)
    have_kv = any(b.token_usage is not None for b in tl.buckets)
    panels = [p for p, ok in (("host", have_host), ("gpu", have_gpu), ("kv", have_kv)) if ok]
    if not panels:
        return None
    fig = _figure((10, 2.6 * len(panels) + 0.6))
    axes = fig.subplots(len(panels), 1, sharex=True, squeeze=False)
    axs = [a[0] for a in axes]
    zname = getattr(zone, "key", "UTC")
    for ax, panel in zip(axs, panels, strict=True):
        if panel == "host":
            if tl.host_points:
                xs = [_x(t, zone) for t, _, _ in tl.host_points]
                ax.plot(
                    xs,
                    [(tot - a) / GIB for _, a, tot in tl.host_points],
                    color="#1565c0",
                    label="host RAM in use (earlyoom: total − available)",
                )
                tot = max(t for _, _, t in tl.host_points)
                ax.axhline(tot / GIB, color="#555555", linestyle=":", linewidth=1, label="host RAM total")
            if inc.memcg_usage_kb is not None and inc.ts is not None:
                used = inc.memcg_usage_kb / 1024 / 1024
                lim = (inc.memcg_limit_kb or 0) / 1024 / 1024
                if lim:
                    ax.axhline(
                        lim,
                        color=KILL_COLOR,
                        linestyle="--",
                        linewidth=1,
                        label=f"unit memory limit {lim:,.0f} GiB",
                    )
                ax.scatter(
                    [_x(inc.ts, zone)],
                    [used],
                    color=KILL_COLOR,
                    zorder=5,
                    label=f"unit cgroup at the kill: {used:,.0f} GiB",
                )
            ax.set_ylim(bottom=0)
            ax.set_ylabel("GiB")
            ax.set_title("Host memory", loc="left", fontsize=10, y=1.0)
        elif panel == "gpu":
            for label in sorted(tl.per_gpu, key=_gpu_sort):
                pts = tl.per_gpu[label]
                ax.plot(
                    [_x(t, zone) for t, _, _ in pts], [u / GIB for _, u, _ in pts], linewidth=1, label=label
                )
            totals = [tot for pts in tl.per_gpu.values() for _, _, tot in pts if tot]
            if totals:
                ax.axhline(max(totals) / GIB, color="#555555", linestyle=":", linewidth=1, label="GPU total")
            ax.set_ylabel("GiB used")
            ax.set_title("GPU memory per GPU (nvidia-smi)", loc="left", fontsize=10, y=1.0)
        else:
            b = [x for x in tl.buckets if x.token_usage is not None]
            ax.plot(
                [_x(x.ts, zone) for x in b],
                [x.token_usage for x in b],
                color="#6a1b9a",
                label="KV token usage",
            )
            ax.set_ylim(0, 1.05)
            ax.set_ylabel("KV usage")
            q = [x for x in tl.buckets if x.queue_req is not None]
            if q:
                ax2 = ax.twinx()
                ax2.plot(
                    [_x(x.ts, zone) for x in q],
                    [x.queue_req for x in q],
                    color="#ef6c00",
                    linewidth=1,
                    label="queued requests",
                )
                ax2.set_ylabel("queued")
                ax2.legend(loc="upper right", fontsize=7)
            ax.set_title(f"SGLang serving ({inc.unit})", loc="left", fontsize=10, y=1.0)
        _mark(ax, inc.ts, KILL_COLOR, "kill", zone)
        _mark(ax, inc.recovered_ts, READY_COLOR, "service ready again", zone)
        ax.grid(alpha=0.25)
        ax.legend(loc="upper left", fontsize=7)
    axs[-1].xaxis.set_major_locator(mdates.AutoDateLocator(maxticks=9))  # type: ignore[no-untyped-call]
    axs[-1].xaxis.set_major_formatter(mdates.DateFormatter("%H:%M"))  # type: ignore[no-untyped-call]
    axs[-1].set_xlabel(f"time ({zname})")
    if title:
        fig.suptitle(title, fontsize=11)
    # fixed margins: tight_layout would draw the whole figure once more just to measure it
    height = 2.6 * len(panels) + 0.6
    fig.subplots_adjust(left=0.08, right=0.92, top=1 - 0.45 / height, bottom=0.55 / height, hspace=0.32)
    return _save(fig, path, key)


def _gpu_sort(label: str) -> tuple[int, str]:
    tail = label.rsplit(" ", 1)[-1]
    return (int(tail), label) if tail.isdigit() else (10_000, label)


PHASE_COLORS = (
    ("weight_load_s", "weights", "#1565c0"),
    ("draft_weight_load_s", "draft weights", "#64b5f6"),
    ("kv_alloc_s", "KV cache", "#8e24aa"),
    ("cuda_graph_s", "CUDA graphs", "#ef6c00"),
    ("draft_cuda_graph_s", "draft CUDA graphs", "#ffb74d"),
)


def loads_figure(
    loads: Sequence[Load], path: Path, zone: tzinfo = UTC, highlight: Sequence[int] = ()
) -> Path | None:
    """Load time of each start, split into phases (the rest of the load in grey). A PNG at
    ``path`` drawn from the same inputs is kept as it is."""
    key = _key("loads", loads, zone, highlight)
    if _kept(path, key):
        return path
    rows = [ld for ld in loads if ld.load_s is not None]
    if not rows:
        return None
    fig = _figure((10, 0.45 * len(rows) + 1.4))
    ax = fig.subplots()
    labels = []
    for i, ld in enumerate(rows):
        left = 0.0
        for attr, name, color in PHASE_COLORS:
            v = getattr(ld, attr)
            if v:
                ax.barh(i, v, left=left, color=color, label=name if i == 0 or name not in labels else None)
                left += v
                if name not in labels:
                    labels.append(name)
        rest = max((ld.load_s or 0) - left, 0)
        ax.barh(i, rest, left=left, color="#bdbdbd", label="other" if "other" not in labels else None)
        labels.append("other")
        edge = 2 if ld.load_id in highlight else 0
        if edge:
            ax.barh(i, ld.load_s or 0, fill=False, edgecolor="black", linewidth=1.5)
        ax.text((ld.load_s or 0) + 5, i, f"{ld.load_s:.0f} s ({ld.outcome})", va="center", fontsize=7)
    ticks = [
        f"{ld.unit}  {ld.start_ts.astimezone(zone):%m-%d %H:%M}" if ld.start_ts else str(ld.unit)
        for ld in rows
    ]
    ax.set_yticks(range(len(rows)), ticks, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("seconds from start to ready")
    handles, names = ax.get_legend_handles_labels()
    seen: dict[str, Any] = {}
    for h, n in zip(handles, names, strict=True):
        seen.setdefault(n, h)
    longest = max(ld.load_s or 0 for ld in rows)
    ax.set_xlim(0, longest * 1.22 + 1)  # room for the labels at the bar ends
    ax.legend(
        list(seen.values()),
        list(seen.keys()),
        fontsize=7,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.6 / (0.45 * len(rows) + 1.9)),
        ncol=len(seen),
        frameon=False,
    )
    ax.grid(axis="x", alpha=0.25)
    ax.set_title(
        "Service loads and their phases (framed: the killed instance and the recovery)",
        loc="left",
        fontsize=10,
    )
    height = 0.45 * len(rows) + 1.9
    fig.set_size_inches(10, height)
    fig.subplots_adjust(left=0.25, right=0.97, top=1 - 0.35 / height, bottom=1.0 / height)
    return _save(fig, path, key)


def trend_figure(
    series: dict[str, list[tuple[datetime, float]]], path: Path, ylabel: str, title: str, zone: tzinfo = UTC
) -> Path | None:
    if not any(series.values()):
        return None
    key = _key("trend", series, ylabel, title, zone)
    if _kept(path, key):
        return path
    from matplotlib.ticker import MaxNLocator

    fig = _figure((10, 3.4))
    ax = fig.subplots()
    xs: list[float] = []
    ys: list[float] = []
    for name in sorted(series):
        pts = sorted(series[name])
        if pts:
            x = [_x(t, zone) for t, _ in pts]
            y = [v for _, v in pts]
            ax.plot(x, y, marker="o", linewidth=1, label=name)
            xs += x
            ys += y
    # a few points close together: matplotlib would widen a zero-width range to years
    if max(xs) - min(xs) < 4:
        middle = (max(xs) + min(xs)) / 2
        ax.set_xlim(middle - 3, middle + 3)
    locator = mdates.AutoDateLocator()  # type: ignore[no-untyped-call]
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))  # type: ignore[no-untyped-call]
    # counts, seconds: from zero, with whole-number ticks for whole-number values
    ax.set_ylim(0, max(max(ys) * 1.15, 1))
    if all(float(v).is_integer() for v in ys):
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel(ylabel)
    ax.set_title(title, loc="left", fontsize=10, y=1.0)
    ax.grid(alpha=0.25)
    ax.legend(fontsize=7)
    fig.subplots_adjust(left=0.08, right=0.97, top=0.9, bottom=0.15)
    return _save(fig, path, key)
