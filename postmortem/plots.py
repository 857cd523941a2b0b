"""PNG figures for reports (matplotlib, Agg backend, no display needed).

The incident figures are drawn from :mod:`postmortem.figdata` (plain data built from the facts):
importing this module loads matplotlib, not the analysis, DuckDB or the templates.
"""

from __future__ import annotations

import functools
import hashlib
import os
import textwrap
from collections.abc import Sequence
from datetime import UTC, datetime, tzinfo
from itertools import pairwise
from pathlib import Path
from typing import Any

import matplotlib
import matplotlib.dates as mdates
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from . import figdata, figkeys
from .figdata import LoadsData, MemoryData, local

KILL_COLOR = "#c62828"
READY_COLOR = "#2e7d32"


def _xs(times: Sequence[datetime]) -> Any:
    """Matplotlib's date numbers of naive local times (one conversion for the whole series)."""
    return mdates.date2num(list(times))  # type: ignore[no-untyped-call]


def _gapped(times: Sequence[datetime], values: Sequence[float]) -> tuple[list[float], list[float]]:
    """Plot coordinates with a break (NaN) where the samples stop for a while — a dead server
    writes no batch lines: a line drawn across its outage would show values nobody measured."""
    xs = [float(v) for v in _xs(times)]
    ys = [float(v) for v in values]
    if len(xs) < 3:
        return xs, ys
    steps = sorted(b - a for a, b in pairwise(xs))
    gap = max(4 * steps[len(steps) // 2], 90 / 86400)  # matplotlib dates are days
    out_x, out_y = [xs[0]], [ys[0]]
    for (x0, x1), y in zip(pairwise(xs), ys[1:], strict=True):
        if x1 - x0 > gap:
            out_x.append((x0 + x1) / 2)
            out_y.append(float("nan"))
        out_x.append(x1)
        out_y.append(y)
    return out_x, out_y


def _mark(ax: Any, ts: datetime | None, color: str, label: str | None) -> None:
    if ts is None:
        return
    style = "-" if color == KILL_COLOR else "--"
    ax.axvline(_xs([ts])[0], color=color, linewidth=1.6, linestyle=style, label=label)


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
    """What a figure depends on besides its inputs: the code that draws it (this module and the
    figure data's, whose :func:`~postmortem.figdata.local` draws the trend figures' times),
    matplotlib's version and its settings (a ``matplotlibrc``)."""
    h = hashlib.sha256(Path(__file__).read_bytes())
    h.update(Path(figdata.__file__).read_bytes())
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


def memory_figure(data: MemoryData, path: Path) -> Path:
    """Host RAM, per-GPU memory and KV-cache usage over the window, kill and recovery marked.
    A PNG at ``path`` drawn from the same data is kept as it is."""
    key = _key("memory", data)
    if _kept(path, key):
        return path
    n = len(data.panels)
    fig = _figure((13, 2.6 * n + 0.6))
    axes = fig.subplots(n, 1, sharex=True, squeeze=False)
    axs = [a[0] for a in axes]
    twins: list[Any] = []  # a panel's second axis (its legend joins the panel's)
    for ax, panel in zip(axs, data.panels, strict=True):
        if panel == "host":
            _host_panel(ax, data, twins)
        elif panel == "gpu":
            _gpu_panel(ax, data)
        else:
            _serving_panel(ax, data, twins)
        _memory_marks(ax, data)
        ax.grid(alpha=0.25)
        _legend_outside(ax, twins)
        twins.clear()
    # at least 3 ticks: with matplotlib's 5, spans of 4–5 min or 4–5 h have no interval it
    # likes, and it warns on the terminal
    axs[-1].xaxis.set_major_locator(mdates.AutoDateLocator(minticks=3, maxticks=9))  # type: ignore[no-untyped-call]
    axs[-1].xaxis.set_major_formatter(mdates.DateFormatter("%H:%M"))  # type: ignore[no-untyped-call]
    axs[-1].set_xlabel(f"time ({data.zone_name})")
    # fixed margins: tight_layout would draw the whole figure once more just to measure it; the
    # title sits in its own 0.35 in band above the first panel's title (they overlapped)
    height = 2.6 * n + 0.6
    if data.title:
        fig.suptitle(data.title, fontsize=11, x=0.37, y=1 - 0.12 / height, va="top")
    fig.subplots_adjust(left=0.06, right=0.68, top=1 - 0.75 / height, bottom=0.55 / height, hspace=0.32)
    return _save(fig, path, key)


def _host_panel(ax: Any, data: MemoryData, twins: list[Any]) -> None:
    """Host RAM in use and its total, the unit's cgroup at the kill, running requests."""
    if data.host_used is not None:
        times, used = data.host_used
        ax.plot(
            *_gapped(times, used),
            color="#1565c0",
            label="host RAM in use (earlyoom: total − available)",
        )
    if data.host_total_gib is not None:
        ax.axhline(data.host_total_gib, color="#555555", linestyle=":", linewidth=1, label="host RAM total")
    title = "Host memory" + _host_memcg(ax, data)
    ax.set_ylim(bottom=0)
    if data.host_total_gib is not None:
        # a line does not widen the axis: the total stays in view above memory that neared it
        ax.set_ylim(top=max(ax.get_ylim()[1], data.host_total_gib * 1.05))
    ax.set_ylabel("GiB")
    ax.set_title(title, loc="left", fontsize=10, y=1.0)
    if data.running is not None:
        # what the memory grew with: the server's running requests, on their own axis
        twin = ax.twinx()
        times, running = data.running
        twin.plot(*_gapped(times, running), color="#2e7d32", linewidth=1, label="running requests")
        twin.set_ylim(bottom=0)
        twin.set_ylabel("running")
        twins.append(twin)


def _host_memcg(ax: Any, data: MemoryData) -> str:
    """The unit's cgroup at the kill on the host panel; what it adds to the panel's title."""
    if data.memcg is None:
        return ""
    at, at_kill = data.memcg
    limit = f" of its {data.memcg_limit_gib:,.0f} GiB limit" if data.memcg_limit_gib else ""
    if data.unit_est is None and data.host_used is not None:
        # without the unit's own series its limit has nothing on this axis to be
        # compared with: the host-wide line includes the rest of the host
        return f" — the {data.owner}'s cgroup held {at_kill:,.0f} GiB{limit} at the kill (kernel)"
    # the unit's own memory is what its limit is compared with (the host-wide line
    # includes the rest of the host)
    if data.unit_est is not None:
        times, est = data.unit_est
        ax.plot(
            *_gapped(times, est),
            color="#c62828",
            linewidth=1.2,
            label=f"{data.owner} memory, estimated (host in use − {data.rest_gib or 0:,.0f} GiB "
            "the rest of the host used after the kill)",
        )
    if data.memcg_limit_gib:
        ax.axhline(
            data.memcg_limit_gib,
            color=KILL_COLOR,
            linestyle="--",
            linewidth=1,
            label=f"{data.owner} memory limit {data.memcg_limit_gib:,.0f} GiB",
        )
    ax.scatter(
        _xs([at]),
        [at_kill],
        color=KILL_COLOR,
        zorder=5,
        label=f"{data.owner} cgroup at the kill (kernel): {at_kill:,.0f} GiB",
    )
    return ""


def _gpu_panel(ax: Any, data: MemoryData) -> None:
    """Each GPU's memory in use, shaded down to each bucket's lowest sample, and the total."""
    lows = dict(data.gpu_lows)
    for label, (times, used) in data.gpus:
        (line,) = ax.plot(*_gapped(times, used), linewidth=1, label=label)
        if label in lows:
            # the lowest sample of each bucket: a short drop (memory freed at a death,
            # taken again by the next load) that the bucket's maximum hides
            xs, hi = _gapped(times, used)
            _, lo = _gapped(*lows[label])
            ax.fill_between(xs, lo, hi, color=line.get_color(), alpha=0.18, linewidth=0)
    if data.gpu_total_gib is not None:
        ax.axhline(data.gpu_total_gib, color="#555555", linestyle=":", linewidth=1, label="GPU total")
    ax.set_ylim(bottom=0)  # a drop to 0 MiB (memory freed at a death) stays in view
    ax.set_ylabel("GiB used")
    title = "GPU memory per GPU (nvidia-smi)"
    if data.gpu_lows and data.bucket_s:
        title += f" — line: highest in each {data.bucket_s:.0f} s, shade: down to the lowest"
    ax.set_title(title, loc="left", fontsize=10, y=1.0)


def _serving_panel(ax: Any, data: MemoryData, twins: list[Any]) -> None:
    """The server's KV-cache usage and its queued requests."""
    times, kv = data.kv_usage or ([], [])
    ax.plot(*_gapped(times, kv), color="#6a1b9a", label="KV token usage")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("KV usage")
    if data.queued is not None:
        ax2 = ax.twinx()
        times, queued = data.queued
        ax2.plot(*_gapped(times, queued), color="#ef6c00", linewidth=1, label="queued requests")
        if not any(queued):  # nothing queued: the line at the bottom, not mid-panel
            ax2.set_ylim(0, 1)
            ax2.set_yticks([0])
        ax2.set_ylabel("queued")
        twins.append(ax2)
    ax.set_title(f"{data.engine_label} serving ({data.unit})", loc="left", fontsize=10, y=1.0)


def _memory_marks(ax: Any, data: MemoryData) -> None:
    """The reboot, the GPU fault, the kill, the restart and the recovery, on every panel."""
    if data.reboot is not None:
        ax.axvline(
            _xs([data.reboot])[0], color="#000000", linewidth=1.2, linestyle="-.", label="host rebooted"
        )
    if data.gpu_fault is not None:
        at, label = data.gpu_fault
        ax.axvline(_xs([at])[0], color="#6a1b9a", linewidth=1.2, linestyle="-.", label=label)
    _mark(ax, data.kill, KILL_COLOR, data.kill_label)
    if data.restart_start is not None:
        ax.axvline(
            _xs([data.restart_start])[0],
            color="#8d6e63",
            linewidth=1,
            linestyle=":",
            label="automatic restart",
        )
    if data.recovery_start is not None:
        at, label = data.recovery_start
        ax.axvline(_xs([at])[0], color=READY_COLOR, linewidth=1, linestyle=":", label=label)
    _mark(ax, data.ready, READY_COLOR, "service ready again")


def _legend_outside(ax: Any, twins: list[Any]) -> None:
    """The panel's legend (its second axis's lines too) to the right of the plot: it covers no
    data however the lines run."""
    handles, labels = ax.get_legend_handles_labels()
    for twin in twins:
        h, lbl = twin.get_legend_handles_labels()
        handles, labels = handles + h, labels + lbl
    if handles:
        labels = ["\n".join(textwrap.wrap(label, 46)) for label in labels]
        ax.legend(
            handles,
            labels,
            loc="upper left",
            bbox_to_anchor=(1.07 if twins else 1.01, 1.0),
            fontsize=7,
            borderaxespad=0.0,
            frameon=False,
        )


def loads_figure(data: LoadsData, path: Path) -> Path:
    """Load time of each start, split into phases (the rest of the load in grey). A PNG at
    ``path`` drawn from the same data is kept as it is."""
    key = _key("loads", data)
    if _kept(path, key):
        return path
    bars = data.bars
    fig = _figure((10, 0.45 * len(bars) + 1.4))
    ax = fig.subplots()
    labels: list[str] = []
    for i, bar in enumerate(bars):
        left = 0.0
        for v, name, color in bar.phases:
            ax.barh(i, v, left=left, color=color, label=name if i == 0 or name not in labels else None)
            left += v
            if name not in labels:
                labels.append(name)
        rest = max(bar.load_s - left, 0)
        ax.barh(i, rest, left=left, color="#bdbdbd", label="other" if "other" not in labels else None)
        labels.append("other")
        if bar.framed:
            ax.barh(i, bar.load_s, fill=False, edgecolor="black", linewidth=1.5)
        ax.text(bar.load_s + 5, i, f"{bar.load_s:.0f} s ({bar.outcome})", va="center", fontsize=7)
    ax.set_yticks(range(len(bars)), [bar.label for bar in bars], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("seconds from start to ready")
    handles, names = ax.get_legend_handles_labels()
    seen: dict[str, Any] = {}
    for h, name in zip(handles, names, strict=True):
        seen.setdefault(name, h)
    longest = max(bar.load_s for bar in bars)
    ax.set_xlim(0, longest * 1.22 + 1)  # room for the labels at the bar ends
    # the legend at the figure's foot, below the axis label (placed in the axes' own units, it
    # ran into the label when there were one or two bars)
    fig.legend(
        list(seen.values()),
        list(seen.keys()),
        fontsize=7,
        loc="lower center",
        bbox_to_anchor=(0.5, 0.0),
        ncol=len(seen),
        frameon=False,
    )
    ax.grid(axis="x", alpha=0.25)
    ax.set_title(
        f"Service loads and their phases (starts in {data.zone_name}"
        + (f"; framed: {data.framed_words})" if data.framed_words else ")"),
        loc="left",
        fontsize=10,
    )
    height = 0.45 * len(bars) + 1.9
    fig.set_size_inches(10, height)
    # room for the longest start label (7-point text, about 0.058 in a character on 10 in)
    left = min(0.5, max(0.25, 0.03 + 0.0058 * max(len(bar.label) for bar in bars)))
    fig.subplots_adjust(left=left, right=0.97, top=1 - 0.35 / height, bottom=0.85 / height)
    return _save(fig, path, key)


def trend_figure(
    series: dict[str, list[tuple[datetime, float]]], path: Path, ylabel: str, title: str, zone: tzinfo = UTC
) -> Path | None:
    if sum(len(v) for v in series.values()) < 2:
        return None  # one point is no trend: the report says so instead of drawing a dot
    key = _key("trend", series, ylabel, title, zone)
    if _kept(path, key):
        return path
    from matplotlib.ticker import MaxNLocator

    fig = _figure((10, 3.4))
    ax = fig.subplots()
    xs: list[float] = []
    ys: list[float] = []
    # series with the same values (two hosts with one kill a day) would hide one another: each
    # has its own marker and line style, and each later one is drawn smaller, inside the last
    markers, styles = "osD^vPX", ("-", "--", ":", "-.")
    for i, name in enumerate(sorted(series)):
        pts = sorted(series[name])
        if pts:
            x = [float(v) for v in _xs([local(t, zone) for t, _ in pts])]
            y = [v for _, v in pts]
            ax.plot(
                x,
                y,
                marker=markers[i % len(markers)],
                markersize=max(3.0, 8.0 - 1.5 * i),
                linestyle=styles[i % len(styles)],
                linewidth=max(0.8, 2.0 - 0.4 * i),
                label=name,
            )
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
    ax.set_xlabel(f"date ({getattr(zone, 'key', None) or zone.tzname(None) or 'UTC'})", fontsize=8)
    ax.set_title(title, loc="left", fontsize=10, y=1.0)
    ax.grid(alpha=0.25)
    ax.legend(fontsize=7)
    fig.subplots_adjust(left=0.08, right=0.97, top=0.9, bottom=0.2)
    return _save(fig, path, key)
