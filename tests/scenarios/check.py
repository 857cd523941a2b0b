"""Build a generated night with the command line and compare what it says with the truth.

Only the narrowest stable surface is read: ``postmortem build`` (run in-process, its terminal
output kept), the ``incidents`` table and the Markdown reports. Each comparison is a
:class:`Check` with a name; a night's checks are computed once and looked up by name.

>>> c = Check("downtime", True, "732 s", "732 s")
>>> c.ok, str(c)
(True, 'downtime: ok')
"""

from __future__ import annotations

import contextlib
import io
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from .gen import WALL_MODES, Written, write
from .spec import Scenario, Truth

#: every check a night can have, in the order they are reported
CHECKS = (
    "incidents",
    "unit",
    "kill_time",
    "cause",
    "victims",
    "recovery_unit",
    "downtime",
    "recovery_load",
    "running_queued",
    "last_activity",
    "gpu_freed",
    "restart_count",
    "host",
    "oom_kills_once",
    "report_headline",
    "report_recovery",
    "report_downtime",
    "report_running_queued",
    "report_gpu",
    "gpu_coverage",
    "report_cause",
    "report_advice",
    "report_memory",
    "report_words",
    "report_loads",
    "terminal",
)


@dataclass
class Check:
    name: str
    ok: bool | None  # None: does not apply to this night
    expected: Any = None
    got: Any = None

    def __str__(self) -> str:
        if self.ok is None:
            return f"{self.name}: n/a"
        return f"{self.name}: ok" if self.ok else f"{self.name}: expected {self.expected!r}, got {self.got!r}"


@dataclass
class Result:
    scenario: Scenario
    truth: Truth
    rows: list[dict[str, Any]]
    reports: dict[str, str]  # file name → Markdown
    index: str
    output: str  # the build's stdout and stderr
    exit_code: int
    seconds: float
    kill_rows: int = 0  # the most oom_kills rows one source holds for one process of one record
    checks: dict[str, Check] = field(default_factory=dict)


def run_build(args: list[str]) -> tuple[int, str]:
    """``postmortem ARGS`` in this process: (exit code, stdout + stderr)."""
    from postmortem.cli import main

    out = io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            main(args)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return code, out.getvalue()


def incidents(db: Path) -> list[dict[str, Any]]:
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        cur = con.execute("SELECT * FROM incidents ORDER BY ts")
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]
    finally:
        con.close()


def most_rows_per_kill(db: Path) -> int:
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        row = con.execute(
            "SELECT coalesce(max(n), 0) FROM (SELECT count(*) AS n FROM oom_kills "
            "WHERE victim_pid IS NOT NULL GROUP BY source_id, oom_id, victim_pid)"
        ).fetchone()
        return int(row[0]) if row else 0
    finally:
        con.close()


def build_night(s: Scenario, work: Path, *, reuse: bool = False, written: Written | None = None) -> Result:
    """Write the night under ``work`` and build it (``reuse``: a build kept there from an
    earlier run is read again instead, for re-checking after a change to the checks)."""
    import time

    logs, db, out = work / "logs", work / "pm.duckdb", work / "reports"
    saved = work / "build-output.txt"
    if reuse and db.exists() and saved.exists():
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            written = write(s, Path(tmp))
        code, output, seconds = 0, saved.read_text(encoding="utf-8"), 0.0
    else:
        written = written or write(s, logs)  # (given: already written to work/logs)
        t0 = time.perf_counter()
        code, output = run_build(
            ["build", "--logs", str(logs), "--db", str(db), "--out", str(out), *written.args]
        )
        seconds = time.perf_counter() - t0
        saved.write_text(output, encoding="utf-8")
    rows = incidents(db) if db.exists() else []
    reports = {
        p.name: p.read_text(encoding="utf-8") for p in sorted(out.glob("*.md")) if p.name != "index.md"
    }
    index = (out / "index.md").read_text(encoding="utf-8") if (out / "index.md").exists() else ""
    result = Result(s, written.truth, rows, reports, index, output, code, seconds)
    result.kill_rows = most_rows_per_kill(db) if db.exists() else 0
    result.checks = {c.name: c for c in compare(result)}
    return result


def without_incident(s: Scenario, t: Truth) -> set[str]:
    """The checks a night fails when the build finds no incident at all (what a finding that
    loses the whole incident breaks): the comparisons with an empty store, from the truth alone."""
    empty = Result(s, t, [], {}, "", "", 0, 0.0)
    return {c.name for c in compare(empty) if c.ok is False} - {"terminal", "oom_kills_once"}


# ----------------------------------------------------------------------------- comparisons


def _utc(x: Any) -> datetime | None:
    if x is None:
        return None
    if isinstance(x, datetime):
        return x.astimezone(UTC)
    return None


def in_truth_year(r: Result, ts: datetime | None) -> datetime | None:
    """``ts`` as the night's truth can judge it: when no source tells the year (vLLM's year-less
    lines with a year-less journal or dmesg, no --since, a copied file's mtime), the project's
    year is a guess the checks do not judge — its local wall time is moved to the truth's year."""
    if ts is None or r.truth.year_evidence:
        return ts
    from zoneinfo import ZoneInfo

    zone = ZoneInfo(r.scenario.zone)
    local, year = ts.astimezone(zone), r.truth.kill_utc.astimezone(zone).year
    if local.year == year:
        return ts
    try:
        moved = local.replace(tzinfo=None, year=year)
    except ValueError:  # (Feb 29)
        return ts
    return moved.replace(tzinfo=zone).astimezone(UTC)


def _close(a: datetime | None, b: datetime | None, tol: float) -> bool:
    return a is not None and b is not None and abs((a - b).total_seconds()) <= tol


def _at_kill(t: Truth, ts: datetime | None) -> bool:
    """A kill time right for the night: within 2 s, or for a kill dated to its minute only
    (dmesg -e/-H), in that minute and not after the kill."""
    if not t.minute_only:
        return _close(ts, t.kill_utc, 2.0)
    minute = t.kill_utc.replace(second=0, microsecond=0)
    return ts is not None and minute <= ts <= t.kill_utc + timedelta(seconds=2)


def _num_close(a: float | None, b: float | None, tol: float, rel: float = 0.0) -> bool:
    return a is not None and b is not None and abs(a - b) <= max(tol, rel * abs(b))


def table_value(md: str, label: str) -> str | None:
    """The second cell of the Markdown table row whose first cell starts with ``label``."""
    for line in md.splitlines():
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) >= 2 and cells[0].startswith(label):
                return re.sub(r"\\([\\`*_\[\]|~#@<>])", r"\1", cells[1])  # as rendered
    return None


def _unit_row(r: Result) -> dict[str, Any] | None:
    """The incident about the killed server: the one nearest the kill."""
    if not r.rows:
        return None
    k = r.truth.kill_utc
    return min(r.rows, key=lambda row: abs(((_utc(row["ts"]) or k) - k).total_seconds()))


def _report_of(r: Result, row: dict[str, Any] | None) -> str:
    if row is None or not r.reports:
        return ""
    stamp = (_utc(row["ts"]) or r.truth.kill_utc).strftime("%Y%m%dT%H%M%S")
    for name, md in r.reports.items():
        if stamp in name:
            return md
    return next(iter(r.reports.values()))


def compare(r: Result) -> list[Check]:
    t, s = r.truth, r.scenario
    row = _unit_row(r)
    md = _report_of(r, row)
    out: list[Check] = []

    def add(name: str, ok: bool | None, expected: Any = None, got: Any = None) -> None:
        out.append(Check(name, ok, expected, got))

    kill = s.startup is None
    if s.kernel_in:  # one kill, one row per source (memory.oom.group prints the victim twice)
        add("oom_kills_once", r.kill_rows == 1, 1, r.kill_rows)
    else:
        add("oom_kills_once", None)
    listed = [(x["unit"], str(_utc(x["ts"]))) for x in r.rows]
    if t.datable:
        add("incidents", len(r.rows) == 1, 1, listed)
    else:  # an undated kill need not be an incident (the terminal check says what is needed)
        add("incidents", len(r.rows) <= 1, "0 or 1", listed)
    if row is None:
        if not t.datable:
            out.append(_terminal(r))
            return out
        row = dict.fromkeys(("unit", "ts", "cause", "victim_pid", "victims", "recovery_unit"), None)
        row.update(
            dict.fromkeys(("downtime_s", "recovery_load_s", "running_at_kill", "queued_at_kill"), None)
        )
        row.update(dict.fromkeys(("last_activity_ts", "gpu_memory_freed", "restart_count", "host"), None))
    unit = row["unit"]
    if t.unit == "unknown":
        add("unit", unit in (None, "", "unknown"), "unknown (nothing names it)", unit)
    else:
        add("unit", unit == t.unit, t.unit, unit)
    ts = in_truth_year(r, _utc(row["ts"]))
    if t.datable:
        add("kill_time", _at_kill(t, ts), str(t.kill_utc), str(ts))
    else:
        add("kill_time", ts is None or _close(ts, t.kill_utc, 2.0), f"{t.kill_utc} or undated", str(ts))
    add("cause", row["cause"] == t.cause, t.cause, row["cause"])
    if t.chosen is not None and s.cause in ("cgroup_oom", "host_oom"):
        got = (row["victim_pid"], row["victims"])
        add("victims", got == (t.chosen.pid, len(t.victims)), (t.chosen.pid, len(t.victims)), got)
    else:
        add("victims", None)
    ok = row["recovery_unit"] == t.recovery_unit or (
        t.recovery_unit and row["recovery_unit"] in t.recovery_aliases
    )
    add("recovery_unit", bool(ok), t.recovery_unit, row["recovery_unit"])
    if t.downtime_s is None:
        add("downtime", row["downtime_s"] is None, None, row["downtime_s"])
        add("recovery_load", None)
    else:
        add(
            "downtime",
            _num_close(row["downtime_s"], t.downtime_s, 60.0 if t.minute_only else 5.0),
            round(t.downtime_s),
            row["downtime_s"],
        )
        add(
            "recovery_load",
            _num_close(row["recovery_load_s"], t.recovery_load_s, 6.0, 0.02),
            round(t.recovery_load_s or 0),
            row["recovery_load_s"],
        )
    if kill:
        got_rq = (row["running_at_kill"], row["queued_at_kill"])
        add(
            "running_queued",
            got_rq == (t.running_at_kill, t.queued_at_kill),
            (t.running_at_kill, t.queued_at_kill),
            got_rq,
        )
        la = in_truth_year(r, _utc(row["last_activity_ts"]))
        add("last_activity", _close(la, t.last_activity_utc, 1.5), str(t.last_activity_utc), str(la))
    else:
        add("running_queued", None)
        add("last_activity", None)
    if t.gpu_freed is None:
        add("gpu_freed", None)
    else:
        add("gpu_freed", row["gpu_memory_freed"] is True, True, row["gpu_memory_freed"])
    if s.journal_mode in WALL_MODES:  # only systemd's dated lines tell a restart from an operator's
        restarts = row["restart_count"] or 0
        add("restart_count", restarts == t.restart_count, t.restart_count, row["restart_count"])
    else:
        add("restart_count", None)
    if s.host_given or s.journal_mode not in (None, "cat"):
        add("host", row["host"] == t.host, t.host, row["host"])
    else:
        add("host", None)
    out += _report_checks(r, md)
    out.append(_loads_check(row, md))
    out.append(_terminal(r))
    return out


def _loads_check(row: dict[str, Any], md: str) -> Check:
    """Appendix D lists the recovery's load when the report tells it ("after a … load"): a load
    no unit is named for (a server started by hand) was left out of the table."""
    if row["recovery_load_s"] is None or "## D. Service loads" not in md:
        return Check("report_loads", None)
    section = md.split("## D. Service loads", 1)[1].split("\n## ", 1)[0]
    table = section.split("| Unit | Role |", 1)[-1].split("\n\n", 1)[0]
    roles = [line.split(" | ")[1] for line in table.splitlines() if line.startswith("| ") and " | " in line]
    ok = any(role.startswith(("recovery load", "fallback load")) for role in roles)
    return Check("report_loads", ok, "a recovery (or fallback) load row", roles)


def _report_checks(r: Result, md: str) -> list[Check]:
    t, s = r.truth, r.scenario
    out: list[Check] = []
    title = next((line[2:] for line in md.splitlines() if line.startswith("# ")), "")
    title = re.sub(r"\\([\\`*_\[\]|~#@<>])", r"\1", title)  # as rendered
    minute = t.kill_utc.strftime("%Y-%m-%d %H:%M")
    m = re.search(r"at (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC", title)
    as_said = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC) if m else None
    said = in_truth_year(r, as_said)
    at_kill = _at_kill(t, said) if t.minute_only else _close(said, t.kill_utc.replace(microsecond=0), 2.0)
    killed_at = table_value(md, "Killed at") or ""
    if t.startup_failure:
        ok = (
            "killed" not in title.lower() and "fail" in title.lower() and table_value(md, "Killed at") is None
        )
        out.append(Check("report_headline", ok, "… failed to start …, no 'Killed at'", title))
    elif s.cause == "gpu_oom":
        ok = "killed" not in title.lower() and at_kill
        out.append(Check("report_headline", ok, f"a crash at {minute}, not 'killed'", title))
    else:
        unit_ok = t.unit == "unknown" or t.unit in title
        ok = (
            unit_ok
            and "killed" in title
            and at_kill
            and killed_at[:16] == (as_said.strftime("%Y-%m-%d %H:%M") if as_said else "?")
        )
        out.append(Check("report_headline", ok, f"{t.unit} killed … {minute}", title))
    back = table_value(md, "Brought back by")
    if t.recovery_unit is None:
        out.append(Check("report_recovery", back in (None, "—", "-", "") or "not" in (back or ""), "—", back))
    else:
        out.append(Check("report_recovery", _names_recovery(t, back), t.recovery_unit, back))
    down = table_value(md, "Downtime")
    if t.downtime_s is None:
        out.append(Check("report_downtime", None))
    else:
        m = re.search(r"\((\d+) s\b", down or "")
        got = float(m.group(1)) if m else None
        tol = 60.0 if t.minute_only else 5.0
        out.append(Check("report_downtime", _num_close(got, t.downtime_s, tol), round(t.downtime_s), down))
    if t.startup_failure:
        out.append(Check("report_running_queued", None))
    else:
        at_kill = table_value(md, "Requests at the") or ""
        m = re.match(r"([\d,]+) running, ([\d,]+) queued", at_kill)
        exp = (str(t.running_at_kill), str(t.queued_at_kill))
        got = (m.group(1).replace(",", ""), m.group(2).replace(",", "")) if m else ("None", "None")
        out.append(Check("report_running_queued", got == exp, exp, at_kill))
    denial = "No nvidia-smi samples cover" in md
    if t.gpu_freed:
        ok = not denial and ("GPU memory was released" in md or "GPU memory released" in md)
        out.append(
            Check("report_gpu", ok, "GPU memory released (nvidia-smi)", "denied" if denial else "not said")
        )
    else:
        out.append(Check("report_gpu", None))
    if t.sampled_after_kill and not t.startup_failure:  # the report never denies samples that exist
        out.append(
            Check(
                "gpu_coverage",
                not denial,
                "no 'No nvidia-smi samples cover'",
                _line_with(md, "No nvidia-smi"),
            )
        )
    else:
        out.append(Check("gpu_coverage", None))
    from postmortem.analysis.summary import CAUSE_LABELS

    label = CAUSE_LABELS.get(t.cause, t.cause)
    # a user-space killer (earlyoom) chose the victim: the body never says the kernel did, nor
    # the victims' table
    body = md.split("# Appendix")[0]
    wrong_words = "kernel killed" if "kernel killed" in body else None
    wrong_words = "Chosen by the kernel" if "Chosen by the kernel" in md else wrong_words
    wrong_killer = t.cause == "earlyoom" and wrong_words is not None
    out.append(
        Check(
            "report_cause",
            label in md and not wrong_killer,
            label,
            _line_with(md, wrong_words) if wrong_killer and wrong_words else _cause_line(md),
        )
    )
    if t.killed_unit_back:
        out.append(
            Check(
                "report_advice",
                "reset-failed" not in md,
                "no reset-failed advice",
                _line_with(md, "reset-failed"),
            )
        )
    else:
        out.append(Check("report_advice", None))
    out.append(_memory_check(r, md))
    out.append(_words_check(r, md))
    return out


#: renderings that were once wrong on some night: a value missing, a count of one, a zero
#: rounded from under a second
_WRONG_WORDS = (
    "(0 s after",
    "all 1 of",
    "— GiB",
    "(configured: None)",
    "restart(s)",
    "None is taken",
    "busiest of its GPU ",
    "| None: ",
    "| `?` |",
    "\na process ",
)


def _words_check(r: Result, md: str) -> Check:
    """No rendering known to be wrong; a crash or a failed start is never told as a kill (the
    quoted log lines, in fenced blocks, are the logs' own words)."""
    text = re.sub(r"(?ms)^```.*?^```", "", md)
    wrong = [w for w in _WRONG_WORDS if w in text]
    if r.truth.cause in ("gpu_oom", "crash"):
        wrong += [w for w in ("the kill", "killed instance") if w in text]
    # OOMPolicy= came in systemd 243: advice names it on an older host only with that version
    if r.scenario.systemd < 243 and re.search(r"OOMPolicy=(?! \(systemd 243 and later\))", text):
        wrong.append("OOMPolicy=")
    return Check("report_words", not wrong, "none of them", [_line_with(text, w) for w in wrong])


def _names_recovery(t: Truth, back: str | None) -> bool:
    names = [n for n in (t.recovery_unit, *t.recovery_aliases) if n]
    if back is None:
        return False
    # "unknown": no source names the unit; the report says "a server of no known unit, writing …"
    unnamed = "unknown" in names and back.startswith("a server of no known unit")
    return any(n in back for n in names) or unnamed or (None in t.recovery_aliases and back == "—")


def _line_with(md: str, needle: str) -> str | None:
    return next((line[:160] for line in md.splitlines() if needle in line), None)


def _cause_line(md: str) -> str | None:
    return next((line[:120] for line in md.splitlines() if line.startswith("| ") and " % |" in line), None)


def _memory_check(r: Result, md: str) -> Check:
    """The biggest consumers' RSS: the task table's pages times the page size."""
    t = r.truth
    if t.consumers_rss_kib is None or "Biggest memory consumers" not in md:
        return Check("report_memory", None)
    total = 0.0
    section = md.split("Biggest memory consumers", 1)[1]
    for line in section.splitlines()[3:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        m = re.match(r"([\d,.]+) (GiB|MiB|KiB)", cells[2]) if len(cells) > 2 else None
        if m:
            total += (
                float(m.group(1).replace(",", "")) * {"GiB": 1 << 20, "MiB": 1 << 10, "KiB": 1}[m.group(2)]
            )
    ok = _num_close(total, float(t.consumers_rss_kib), 0, 0.05)
    return Check(
        "report_memory", ok, f"{t.consumers_rss_kib / (1 << 20):.1f} GiB", f"{total / (1 << 20):.1f} GiB"
    )


def _terminal(r: Result) -> Check:
    """An undatable kill is said on the terminal, with how to date it; index.md does not say
    "no incident" above a list of kills."""
    t = r.truth
    if t.minute_only:
        said = "dated to the minute" in r.output
        return Check(
            "terminal", r.exit_code == 0 and said, "says the kill is dated to the minute", r.output[-300:]
        )
    if t.datable:
        return Check("terminal", r.exit_code == 0, "exit 0", r.exit_code)
    said = "undated" in r.output.lower() or "--boot-time" in r.output
    no_incident = re.search(r"\bno incidents?\b", r.index, re.IGNORECASE) is not None
    return Check(
        "terminal", said and not no_incident, "says the kill is undated (--boot-time)", r.output[-300:]
    )


def kill_window(t: Truth) -> tuple[datetime, datetime]:
    return t.kill_utc - timedelta(minutes=5), t.kill_utc + timedelta(minutes=5)
