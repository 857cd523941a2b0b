"""Figures: axes an operator can read (ranges, ticks, labels), checked on the drawn figure."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from postmortem.report import plots


def _drawn(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    seen: dict[str, Any] = {}

    def keep(fig: Any, path: Path) -> Path:
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
    plots.trend_figure({"a.service": [(day, 1.0)]}, tmp_path / "t.png", "incidents per day", "Kills")
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
