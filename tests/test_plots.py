"""Figures: axes an operator can read (ranges, ticks, labels), checked on the drawn figure."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from postmortem import plots


def _drawn(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    seen: dict[str, Any] = {}

    def keep(fig: Any, path: Path, key: str | None = None) -> Path:
        fig.canvas.draw()
        seen["fig"] = fig
        return path

    monkeypatch.setattr(plots, "_save", keep)
    return seen


def test_a_trend_of_one_day_spans_days_and_names_its_year(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _drawn(monkeypatch)
    day = datetime(2025, 5, 25, 20, 17, tzinfo=UTC)
    # one point is no trend: nothing is drawn (the report says so)
    assert plots.trend_figure({"a.service": [(day, 1.0)]}, tmp_path / "t.png", "n", "Kills") is None
    assert "fig" not in seen
    # two units' one kill each, the same day
    series = {"a.service": [(day, 1.0)], "b.service": [(day, 1.0)]}
    plots.trend_figure(series, tmp_path / "t.png", "incidents per day", "Kills")
    ax = seen["fig"].axes[0]
    lo, hi = ax.get_xlim()
    assert 1 <= hi - lo <= 7  # days, not the decades matplotlib widens a single date to
    assert ax.get_ylim()[0] == 0
    ticks = [t for t in ax.get_yticks() if ax.get_ylim()[0] <= t <= ax.get_ylim()[1]]
    assert ticks == [0, 1]  # whole counts, not 0.96 … 1.04
    assert "2025" in ax.xaxis.get_offset_text().get_text()


def test_a_trend_over_weeks_keeps_its_range(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _drawn(monkeypatch)
    first = datetime(2025, 5, 1, tzinfo=UTC)
    pts = [(first + timedelta(days=d), 560.0 + d) for d in (0, 10, 24)]
    plots.trend_figure({"a.service": pts}, tmp_path / "t.png", "load time (s)", "Loads")
    ax = seen["fig"].axes[0]
    lo, hi = ax.get_xlim()
    assert 24 <= hi - lo <= 30
    assert ax.get_ylim()[0] == 0 and ax.get_ylim()[1] > 584


# ----------------------------------------------------------------------------- kept figures


def test_a_figure_drawn_from_the_same_inputs_is_kept(tmp_path: Path) -> None:
    from postmortem import figkeys

    day = datetime(2025, 5, 25, 20, 17, tzinfo=UTC)
    series = {"a.service": [(day, 1.0), (day + timedelta(days=1), 3.0)]}
    path = tmp_path / "t.png"

    def draw(s: dict[str, list[tuple[datetime, float]]], title: str = "Kills") -> tuple[int, int, str | None]:
        assert plots.trend_figure(s, path, "incidents per day", title) == path
        st = path.stat()
        return st.st_ino, st.st_mtime_ns, figkeys.recorded(path)

    first = draw(series)
    assert first[2] is not None
    assert draw({"a.service": list(series["a.service"])}) == first  # equal inputs: kept
    changed = draw({"a.service": [*series["a.service"][:1], (day + timedelta(days=1), 4.0)]})
    assert changed[2] not in (None, first[2]) and changed[:2] != first[:2]
    assert draw(series, title="Other title")[2] not in (None, first[2], changed[2])
    # a PNG that does not say what it was drawn from (another program's, an edited one) is redrawn
    plain = tmp_path / "plain.png"
    fig = plots._figure((2, 2))
    fig.savefig(plain, format="png")
    path.write_bytes(plain.read_bytes())
    assert figkeys.recorded(path) is None
    assert draw(series)[2] == first[2]


def test_a_figure_digest_is_canonical() -> None:
    import subprocess
    import sys

    from postmortem.figkeys import digest

    script = (
        "from datetime import datetime; from zoneinfo import ZoneInfo\n"
        "from postmortem.analysis.model import Load\n"
        "from postmortem.figkeys import digest\n"
        "t = datetime(2025, 5, 25, 20, 17, tzinfo=ZoneInfo('Europe/Berlin'))\n"
        "print(digest({'b': [t, 1.5, None], 'a': {'x', 'y', 'z'}}, Load(3, 'h', 'a.service', t, None, 570.0, 'ready', None, None, 30000)))\n"
    )
    import os

    from conftest import REPO

    outs = {
        subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONPATH": str(REPO), "PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("1", "2", "3")
    }
    assert len(outs) == 1 and len(outs.pop().strip()) == 64  # set order, hash seeds: no effect
    assert digest(["a,b"]) != digest(["a", "b"]) != digest("a", "b")
    assert digest(True) != digest(1) != digest(1.0)
    assert digest({1, 2}) == digest({2, 1})
    assert digest({"a": 1, "b": 2}) != digest({"b": 2, "a": 1})  # a dict's order can change a figure
    assert digest([object()]) is None  # no canonical form: such a figure is always drawn
    from datetime import timezone

    hour, two = timezone(timedelta(hours=1), "X"), timezone(timedelta(hours=2), "X")
    assert digest(hour) != digest(two) and digest(UTC) != digest(timezone(timedelta(hours=1), "UTC"))


def test_a_damaged_figure_is_drawn_again(tmp_path: Path) -> None:
    from postmortem import figkeys

    day = datetime(2025, 5, 25, 20, 17, tzinfo=UTC)
    path = tmp_path / "t.png"
    two = {"a.service": [(day, 1.0), (day + timedelta(days=1), 2.0)]}
    plots.trend_figure(two, path, "n", "Kills")
    key, data = figkeys.recorded(path), path.read_bytes()
    assert key is not None
    middle = len(data) // 2  # inside the image data, the end of the file intact
    path.write_bytes(data[:middle] + bytes(64) + data[middle + 64 :])
    assert figkeys.recorded(path) is None
    path.write_bytes(data + b"trailing")
    assert figkeys.recorded(path) is None
    plots.trend_figure(two, path, "n", "Kills")
    assert path.read_bytes() == data


def test_the_memory_figure_marks_the_gpu_fault_and_no_refused_restart() -> None:
    """An Xid that became the cause is marked (it was not, and a GPU's line just stopped); a
    restart the start limit refused started nothing and is not marked 'automatic restart'."""
    from postmortem.analysis.facts import IncidentFacts
    from postmortem.analysis.model import Evidence, Incident
    from postmortem.analysis.timeline import Timeline, TimelineEvent
    from postmortem.figdata import memory_data

    kill = datetime(2025, 6, 11, 3, 17, 45, tzinfo=UTC)
    xid = Evidence(
        "xid", kill - timedelta(minutes=5), 2, 69, "GPU has fallen off the bus.", "h", None,
        {"xid": 79, "bus_id": "0000:9a:00"},
    )  # fmt: skip
    inc = Incident(1, "h", kill, "a.service", "gpu_fault", 0.85, evidence=[xid])
    tl = Timeline(
        kill_ts=kill, start=kill - timedelta(minutes=30), end=kill + timedelta(minutes=10), bucket_s=30
    )
    tl.host_points = [(kill - timedelta(minutes=1), 100 * 2**30, 200 * 2**30)]
    restart = kill + timedelta(seconds=30)
    tl.events = [
        TimelineEvent(restart + timedelta(seconds=1), "systemd", "a.service", "start_limit_hit", "x", 2, 90)
    ]
    facts = IncidentFacts(incident=inc, timeline=tl, offsets=[])
    facts.restarts = [{"ts": restart, "source_id": 2, "line_no": 89, "restart_count": 3}]
    data = memory_data(facts, UTC)
    assert data is not None
    # the figure's axis reads wall-clock times of the zone (naive)
    assert data.gpu_fault == ((kill - timedelta(minutes=5)).replace(tzinfo=None), "Xid 79 (GPU 0000:9a:00)")
    assert data.restart_start is None
    tl.events = []
    data = memory_data(facts, UTC)
    assert data is not None and data.restart_start == restart.replace(tzinfo=None)
    # a server no source names the unit of: its serving panel read "SGLang serving (None)"
    facts.incident.unit = None
    data = memory_data(facts, UTC)
    assert data is not None and data.unit == "no unit named"


def test_the_memory_figure_is_drawn_in_utc_when_the_clocks_change_in_its_window() -> None:
    """A window across the end of summer time: on Berlin's wall clock 02:00–03:00 comes twice,
    and a figure in it drew the service ready before the kill. The figure is in UTC then (its
    axis says so); in a window without a change, the host's zone."""
    from postmortem.analysis.facts import IncidentFacts
    from postmortem.analysis.model import Incident
    from postmortem.analysis.timeline import Timeline
    from postmortem.figdata import memory_data
    from postmortem.timeutil import get_zone

    berlin = get_zone("Europe/Berlin")
    kill = datetime(2025, 10, 26, 0, 40, 15, tzinfo=UTC)  # 02:40 CEST, the first 02:xx
    ready = kill + timedelta(minutes=20, seconds=31)  # 02:00:46 CET, the second
    inc = Incident(1, "h", kill, "a.service", "host_oom", 0.9, recovered_ts=ready)
    tl = Timeline(
        kill_ts=kill, start=kill - timedelta(minutes=30), end=ready + timedelta(seconds=90), bucket_s=30
    )
    tl.host_points = [(kill - timedelta(minutes=1), 100 * 2**30, 200 * 2**30)]
    data = memory_data(IncidentFacts(incident=inc, timeline=tl, offsets=[]), berlin)
    assert data is not None and data.zone_name == "UTC"
    assert data.kill is not None and data.ready is not None and data.kill < data.ready
    summer = Timeline(
        kill_ts=kill - timedelta(days=30),
        start=kill - timedelta(days=30, minutes=30),
        end=kill - timedelta(days=30) + timedelta(minutes=10),
        bucket_s=30,
    )
    summer.host_points = tl.host_points
    inc2 = Incident(2, "h", kill - timedelta(days=30), "a.service", "host_oom", 0.9)
    data = memory_data(IncidentFacts(incident=inc2, timeline=summer, offsets=[]), berlin)
    assert data is not None and data.zone_name == "Europe/Berlin"


def test_the_memory_figure_draws_one_line_per_gpu_behaviour_and_running_beside_host_ram(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Eight GPUs of a TP8 server that behave alike are one line (GPUs 0–6 here: GPU 7 dropped
    early, its own line); the running requests are drawn beside host RAM; every legend is outside
    its panel's plot area, so it covers no data."""
    from postmortem.analysis.facts import IncidentFacts
    from postmortem.analysis.model import Incident
    from postmortem.analysis.timeline import Bucket, Timeline
    from postmortem.figdata import memory_data

    kill = datetime(2025, 6, 11, 3, 17, 45, tzinfo=UTC)
    tl = Timeline(
        kill_ts=kill, start=kill - timedelta(minutes=10), end=kill + timedelta(minutes=5), bucket_s=30
    )
    times = [kill - timedelta(seconds=30 * k) for k in range(20, 0, -1)]
    for g in range(8):
        used = [(t, 120_000.0 + (g % 2) * 100, 140_000.0) for t in times]
        if g == 7:
            used[-5:] = [(t, 1_000.0, 140_000.0) for t, _, _ in used[-5:]]
        tl.per_gpu[f"GPU {g}"] = used
    tl.host_points = [(t, 1_000_000.0 - 1000 * k, 2_000_000.0) for k, t in enumerate(times)]
    tl.buckets = [Bucket(t, running_req=100 + k) for k, t in enumerate(times)]
    facts = IncidentFacts(
        incident=Incident(1, "h", kill, "a.service", "host_oom", 0.9), timeline=tl, offsets=[]
    )
    data = memory_data(facts, UTC)
    assert data is not None
    assert [label for label, _ in data.gpus] == ["GPUs 0–6", "GPU 7"]
    assert data.running is not None and data.running[1][0] == 100.0
    seen = _drawn(monkeypatch)
    plots.memory_figure(data, tmp_path / "m.png")
    fig = seen["fig"]
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is None:
            continue
        box, plot = legend.get_window_extent(renderer), ax.get_window_extent(renderer)
        assert box.x0 >= plot.x1, "the legend overlaps its panel"
    labels = [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
    assert "running requests" in labels and "GPUs 0–6" in labels
    # the host's total is drawn clear of the panel's frame (autoscaled, its dotted line ran along
    # the top edge)
    host = next(ax for ax in fig.axes if ax.get_title(loc="left").startswith("Host memory"))
    assert data.host_total_gib is not None and host.get_ylim()[1] >= 1.04 * data.host_total_gib


@pytest.mark.parametrize("down", [timedelta(minutes=3, seconds=45), timedelta(hours=3, minutes=45)])
def test_the_memory_figure_of_any_outage_length_draws_without_a_warning(
    monkeypatch: pytest.MonkeyPatch, down: timedelta
) -> None:
    """A window of 4–5 min or 4–5 h (an outage of hours, after the 30 minutes before the kill)
    left matplotlib's date locator without an interval it likes: its UserWarning was printed
    on the terminal during ``build``."""
    import warnings

    from postmortem.analysis.facts import IncidentFacts
    from postmortem.analysis.model import Incident
    from postmortem.analysis.timeline import Timeline
    from postmortem.figdata import memory_data

    _drawn(monkeypatch)
    kill = datetime(2026, 6, 10, 14, 0, tzinfo=UTC)
    ready = kill + down
    inc = Incident(1, "h", kill, "a.service", "host_oom", 0.9, recovered_ts=ready)
    start = kill - min(timedelta(minutes=30), down / 8)
    tl = Timeline(kill_ts=kill, start=start, end=ready, bucket_s=30)
    tl.host_points = [(start, 100 * 2**30, 200 * 2**30), (ready, 150 * 2**30, 200 * 2**30)]
    data = memory_data(IncidentFacts(incident=inc, timeline=tl, offsets=[]), UTC)
    assert data is not None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plots.memory_figure(data, Path("unused.png"))


def test_a_containers_limit_is_named_the_containers(tmp_path: Path) -> None:
    """The host panel's cgroup marks say whose limit it is: a container's (or a pod's), not a
    unit's (seen on a Docker night: "unit memory limit 200 GiB")."""
    import matplotlib

    from postmortem.figdata import MemoryData
    from postmortem.plots import _host_memcg

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kill = datetime(2026, 4, 2, 2, 30, tzinfo=UTC)
    data = MemoryData("t", "UTC", "docker:8c1d4e7f90ab", ["host"], memcg=(kill, 200.0), memcg_limit_gib=200.0)
    data.owner = "container"
    fig, ax = plt.subplots()
    _host_memcg(ax, data)
    labels = ax.get_legend_handles_labels()[1]
    plt.close(fig)
    assert labels == ["container memory limit 200 GiB", "container cgroup at the kill (kernel): 200 GiB"]


def test_the_loads_figure_names_only_what_it_frames() -> None:
    """The title says what its frames mark: the ended run by its end, and the recovery only
    when a recovery load is drawn (it said "and the recovery" on nights with none)."""
    from postmortem.analysis.model import Load
    from postmortem.figdata import loads_data

    t = datetime(2026, 4, 5, 1, 0, tzinfo=UTC)

    def ld(i: int, s: float | None) -> Load:
        return Load(i, "h", "a.service", t, t + timedelta(seconds=s or 0), s, "ready", None, None, None)

    loads = [ld(1, 276.0), ld(2, 300.0)]
    crashed = loads_data(loads, UTC, (1, None), ended="crash")
    assert crashed is not None and crashed.framed_words == "the crashed instance"
    both = loads_data(loads, UTC, (1, 2))
    assert both is not None and both.framed_words == "the killed instance and the recovery"
    unloaded = loads_data([ld(1, None), ld(2, 300.0)], UTC, (1, 2), ended="failure")
    assert unloaded is not None and unloaded.framed_words == "the recovery"
    # a load no source names the unit of: its bar read "None  04-05 01:00"
    nameless = Load(3, "h", None, t, t + timedelta(seconds=9), 9.0, "ready", None, None, None)
    bars = loads_data([nameless], UTC, (3, None))
    assert bars is not None and bars.bars[0].label == "no unit named  04-05 01:00"
