"""Reports: typed contexts, plots and Jinja rendering of the analysis.

``build`` writes one Markdown report per incident in the window to
``<out>/<host>-<UTC time>-<unit>.md`` with its figures beside it, and ``<out>/index.md`` listing
them (``--format json``: the same contexts as ``.json``; ``--bundle``: a ``.tar.gz`` per report).
"""

from __future__ import annotations

import io
import json
import re
import tarfile
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from .. import __version__
from ..analysis import Analysis
from ..analysis.model import Load
from ..analysis.summary import human
from ..drawing import Drawer, FigureJob
from ..store.db import Store
from ..timeutil import UTC
from .context import (
    IndexReport,
    IndexRow,
    Sources,
    as_jsonable,
    incident_report,
    source_rows,
    utc_text,
    window_text,
)
from .redact import Redactor
from .render import render

if TYPE_CHECKING:
    from ..build import BuildOptions


@dataclass
class Written:
    reports: list[Path] = field(default_factory=list)
    index: Path | None = None
    incidents: int = 0
    bundles: list[Path] = field(default_factory=list)


_SAFE = re.compile(r"[^A-Za-z0-9@._-]+")


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


def _hosts(store: Store) -> list[str]:
    rows = store.fetchall(
        "SELECT DISTINCT host FROM sources WHERE host IS NOT NULL "
        "UNION SELECT DISTINCT host FROM incidents WHERE host IS NOT NULL ORDER BY 1"
    )
    return [str(r[0]) for r in rows]


def write_reports(
    store: Store, options: BuildOptions, analysis: Analysis, drawer: Drawer | None = None
) -> Written:
    """Write the window's reports and the index. ``drawer`` draws the figures (default: here,
    or many reports' in a pool of processes; see :mod:`postmortem.drawing`)."""
    if drawer is None:
        with Drawer() as own:
            return write_reports(store, options, analysis, own)
    out = options.out
    out.mkdir(parents=True, exist_ok=True)
    zone = options.zone
    generated = options.now or datetime.now(UTC)
    clean = Redactor(redact=options.redact, anonymize=options.anonymize, hosts=_hosts(store))
    written = Written()
    sources = Sources(store)
    rows: list[IndexRow] = []
    chosen = [
        inc
        for inc in analysis.incidents
        if inc.ts is not None
        and inc.incident_id in analysis.facts
        and not (options.since and inc.ts < options.since)
        and not (options.until and inc.ts > options.until)
    ]
    jobs = []
    for inc in chosen:
        facts = analysis.facts[inc.incident_id]
        stem = report_stem(clean.host(inc.host), inc.ts, clean(inc.unit) if inc.unit else None)
        loads: list[Load] = []
        for st in (facts.unit_loads, facts.recovery_loads):
            if st is not None:
                loads.extend(ld for ld in st.loads if ld not in loads)
        loads.sort(key=lambda ld: (ld.start_ts is None, ld.start_ts))
        highlight = [ld.load_id for ld in (inc.killed_load, inc.recovery_load) if ld is not None]
        jobs.append(
            FigureJob(
                stem,
                facts,
                out / f"{stem}-memory.png",
                f"{inc.unit} — {utc_text(inc.ts)} UTC",
                loads,
                out / f"{stem}-loads.png",
                highlight,
                zone,
            )
        )
    # the figures are drawn (in the drawing process, when there is one) while each report's
    # context is queried here; the context then gets the figures' names
    figures = drawer.submit(jobs)
    for inc, job, drawn in zip(chosen, jobs, figures, strict=True):
        stem = job.stem
        ctx = incident_report(
            store,
            analysis,
            inc,
            sources=sources,
            zone=zone,
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
            path.write_text(
                json.dumps(as_jsonable(ctx), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
            )
        else:
            path = out / f"{stem}.md"
            path.write_text(render("incident.md.j2", ctx, options.templates), encoding="utf-8")
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
                downtime=human(inc.downtime_s) if inc.downtime_s is not None else "not restored",
                recovery=clean(inc.recovery_unit or "—"),
            )
        )
    written.incidents = len(rows)
    reason = (
        "no kernel OOM kill, userspace OOM kill, CUDA OOM or service death was found"
        if not analysis.incidents
        else "incidents exist outside the window"
    )
    index = IndexReport(
        generated_at=utc_text(generated) + " UTC",
        tool_version=__version__,
        window=window_text(options.since, options.until),
        incidents=rows,
        sources=source_rows(sources, None, clean),
        no_incident_reason=reason,
    )
    if options.report_format == "json":
        written.index = out / "index.json"
        written.index.write_text(
            json.dumps(as_jsonable(index), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
    else:
        written.index = out / "index.md"
        written.index.write_text(render("index.md.j2", index, options.templates), encoding="utf-8")
    _forget_stale(out, written)
    return written


MANIFEST = ".postmortem-reports"


def _forget_stale(out: Path, written: Written) -> None:
    """Remove the files an earlier build wrote that this one did not (incidents that no longer
    exist after re-analysis), and only those: the manifest lists what postmortem wrote."""
    current = {p.name for p in [*written.reports, *written.bundles]}
    if written.index is not None:
        current.add(written.index.name)
    for p in written.reports:
        stem = p.name.rsplit(".", 1)[0]
        current.update(f"{stem}-{kind}.png" for kind in ("memory", "loads"))
    manifest = out / MANIFEST
    if manifest.exists():
        for name in manifest.read_text(encoding="utf-8").split():
            if name not in current and safe_name(name) == name:
                (out / name).unlink(missing_ok=True)
    manifest.write_text("\n".join(sorted(n for n in current if (out / n).exists())) + "\n", encoding="utf-8")


def write_bundle(path: Path, members: list[Path]) -> Path:
    """A ``.tar.gz`` of the report and its images, with flat, safe member names."""
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for m in members:
            data = m.read_bytes()
            info = tarfile.TarInfo(safe_name(m.name))
            info.size = len(data)
            info.mode = 0o644
            info.mtime = 0
            tar.addfile(info, io.BytesIO(data))
    return path
