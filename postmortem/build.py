"""``build``: incremental ingest, then analysis, then rendering — one library call."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from pathlib import Path

from .errors import StoreError
from .ingest import IngestOptions, IngestSummary, ingest_paths, read_limits
from .store import fileindex
from .store.db import Store
from .timeutil import UTC, check_range


@dataclass
class BuildOptions:
    db: str
    logs: list[str]
    out: Path
    since: datetime | None = None
    until: datetime | None = None
    zone: tzinfo = UTC
    ingest: IngestOptions = field(default_factory=IngestOptions)
    templates: list[str] = field(default_factory=list)
    window_s: float = 1800.0
    report_format: str = "markdown"
    bundle: bool = False
    redact: bool = True
    anonymize: bool = False
    wait: float = 0.0
    now: datetime | None = None  # frozen clock for reproducible reports


@dataclass
class BuildResult:
    ingest: IngestSummary
    reports: list[Path]
    index: Path | None
    incidents: int = 0
    #: OOM kills with no time (in no report; index.md lists them)
    undated: int = 0
    #: sources whose year-less stamps took a year nothing dated confirms: (path, year)
    year_guesses: list[tuple[str, int]] = field(default_factory=list)
    #: sources whose OOM kills are dated to the minute only (dmesg -e/-H): (path, kills)
    minute_kills: list[tuple[str, int]] = field(default_factory=list)
    bundles: list[Path] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)  # seconds per stage


def build(options: BuildOptions) -> BuildResult:
    import time

    check_range(options.since, options.until)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    # the figures' drawer: the drawing process the command line forked at start-up, if any
    from .drawing import Drawer

    if not options.logs and str(options.db) != ":memory:" and not Path(options.db).exists():
        # nothing to ingest (--no-ingest): a mistyped --db must not become a new, empty store
        raise StoreError(f"{options.db}: no such database (run 'postmortem ingest' or 'build' first)")
    with Drawer() as drawer, Store.open(options.db, wait=options.wait) as store:
        summary = ingest_paths(store, options.logs, options.ingest) if options.logs else IngestSummary()
        t1 = time.perf_counter()
        timings["ingest"] = t1 - t0
        from .analysis import rebuild
        from .report import FigurePlan, write_reports

        # each incident's figures go to the drawing process as soon as its facts are gathered
        plan = FigurePlan(store, options, drawer)
        analysis = rebuild(
            store,
            window_s=options.window_s,
            since=options.since,
            until=options.until,
            zone=options.zone,
            on_facts=plan.add,
            templates=options.templates,
        )
        t2 = time.perf_counter()
        timings["analysis"] = t2 - t1
        written = write_reports(store, options, analysis, plan=plan)
        timings["reports"] = time.perf_counter() - t2
        # a later 'ingest' of the same files opens nothing
        fileindex.write(store, summary.skipped, read_limits(options.ingest))
        from .analysis.clock import unconfirmed_years
        from .query import run_named_dicts

        guesses = [
            (str(r["path"]), r["first_ts"].year)
            for r in unconfirmed_years(run_named_dicts(store, "year_spans"))
        ]
        window = {"since": options.since, "until": options.until}
        minutes = [(str(r["path"]), int(r["kills"])) for r in run_named_dicts(store, "minute_kills", window)]
    return BuildResult(
        ingest=summary,
        reports=written.reports,
        index=written.index,
        incidents=written.incidents,
        undated=written.undated,
        year_guesses=guesses,
        minute_kills=minutes,
        bundles=written.bundles,
        timings=timings,
    )
