"""Reports: typed contexts, plots and Jinja rendering of the analysis.

``build`` writes one Markdown report per incident in the window to
``<out>/<host>-<UTC time>-<unit>.md`` with its figures beside it, and ``<out>/index.md`` listing
them (``--format json``: the same contexts as ``.json``; ``--bundle``: a ``.tar.gz`` per report).
"""

from __future__ import annotations

import io
import json
import tarfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from .. import __version__
from ..analysis import Analysis
from ..analysis.model import Incident, Load
from ..analysis.summary import downtime_text
from ..drawing import Drawer, Drawn, FigureJob
from ..io import atomic_output, write_atomic
from ..lazyre import lazy_re
from ..store.db import Store
from ..text.formats import plural
from ..timeutil import UTC
from .context import (
    IndexReport,
    IndexRow,
    Sources,
    as_jsonable,
    incident_report,
    slow_load_rows,
    source_rows,
    undated_kill_rows,
    utc_text,
    window_text,
    xid_rows,
)
from .html import figures_of, markdown_to_html
from .redact import Redactor
from .render import render, write_whole

if TYPE_CHECKING:
    from ..build import BuildOptions


@dataclass
class Written:
    reports: list[Path] = field(default_factory=list)
    index: Path | None = None
    incidents: int = 0
    bundles: list[Path] = field(default_factory=list)
    #: OOM kills in no report because their time is unknown (index.md lists them)
    undated: int = 0


_SAFE = lazy_re(r"[^A-Za-z0-9@._-]+")


def safe_name(text: str) -> str:
    """A file-name-safe version of ``text`` (no separators, no leading dots).

    >>> safe_name("../etc/passwd x.service")
    'etc_passwd_x.service'
    """
    s = _SAFE.sub("_", text).strip("._")
    return s[:120] or "report"


def report_stem(host: str | None, ts: datetime | None, unit: str | None) -> str:
    when = ts.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ") if ts else "unknown-time"
    return safe_name(f"{host or 'unknown-host'}-{when}-{unit or 'unknown-unit'}")


def _hosts(store: Store, analysis: Analysis) -> list[str]:
    """The host names a report may mention (anonymised everywhere with ``--anonymize``): the
    sources' and the incidents' (the latter from the analysis: it may not be stored yet)."""
    rows = store.fetchall("SELECT DISTINCT host FROM sources WHERE host IS NOT NULL")
    return sorted({str(r[0]) for r in rows} | {i.host for i in analysis.incidents if i.host})


class FigurePlan:
    """The figures of the window's reports, each submitted to the drawer once its incident's
    facts are known: :meth:`add` as :func:`postmortem.analysis.rebuild` gathers them (so a
    drawing process draws one incident's figures while the next is analysed), then
    :meth:`submit_rest` for the others in one batch (drawn by a pool when there is no drawing
    process). It holds the reports' :class:`Redactor`: file names are redacted once, in order."""

    def __init__(self, store: Store, options: BuildOptions, drawer: Drawer) -> None:
        self.store = store
        self.options = options
        self.drawer = drawer
        self._clean: Redactor | None = None
        self.jobs: dict[int, FigureJob] = {}
        self.waiters: dict[int, Callable[[], Drawn]] = {}

    def redactor(self, analysis: Analysis) -> Redactor:
        """The reports' redactor (made once every incident is known)."""
        if self._clean is None:
            o = self.options
            hosts = _hosts(self.store, analysis)
            self._clean = Redactor(redact=o.redact, anonymize=o.anonymize, hosts=hosts)
        return self._clean

    def wanted(self, inc: Incident) -> bool:
        """Whether ``inc`` gets a report: it has a time, inside the window."""
        o = self.options
        return (
            inc.ts is not None and not (o.since and inc.ts < o.since) and not (o.until and inc.ts > o.until)
        )

    def add(self, analysis: Analysis, inc: Incident) -> None:
        """Submit ``inc``'s figures now, when a drawing process would draw them meanwhile."""
        if self.drawer.concurrent and self.wanted(inc) and inc.incident_id not in self.jobs:
            self.waiters[inc.incident_id] = self._submit([self._job(analysis, inc)])[0]

    def submit_rest(self, chosen: list[Incident], analysis: Analysis) -> None:
        rest = [inc for inc in chosen if inc.incident_id not in self.jobs]
        if not rest:
            return
        jobs = [self._job(analysis, inc) for inc in rest]
        for inc, waiter in zip(rest, self._submit(jobs), strict=True):
            self.waiters[inc.incident_id] = waiter

    def _submit(self, jobs: list[FigureJob]) -> list[Callable[[], Drawn]]:
        """Submit ``jobs``; to a drawing process, a report's two figures as two jobs, which its
        copies draw at once (a one-incident ``build`` waits for the longer, not for both)."""
        if not self.drawer.concurrent:
            return self.drawer.submit(jobs)
        parts = [
            [replace(job, loads=None), replace(job, memory=None)]
            if job.memory is not None and job.loads is not None
            else [job]
            for job in jobs
        ]
        waits = iter(self.drawer.submit([part for split in parts for part in split]))
        return [_together(next(waits), next(waits)) if len(split) == 2 else next(waits) for split in parts]

    def _job(self, analysis: Analysis, inc: Incident) -> FigureJob:
        from ..figdata import loads_data, memory_data

        clean, out, facts = self.redactor(analysis), self.options.out, analysis.facts[inc.incident_id]
        stem = report_stem(clean.host(inc.host), inc.ts, clean(inc.unit) if inc.unit else None)
        loads: list[Load] = []
        for st in (facts.unit_loads, facts.recovery_loads):
            if st is not None:
                loads.extend(ld for ld in st.loads if ld not in loads)
        loads.sort(key=lambda ld: (ld.start_ts is None, ld.start_ts))
        ended_id = inc.killed_load.load_id if inc.killed_load is not None else None
        framed = (ended_id, inc.recovery_load.load_id if inc.recovery_load is not None else None)
        rb = facts.reboot
        cold = [
            ld.load_id
            for ld in loads
            if rb is not None and ld.start_ts is not None and ld.start_ts >= rb.up_ts
        ]
        zone = analysis.zone_of(inc.host, self.options.zone)
        job = FigureJob(
            stem,
            memory_data(facts, zone, f"{inc.unit or 'a server of no known unit'} — {utc_text(inc.ts)} UTC"),
            out / f"{stem}-memory.png",
            loads_data(loads, zone, framed, cold, facts.timeline.ended),
            out / f"{stem}-loads.png",
        )
        self.jobs[inc.incident_id] = job
        return job


def _together(memory: Callable[[], Drawn], loads: Callable[[], Drawn]) -> Callable[[], Drawn]:
    """Wait for a report's figures submitted as two jobs (each drawing one of them)."""
    return lambda: (memory()[0], loads()[1])


def write_reports(
    store: Store,
    options: BuildOptions,
    analysis: Analysis,
    drawer: Drawer | None = None,
    plan: FigurePlan | None = None,
) -> Written:
    """Write the window's reports and the index. ``drawer`` draws the figures (default: here,
    or many reports' in a pool of processes; see :mod:`postmortem.drawing`); ``plan`` holds the
    figures already submitted while analysing, to its own drawer (made here when not given)."""
    if plan is not None:
        drawer = plan.drawer  # the figures it submitted are waited for from there
    if drawer is None:
        with Drawer() as own:
            return write_reports(store, options, analysis, own)
    out = options.out
    out.mkdir(parents=True, exist_ok=True)
    zone = options.zone
    generated = options.now or datetime.now(UTC)
    plan = plan or FigurePlan(store, options, drawer)
    clean = plan.redactor(analysis)
    written = Written()
    sources = Sources(store)
    rows: list[IndexRow] = []
    chosen = [inc for inc in analysis.incidents if inc.incident_id in analysis.facts and plan.wanted(inc)]
    # the figures are drawn (in the drawing process, when there is one) while each report's
    # context is queried here; the context then gets the figures' names
    plan.submit_rest(chosen, analysis)
    for inc in chosen:
        job, drawn = plan.jobs[inc.incident_id], plan.waiters[inc.incident_id]
        stem = job.stem
        ctx = incident_report(
            store,
            analysis,
            inc,
            sources=sources,
            zone=analysis.zone_of(inc.host, zone),
            clean=clean,
            window_s=options.window_s,
            generated_at=generated,
            figure=None,
            loads_figure=None,
            file_stem=stem,
        )
        fig, lfig = drawn()
        ctx = replace(ctx, memory_figure=fig.name if fig else None, loads_figure=lfig.name if lfig else None)
        if options.report_format == "json":
            path = out / f"{stem}.json"
            write_whole(path, json.dumps(as_jsonable(ctx), indent=2, ensure_ascii=False) + "\n")
        elif options.report_format == "html":
            path = out / f"{stem}.html"
            figures = figures_of(out, [ctx.memory_figure, ctx.loads_figure])
            page = markdown_to_html(render("incident.md.j2", ctx, options.templates), ctx.title, figures)
            write_whole(path, page)
        else:
            path = out / f"{stem}.md"
            write_whole(path, render("incident.md.j2", ctx, options.templates))
        written.reports.append(path)
        if options.bundle:
            members = [path] + [p for p in (fig, lfig) if p is not None]
            written.bundles.append(write_bundle(out / f"{stem}.tar.gz", members))
        rows.append(
            IndexRow(
                report=path.name,
                kill_utc=utc_text(inc.ts),
                host=clean.host(inc.host) or "—",
                unit=clean(inc.unit or "—"),
                cause=ctx.cause_label,
                downtime=downtime_text(inc.downtime_s, inc.unit, serving=inc.serving),
                # (a server no source ties to a unit: the file it writes, as Impact says it)
                recovery=clean(inc.recovery_unit) if inc.recovery_unit else ctx.impact.recovery_unit,
            )
        )
    written.incidents = len(rows)
    undated = undated_kill_rows(store, sources, clean)
    written.undated = len(undated)
    if undated and not analysis.incidents:
        reason = (
            f"{plural(len(undated), 'OOM kill was', 'OOM kills were')} found, but not when "
            "(see OOM kills with no time, below)"
        )
    elif not analysis.incidents:
        reason = "no kernel OOM kill, userspace OOM kill, CUDA OOM or service death was found"
    else:
        reason = "incidents exist outside the window"
    index = IndexReport(
        generated_at=utc_text(generated) + " UTC",
        tool_version=__version__,
        window=window_text(options.since, options.until),
        incidents=rows,
        sources=source_rows(sources, None, clean),
        no_incident_reason=reason,
        undated_kills=undated,
        xids=xid_rows(store, options.since, options.until, sources, clean),
        slow_loads=slow_load_rows(analysis.load_stats, options.since, options.until, sources, clean),
    )
    if options.report_format == "json":
        written.index = out / "index.json"
        write_whole(written.index, json.dumps(as_jsonable(index), indent=2, ensure_ascii=False) + "\n")
    elif options.report_format == "html":
        written.index = out / "index.html"
        pages = frozenset(quote(p.name, safe="/._-") for p in written.reports)
        text = render("index.md.j2", index, options.templates)
        write_whole(written.index, markdown_to_html(text, "postmortem: incidents", {}, pages))
    else:
        written.index = out / "index.md"
        write_whole(written.index, render("index.md.j2", index, options.templates))
    # the store's other incidents (outside this window) keep the reports an earlier build wrote
    kept = {
        report_stem(clean.host(inc.host), inc.ts, clean(inc.unit) if inc.unit else None)
        for inc in analysis.incidents
    }
    _forget_stale(out, written, kept)
    return written


MANIFEST = ".postmortem-reports"


def _forget_stale(out: Path, written: Written, kept: set[str]) -> None:
    """Remove the files an earlier build wrote that this one did not, of incidents that no
    longer exist after re-analysis, and only those: the manifest lists what postmortem wrote;
    ``kept`` names the report stems of the store's incidents (an incident outside this build's
    window keeps its report)."""
    current = {p.name for p in [*written.reports, *written.bundles]}
    if written.index is not None:
        current.add(written.index.name)
    stems = kept | {p.name.rsplit(".", 1)[0] for p in written.reports}
    for stem in stems:
        current.update(
            f"{stem}{end}" for end in (".md", ".html", ".json", ".tar.gz", "-memory.png", "-loads.png")
        )
    manifest = out / MANIFEST
    if manifest.exists():
        for name in manifest.read_text(encoding="utf-8").split():
            if name not in current and safe_name(name) == name:
                (out / name).unlink(missing_ok=True)
    write_atomic(manifest, "\n".join(sorted(n for n in current if (out / n).exists())) + "\n")


def write_bundle(path: Path, members: list[Path]) -> Path:
    """A ``.tar.gz`` of the report and its images, with flat, safe member names."""
    with atomic_output(path) as fh, tarfile.open(fileobj=fh, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        for m in members:
            data = m.read_bytes()
            info = tarfile.TarInfo(safe_name(m.name))
            info.size = len(data)
            info.mode = 0o644
            info.mtime = 0
            tar.addfile(info, io.BytesIO(data))
    return path
