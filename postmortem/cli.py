"""The command line: options → one library call → exit code. No SQL, no parsing here.

Exit codes: 0 ok, 1 error (one ``Error: …`` line on stderr), 2 usage, 141 the reader of the
output went away (``| head``). Tracebacks only with ``--debug``.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import traceback
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from . import __version__
from .engines import engine_labels
from .errors import ExitCode, PostmortemError, UsageError
from .quick import stdout_gone

if TYPE_CHECKING:
    from datetime import tzinfo

    from .ingest import FileResult, IngestOptions, IngestSummary
    from .store.db import Store

app = typer.Typer(
    name="postmortem",
    help="Incident postmortems for LLM-serving machines: ingest journald, kernel OOM records, "
    f"inference-server logs ({engine_labels()}) and nvidia-smi snapshots into DuckDB and write "
    "Markdown reports.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

_state = {"debug": False, "verbose": False}


def _command(func: Callable[..., None]) -> Callable[..., None]:
    """``app.command()``, and a reader that stops early (``| head``) ends the command quietly.

    typer's own answer to a broken pipe is a silent exit 1, which a script cannot tell from a
    failure; tools killed by SIGPIPE exit 141, and so does this one. stdout is pointed at
    /dev/null first so the interpreter's last flush has nowhere to fail.
    """

    @functools.wraps(func)
    def run(*args: object, **kwargs: object) -> None:
        try:
            func(*args, **kwargs)
            sys.stdout.flush()
        except BrokenPipeError:
            raise typer.Exit(stdout_gone()) from None

    app.command()(run)
    return func


def _not_empty(value: str | None) -> str | None:
    """An option given as '' is a mistake (an unset shell variable), not 'the default'."""
    if value is not None and not value.strip():
        raise typer.BadParameter("give a value (an empty one is not the default)")
    return value


def _seconds(value: float) -> float:
    if not (value >= 0 and value != float("inf")):  # NaN fails the first test
        raise typer.BadParameter(f"{value}: give a number of seconds, 0 or more")
    return value


DbOpt = Annotated[
    str | None,
    typer.Option(
        "--db",
        help="Database file (default: $POSTMORTEM_DB, postmortem.toml, postmortem.duckdb).",
        callback=_not_empty,
    ),
]
TzOpt = Annotated[
    str | None,
    typer.Option(
        "--tz",
        help="IANA zone of zone-less timestamps and of --since/--until (default: postmortem.toml's, else this machine's).",
        callback=_not_empty,
    ),
]
IngestTzOpt = Annotated[
    str | None,
    typer.Option(
        "--tz",
        help="IANA zone of zone-less timestamps (default: postmortem.toml's, else this machine's).",
        callback=_not_empty,
    ),
]
WaitOpt = Annotated[
    float,
    typer.Option(
        "--wait", help="Seconds to wait for another postmortem holding the database.", callback=_seconds
    ),
]


def _version(value: bool) -> None:
    if value:
        typer.echo(f"postmortem {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")] = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="List every skipped file, not only their count.")
    ] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version.")
    ] = False,
) -> None:
    _state["verbose"] = verbose
    _state["debug"] = debug or os.environ.get("POSTMORTEM_DEBUG", "").strip().lower() not in (
        "",
        "0",
        "false",
        "no",
        "off",
    )


def _zone(tz: str | None, config_tz: str | None = None) -> tuple[tzinfo, bool]:
    """The zone for zone-less times: --tz, else postmortem.toml's, else this machine's (UTC when
    it has none); and whether one was named at all."""
    from .timeutil import get_zone

    name = tz or config_tz
    return get_zone(name), name is not None


def _open_reader(path: str | Path, *, wait: float = 0.0, warn: bool = True) -> Store:
    """The store opened read-only; a load that was interrupted (its partial rows are there until
    the next writer removes them) is said on stderr, once per path (``warn=False``: the command
    refuses such a store with its own error)."""
    from .store.db import Store

    store = Store.open_readonly(path, wait=wait)
    for name in store.interrupted() if warn else []:
        typer.echo(
            f"warning: {path}: the load of {name} was interrupted; its partial rows are in the store "
            "until the next 'postmortem ingest' or 'build' removes them",
            err=True,
        )
    return store


def _when(value: str | None, zone: tzinfo) -> datetime | None:
    if value is None:
        return None
    from .timeutil import parse_when

    return parse_when(value, zone)


def _ingest_options(
    *,
    fmt: str | None,
    tz: str | None,
    year: int | None,
    host: str | None,
    since: str | None,
    boot_time: str | None = None,
    at: str | None = None,
    columns: str | None = None,
    unit: str | None = None,
    max_bytes: int | None = None,
    progress: bool = True,
) -> IngestOptions:
    from .config import load_config
    from .ingest import IngestOptions

    config = load_config()
    zone, given = _zone(tz, config.tz)
    if year is not None and not 1970 <= year <= 2200:
        raise UsageError(f"--year {year}: give the year of the logs (1970–2200)")
    if host is not None and not host.strip():
        raise UsageError("--host '': give the host's name (or leave --host out)")
    for name, value in (("--boot-time", boot_time), ("--at", at)):
        when = _when(value, zone)
        if when is not None and not 1970 <= when.year <= 2200:
            raise UsageError(f"{name} {value!r}: a time of the logs is between 1970 and 2200")
    opts = IngestOptions(
        format=fmt,
        zone=zone,
        zone_given=given,
        zone_from_cli=tz is not None,
        year=year,
        host=host,
        since=_when(since, zone),
        boot_time=_when(boot_time, zone),
        at=_when(at, zone),
        columns=[c.strip() for c in columns.split(",")] if columns else None,
        unit=unit,
        config=config,
    )
    if max_bytes is not None and max_bytes < 1:
        raise UsageError(f"--max-bytes {max_bytes}: give a size in bytes, 1 or more")
    if max_bytes is not None:
        opts.max_bytes = max_bytes
    if progress and sys.stderr.isatty():
        opts.progress = _progress_printer()
    return opts


def _progress_printer() -> Callable[[str, int, int | None], None]:
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        transient=True,
    )
    from rich.progress import TaskID

    tasks: dict[str, TaskID] = {}
    threshold = 32 << 20

    def update(path: str, done: int, total: int | None) -> None:
        if total is not None and total < threshold:
            return
        if path not in tasks:
            if not tasks:
                bar.start()
            tasks[path] = bar.add_task(os.path.basename(path), total=total)
        bar.update(tasks[path], completed=done)
        if total is not None and done >= total:
            bar.remove_task(tasks.pop(path))
            if not tasks:
                bar.stop()

    return update


@_command
def ingest(
    paths: Annotated[
        list[str] | None, typer.Argument(help="Files or directories (recursive); '-' reads stdin.")
    ] = None,
    db: DbOpt = None,
    fmt: Annotated[
        str | None, typer.Option("--format", help="Force a format (see 'postmortem formats').")
    ] = None,
    tz: IngestTzOpt = None,
    year: Annotated[
        int | None, typer.Option("--year", help="Year of the first line of year-less logs.")
    ] = None,
    host: Annotated[
        str | None, typer.Option("--host", help="Host name for sources that do not print one.")
    ] = None,
    unit: Annotated[str | None, typer.Option("--unit", help="systemd unit a server log belongs to.")] = None,
    boot_time: Annotated[
        str | None, typer.Option("--boot-time", help="Boot time, to anchor dmesg's monotonic stamps.")
    ] = None,
    at: Annotated[
        str | None, typer.Option("--at", help="Time of snapshots that print none (bare nvidia-smi tables).")
    ] = None,
    columns: Annotated[
        str | None, typer.Option("--columns", help="Field list of a noheader nvidia-smi CSV.")
    ] = None,
    max_bytes: Annotated[
        int | None, typer.Option("--max-bytes", help="Decompressed size limit per file (default: 20 GiB).")
    ] = None,
    from_parquet: Annotated[
        str | None, typer.Option("--from-parquet", help="Merge another store's 'export --parquet' directory.")
    ] = None,
    wait: WaitOpt = 0.0,
) -> None:
    """Ingest log files into the store (format detected from content)."""
    if from_parquet:
        from .config import load_config
        from .fleet import describe_merge, merge_into

        if not paths:
            for name, value in (
                ("--format", fmt),
                ("--tz", tz),
                ("--year", year),
                ("--host", host),
                ("--unit", unit),
                ("--boot-time", boot_time),
                ("--at", at),
                ("--columns", columns),
                ("--max-bytes", max_bytes),
            ):
                if value is not None:
                    raise UsageError(
                        f"{name} is for log files, not for --from-parquet (a merge keeps what the "
                        "export says of each source)"
                    )
        merged = merge_into(load_config().db_path(db), Path(from_parquet), wait=wait)
        typer.echo(describe_merge(from_parquet, merged))
        if not paths:
            return
    if not paths:
        raise UsageError("give files or directories to ingest (or --from-parquet DIR)")
    from .config import load_config
    from .ingest import ingest_into

    opts = _ingest_options(
        fmt=fmt,
        tz=tz,
        year=year,
        host=host,
        since=None,
        boot_time=boot_time,
        at=at,
        columns=columns,
        unit=unit,
        max_bytes=max_bytes,
    )
    summary = ingest_into(load_config().db_path(db), paths, opts, wait=wait)
    _echo_files(summary.files, notes=True)
    _fail_on_errors(summary)


#: reasons a walk skips many files for, said in one line each unless --verbose (a permission
#: problem or a dangling link is listed file by file: someone may want to act on it)
_SUMMED = {"format not recognised": "format not recognised", "empty file": "empty"}


def _echo_files(files: list[FileResult], *, notes: bool = False, quiet_unchanged: bool = False) -> None:
    """One line per file read, on stdout; files skipped for an unknown format (or empty)
    summed up in one line each (``--verbose`` lists them); a failed file with nothing read is
    left to the single ``Error:`` line on stderr."""
    from .ingest import describe_result

    skipped: dict[str, list[FileResult]] = {}
    for r in files:
        if r.status == "error" and not r.lines:
            continue
        if quiet_unchanged and r.status == "unchanged" and not r.notes:
            continue
        why = next((v for k, v in _SUMMED.items() if (r.error or "").startswith(k)), None)
        if r.status == "undetected" and why and not _state["verbose"]:
            skipped.setdefault(why, []).append(r)
            continue
        line = describe_result(r)
        typer.echo(line)
        for note in r.notes if notes else ():
            if note not in line:  # a duplicate's reason is its line already
                typer.echo(f"  note: {note}")
    for why, group in skipped.items():
        if len(group) == 1:
            typer.echo(describe_result(group[0]))
        else:
            typer.echo(f"{len(group):,} files skipped: {why}; --verbose lists them")


def _fail_on_errors(summary: IngestSummary) -> None:
    errors = summary.errors
    if errors:
        first = errors[0]
        more = f" (and {len(errors) - 1} more; --verbose lists them)" if len(errors) > 1 else ""
        if _state["verbose"]:
            for r in errors[1:]:
                typer.echo(f"{r.path}: {r.error or 'failed'}", err=True)
        msg = first.error or "failed"
        if _state["debug"]:
            for r in errors:
                if r.trace:
                    typer.echo(f"{r.path}:\n{r.trace}", err=True, nl=False)
        if not msg.startswith(first.path):
            msg = f"{first.path}: {msg}"
        raise PostmortemError(f"{msg}{more}")


@_command
def query(
    sql: Annotated[str, typer.Argument(help="One SELECT statement.")],
    db: DbOpt = None,
    fmt: Annotated[str, typer.Option("--format", help="table, csv or json.")] = "table",
    no_redact: Annotated[
        bool,
        typer.Option(
            "--no-redact",
            help="Show secrets as stored (default: every text value has tokens, passwords and "
            "keys masked as [REDACTED], as in the reports).",
        ),
    ] = False,
    wait: WaitOpt = 0.0,
) -> None:
    """Run read-only SQL over the store."""
    from .config import load_config
    from .query import FORMATTERS, write_user_query

    if fmt not in FORMATTERS:
        raise UsageError(f"unknown --format {fmt!r} (use table, csv or json)")
    store = _open_reader(load_config().db_path(db), wait=wait)
    try:
        # written as it is fetched: a result of any size in bounded memory
        write_user_query(store, sql, fmt, sys.stdout, redact=not no_redact)
    finally:
        store.close()
    if fmt == "json":
        sys.stdout.write("\n")


@_command
def sources(db: DbOpt = None, wait: WaitOpt = 0.0) -> None:
    """What was ingested, with counts."""
    from .config import load_config
    from .query import format_table, run_named

    store = _open_reader(load_config().db_path(db), wait=wait)
    try:
        result = run_named(store, "sources_list")
    finally:
        store.close()
    sys.stdout.write(format_table(result))


@_command
def export(
    parquet: Annotated[
        str, typer.Option("--parquet", help="Directory for hive-partitioned Parquet (host=/date=).")
    ],
    db: DbOpt = None,
    no_redact: Annotated[
        bool,
        typer.Option("--no-redact", help="Keep secrets in text columns as stored (default: masked)."),
    ] = False,
    wait: WaitOpt = 0.0,
) -> None:
    """Export every table as hive-partitioned Parquet, for fleet-wide queries and merging."""
    from .config import load_config
    from .fleet import export_parquet

    store = _open_reader(load_config().db_path(db), wait=wait, warn=False)
    try:
        result = export_parquet(store, Path(parquet), redact=not no_redact)
    finally:
        store.close()
    typer.echo(
        f"{parquet}: {len(result.tables)} tables, {sum(result.tables.values())} rows"
        + (
            f"; rows without a host filed under {result.host}, the only host the store names"
            if result.host
            else ""
        )
    )


@_command
def formats() -> None:
    """List the input formats postmortem recognises."""
    from .parsers import all_parsers

    for name, parser in sorted(all_parsers().items()):
        typer.echo(f"{name:24} {parser.description}")


@_command
def build(
    since: Annotated[
        str | None, typer.Option("--since", help="Start of the window (journalctl syntax).")
    ] = None,
    until: Annotated[
        str | None, typer.Option("--until", help="End of the window (journalctl syntax).")
    ] = None,
    logs: Annotated[
        list[str] | None,
        typer.Option(
            "--logs",
            help="Log files or directories (repeatable; default: postmortem.toml's [defaults] logs).",
        ),
    ] = None,
    db: DbOpt = None,
    out: Annotated[
        str | None,
        typer.Option(
            "--out", help="Report directory (default: postmortem.toml's, else reports).", callback=_not_empty
        ),
    ] = None,
    tz: TzOpt = None,
    year: Annotated[
        int | None, typer.Option("--year", help="Year of the first line of year-less logs.")
    ] = None,
    host: Annotated[str | None, typer.Option("--host", help="Host name for sources that print none.")] = None,
    window: Annotated[
        str, typer.Option("--window", help="Memory-pressure window before each kill.")
    ] = "30min",
    templates: Annotated[
        str | None,
        typer.Option("--templates", help="Your template directory, searched first (trusted code)."),
    ] = None,
    report_format: Annotated[
        str,
        typer.Option(
            "--format",
            help="markdown, html (one self-contained file per incident, figures embedded) or json.",
        ),
    ] = "markdown",
    bundle: Annotated[
        bool, typer.Option("--bundle", help="Also write a .tar.gz per report for tickets.")
    ] = False,
    redact: Annotated[
        bool, typer.Option("--redact/--no-redact", help="Redact secrets in quoted lines.")
    ] = True,
    anonymize: Annotated[
        bool, typer.Option("--anonymize", help="Replace host names and IP addresses.")
    ] = False,
    no_ingest: Annotated[
        bool, typer.Option("--no-ingest", help="Only analyse and report what the store already holds.")
    ] = False,
    timings: Annotated[bool, typer.Option("--timings", help="Print the seconds each stage took.")] = False,
    wait: WaitOpt = 0.0,
) -> None:
    """Ingest new log lines, rebuild the analysis and write the reports."""
    from .build import BuildOptions
    from .build import build as run_build
    from .config import DEFAULT_OUT, load_config
    from .timeutil import parse_duration

    config = load_config()
    opts = _ingest_options(fmt=None, tz=tz, year=year, host=host, since=since)
    zone = opts.zone
    if report_format not in ("markdown", "html", "json"):
        raise UsageError(f"unknown --format {report_format!r} (use markdown, html or json)")
    options = BuildOptions(
        db=config.db_path(db),
        logs=[] if no_ingest else config.log_paths(logs),
        out=Path(out or config.out or DEFAULT_OUT),
        since=opts.since,
        until=_when(until, zone),
        zone=zone,
        ingest=opts,
        templates=[templates] if templates else [],
        window_s=parse_duration(window),
        report_format=report_format,
        bundle=bundle,
        redact=redact,
        anonymize=anonymize,
        wait=wait,
    )
    result = run_build(options)
    _echo_files(result.ingest.files, quiet_unchanged=True)  # a damaged archive says so every run
    undated = (
        f"; {result.undated} OOM kill(s) with no time, listed in the index (give --boot-time or a "
        "journal of that boot)"
        if result.undated
        else ""
    )
    for path, year in result.year_guesses:
        typer.echo(
            f"note: {path}: its stamps have no year; {year} is the file's modification time's and no "
            "dated source confirms it (give --year or --since if the file was copied)"
        )
    for path, kills in result.minute_kills:
        typer.echo(
            f"note: {path}: {kills} OOM kill(s) dated to the minute only (dmesg -e/-H stamps); the "
            "reports place each in its minute, no earlier than the killed server's last line when its "
            "log is given (give the journal or syslog of that night to date them to the second)"
        )
    typer.echo(f"{result.incidents} incident(s){undated}; reports in {options.out}")
    for p in result.reports:
        typer.echo(f"  {p}")
    if result.index:
        typer.echo(f"  {result.index}")
    for p in result.bundles:
        typer.echo(f"  {p}")
    if timings:
        typer.echo("timings: " + ", ".join(f"{k} {v:.2f} s" for k, v in result.timings.items()))
    _fail_on_errors(result.ingest)


@_command
def incidents(
    since: Annotated[str | None, typer.Option("--since", help="Only incidents after this time.")] = None,
    until: Annotated[str | None, typer.Option("--until", help="Only incidents before this time.")] = None,
    db: DbOpt = None,
    tz: TzOpt = None,
    fmt: Annotated[str, typer.Option("--format", help="table or json.")] = "table",
    wait: WaitOpt = 0.0,
) -> None:
    """List the incidents found by the last build."""
    from .config import load_config
    from .query import format_json, format_table, run_named
    from .timeutil import check_range

    if fmt not in ("table", "json"):
        raise UsageError(f"unknown --format {fmt!r} (use table or json)")
    config = load_config()
    zone, _ = _zone(tz, config.tz)
    lo, hi = _when(since, zone), _when(until, zone)
    check_range(lo, hi)
    store = _open_reader(config.db_path(db), wait=wait)
    try:
        result = run_named(store, "incidents_list", {"since": lo, "until": hi})
    finally:
        store.close()
    if fmt == "json":
        sys.stdout.write(format_json(result) + "\n")
        return
    if not result.rows:
        if lo is not None or hi is not None:
            typer.echo("No incidents in that window (without --since/--until: all of them).")
        else:
            typer.echo(
                "No incidents in the store (logs ingested since the last build count once 'postmortem build' runs)."
            )
        return
    from .report.listing import incident_table

    sys.stdout.write(format_table(incident_table(result)))


@_command
def timeline(
    incident_id: Annotated[int, typer.Argument(help="Incident number from 'postmortem incidents'.")],
    window: Annotated[str, typer.Option("--window", help="How far before the kill to look.")] = "30min",
    after: Annotated[
        str | None,
        typer.Option(
            "--after",
            help="How far after the kill to look (default: until the service was ready again, "
            "plus 90 s; at least 10min).",
        ),
    ] = None,
    db: DbOpt = None,
    fmt: Annotated[str, typer.Option("--format", help="table or json.")] = "table",
    no_redact: Annotated[
        bool, typer.Option("--no-redact", help="Show secrets in the events as logged (default: masked).")
    ] = False,
    wait: WaitOpt = 0.0,
) -> None:
    """The memory-pressure timeline and the merged events around one incident."""
    from .config import load_config
    from .report.timeline_view import as_json, as_text, load_view
    from .timeutil import parse_duration

    if fmt not in ("table", "json"):
        raise UsageError(f"unknown --format {fmt!r} (use table or json)")
    window_s = parse_duration(window)
    after_s = parse_duration(after, allow_zero=True) if after is not None else None
    store = _open_reader(load_config().db_path(db), wait=wait)
    try:
        view = load_view(store, incident_id, window_s=window_s, after_s=after_s, redact=not no_redact)
    finally:
        store.close()
    sys.stdout.write(as_json(view) if fmt == "json" else as_text(view))


@_command
def runbook(
    incident_id: Annotated[int, typer.Argument(help="Incident number from 'postmortem incidents'.")],
    out: Annotated[
        str | None,
        typer.Option("--out", help="Directory to write into (default: runbook-<incident id>)."),
    ] = None,
    db: DbOpt = None,
    templates: Annotated[
        str | None, typer.Option("--templates", help="Your template directory (trusted code).")
    ] = None,
    wait: WaitOpt = 0.0,
) -> None:
    """Write the fallback the report recommends, to review: systemd drop-ins and a readiness wait."""
    from pathlib import Path

    from .config import load_config
    from .runbook import plan, write

    config = load_config()
    store = _open_reader(config.db_path(db), wait=wait)
    try:
        rb = plan(store, incident_id)
    finally:
        store.close()
    for path in write(rb, Path(out or f"runbook-{incident_id}"), (templates,) if templates else ()):
        typer.echo(str(path))


@_command
def hook(
    action: Annotated[str, typer.Argument(help="install, uninstall or status.")],
    unit: Annotated[str | None, typer.Argument(help="The unit whose failure starts a capture.")] = None,
    root: Annotated[str, typer.Option("--root", help="The file system root to write under.")] = "/",
    dest: Annotated[
        str, typer.Option("--dest", help="Where bundles go: <dest>/<unit>/postmortem-<host>-<UTC time>/.")
    ] = "/var/lib/postmortem",
    collector: Annotated[
        str,
        typer.Option("--collector", help="The collector's command line (default: the zipapp under python3)."),
    ] = "/usr/bin/python3 /usr/local/lib/postmortem/postmortem-collect.pyz",
    timeout: Annotated[str, typer.Option("--timeout", help="How long a capture may run.")] = "5min",
    since: Annotated[str, typer.Option("--since", help="How far back the capture reads.")] = "-6h",
    then: Annotated[
        str | None,
        typer.Option("--then", help="A command run after the capture; {bundle} is the bundle's path."),
    ] = None,
) -> None:
    """Capture the evidence when a unit fails: a systemd drop-in (OnFailure=) and a capture unit."""
    from pathlib import Path

    from . import hook as hooks
    from .timeutil import parse_duration

    spec = hooks.Hook(unit or "x.service", dest, collector, int(parse_duration(timeout)), since, then)
    base = Path(root)
    if action == "status":
        for name, state in hooks.status(base, unit):
            typer.echo(f"{name}: {state}")
        return
    if action not in ("install", "uninstall") or unit is None:
        raise UsageError("use: postmortem hook install|uninstall UNIT, or postmortem hook status [UNIT]")
    done = hooks.install(base, spec) if action == "install" else hooks.uninstall(base, unit)
    for path in done:
        typer.echo(f"{'wrote' if action == 'install' else 'removed'} {path}")
    if action == "install":
        typer.echo("then: systemctl daemon-reload")


@_command
def trends(
    since: Annotated[str | None, typer.Option("--since", help="Start of the window.")] = None,
    until: Annotated[str | None, typer.Option("--until", help="End of the window.")] = None,
    out: Annotated[
        str | None,
        typer.Option(
            "--out",
            help="Directory for trends.md and its plots (default: postmortem.toml's, else reports).",
            callback=_not_empty,
        ),
    ] = None,
    db: DbOpt = None,
    tz: TzOpt = None,
    templates: Annotated[
        str | None, typer.Option("--templates", help="Your template directory (trusted code).")
    ] = None,
    wait: WaitOpt = 0.0,
) -> None:
    """Incidents (OOM kills and service deaths) per host and unit per day and week, load-time trends
    per host, unit and model, downtime per incident."""
    from .config import DEFAULT_OUT, load_config
    from .report.trends import trends as run_trends
    from .timeutil import check_range

    config = load_config()
    zone, _ = _zone(tz, config.tz)
    lo, hi = _when(since, zone), _when(until, zone)
    check_range(lo, hi)
    store = _open_reader(config.db_path(db), wait=wait)
    try:
        path = run_trends(
            store,
            Path(out or config.out or DEFAULT_OUT),
            since=lo,
            until=hi,
            templates=[templates] if templates else [],
        )
    finally:
        store.close()
    typer.echo(str(path))


@_command
def collect(
    since: Annotated[
        str, typer.Option("--since", help="Start of the journal window (journalctl syntax).")
    ] = "-24h",
    until: Annotated[str | None, typer.Option("--until", help="End of the journal window.")] = None,
    unit: Annotated[
        list[str] | None,
        typer.Option(
            "--unit",
            help="Unit glob (repeatable): their journal plus the kernel's; default: units named after an engine.",
        ),
    ] = None,
    out: Annotated[str, typer.Option("--out", help="Directory for the bundle.")] = ".",
    archive: Annotated[bool, typer.Option("--archive", help="Also write <bundle>.tar.gz.")] = False,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds each command may run.")] = 60.0,
    max_bytes: Annotated[
        int, typer.Option("--max-bytes", help="Size limit per output file (bytes); the rest is cut.")
    ] = 256 << 20,
    kubernetes: Annotated[
        bool,
        typer.Option(
            "--kubernetes", help="Also the pods, events, logs and describe (kubectl), and node files."
        ),
    ] = False,
    namespace: Annotated[
        str | None, typer.Option("--namespace", help="With --kubernetes: this namespace.")
    ] = None,
    pod: Annotated[str | None, typer.Option("--pod", help="With --kubernetes: this pod.")] = None,
) -> None:
    """Save the evidence on this machine (journal, dmesg, nvidia-smi, units, logs) as a bundle."""
    from .collect import CollectOptions, summary_lines

    warned: list[str] = []

    def warn(text: str) -> None:
        warned.append(text)
        typer.echo(f"warning: {text}", err=True)

    from .collect import collect as run_collect
    from .config import load_config

    result = run_collect(
        CollectOptions(
            out=Path(out),
            since=since or None,
            until=until,
            units=list(unit or []),
            archive=archive,
            timeout_s=timeout,
            max_bytes=max_bytes,
            config=load_config(),
            warn=warn,
            kubernetes=kubernetes or bool(namespace or pod),
            namespace=namespace,
            pod=pod,
        )
    )
    for line in summary_lines(result, frozenset(warned)):
        typer.echo(line)


def _stop_on_signals() -> list[tuple[str, int]]:
    """SIGTERM (systemctl stop, ``timeout``) and SIGHUP (a dropped ssh session) end a command
    the way Ctrl-C does — the load under way rolled back — rather than at once, leaving it for
    the next writer to clean up. Returns the list the handler puts (name, number) in."""
    import signal

    got: list[tuple[str, int]] = []

    def stop(signum: int, _frame: object) -> None:
        if not got:
            got.append((signal.Signals(signum).name, signum))
        raise KeyboardInterrupt

    for sig in (signal.SIGTERM, signal.SIGHUP):
        with contextlib.suppress(ValueError, OSError):  # not the main thread, or not settable here
            signal.signal(sig, stop)
    return got


def _environmental(exc: Exception) -> bool:
    """A DuckDB error about the store file itself (corrupt blocks, I/O), not about our SQL."""
    module = type(exc).__module__ or ""
    if not module.startswith(("duckdb", "_duckdb")):
        return False
    name = type(exc).__name__
    text = str(exc)
    return name in ("IOException", "OutOfMemoryException", "PermissionException") or any(
        words in text
        for words in (
            "Corrupt database file",
            # a commit or checkpoint the filesystem refused (then DuckDB invalidates the store)
            "No space left on device",
            "Disk quota exceeded",
            "Read-only file system",
            "Could not write file",
        )
    )


def _first_line(exc: BaseException) -> str:
    """The first non-blank line of an exception's text: the error is one line (DuckDB's add the
    query and a caret underneath, and their candidates)."""
    return next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app and map exceptions to exit codes."""
    import signal

    from .startup import probe_after_pyarrow

    probe_after_pyarrow()
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        _run(argv, _stop_on_signals())
    finally:  # a caller's own handlers (a test run, a library use) come back
        for sig, handler in before.items():
            with contextlib.suppress(ValueError, OSError, TypeError):
                signal.signal(sig, handler)


def _interrupted_exit(stopped: list[tuple[str, int]]) -> NoReturn:
    if stopped:
        typer.echo(f"Error: stopped by {stopped[0][0]}", err=True)
        sys.exit(128 + stopped[0][1])
    typer.echo("Error: interrupted", err=True)
    sys.exit(130)


def _is_interrupt(exc: BaseException) -> bool:
    """A query DuckDB stopped because SIGINT arrived while it ran (its InterruptException, or
    the RuntimeError some releases raise from a fetch)."""
    if type(exc).__name__ == "InterruptException":
        return True
    return isinstance(exc, RuntimeError) and str(exc).strip().rstrip("!.").lower() == "query interrupted"


def _unexpected(exc: Exception, stopped: list[tuple[str, int]]) -> None:
    """An exception no command raised on purpose: an interrupt inside DuckDB, the store file's
    own trouble, click's usage errors, or a bug (exit 70)."""
    if _is_interrupt(exc):  # DuckDB's answer to the Ctrl-C that landed in a query
        _interrupted_exit(stopped)
    if _environmental(exc):
        if _state["debug"]:
            traceback.print_exc()
        typer.echo(f"Error: {_first_line(exc)}", err=True)
        sys.exit(int(ExitCode.ERROR))
    # click's exceptions (vendored by newer typer releases): usage errors and the like
    show = getattr(exc, "show", None)
    code = getattr(exc, "exit_code", None)
    if callable(show) and isinstance(code, int):
        show()
        sys.exit(code)
    if _state["debug"]:
        traceback.print_exc()
    typer.echo(
        f"Error: internal error: {type(exc).__name__}: {_first_line(exc)} (rerun with --debug and report it)",
        err=True,
    )
    sys.exit(int(ExitCode.BUG))


def _run(argv: list[str] | None, stopped: list[tuple[str, int]]) -> None:
    try:
        rv = app(args=argv, standalone_mode=False)
        if rv == 130:  # typer's answer to Ctrl-C (no command returns it), or to our SIGTERM/SIGHUP
            if stopped:
                typer.echo(f"Error: stopped by {stopped[0][0]}", err=True)
                sys.exit(128 + stopped[0][1])
            typer.echo("Error: interrupted", err=True)
        sys.exit(rv if isinstance(rv, int) else 0)
    except PostmortemError as exc:
        if _state["debug"]:
            traceback.print_exc()
        typer.echo(f"Error: {exc}", err=True)
        sys.exit(int(exc.exit_code))
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except SystemExit:
        raise
    except typer.Abort:
        typer.echo("Error: aborted", err=True)
        sys.exit(int(ExitCode.ERROR))
    except KeyboardInterrupt:
        _interrupted_exit(stopped)
    except OverflowError as exc:
        # a date in the logs so far off (the year 9999) that reckoning with it leaves the calendar
        if _state["debug"]:
            traceback.print_exc()
        typer.echo(
            f"Error: a time in the logs is beyond the calendar ({_first_line(exc)}): check the years "
            "the files print (give --since/--until to leave such lines out)",
            err=True,
        )
        sys.exit(int(ExitCode.ERROR))
    except OSError as exc:
        # the machine's answer (a path that is a file, no permission, a full disk), not a bug
        if _state["debug"]:
            traceback.print_exc()
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        typer.echo(f"Error: {where}{exc.strerror or exc}", err=True)
        sys.exit(int(ExitCode.ERROR))
    except Exception as exc:
        _unexpected(exc, stopped)
