"""Known-wrong mechanisms: for each finding of FINDINGS.md, which checks of a night it breaks.

A finding is a predicate over the scenario (and its truth) that states *when* the mechanism is
at play, written from reading the code, and the checks it then breaks. The test suite marks a
night's check ``xfail(strict=True)`` with the ids of the findings that explain it, so a fix that
lands turns the mark into a failure (XPASS) and the fixer removes the finding here.

The predicates restate how the project behaves today (``postmortem/ingest.py``'s file-name rule,
the journal sink's claims, ``analysis/loads.py``'s start claims): when a fix changes that, the
predicate goes with the finding.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from postmortem.unitname import unit_from_name

from .gen import WALL_MODES
from .spec import Scenario, Server, Truth

STRUCTURED = {"export", "json", "verbose"}
TEXT_WALL = WALL_MODES - STRUCTURED  # short, short-iso, short-precise, short-full, syslog
NO_WALL = {"cat", "short-monotonic"}
MONO_DMESG = {"raw", "prio", "decode", "kmsg"}
KERNEL_CAUSES = {"cgroup_oom", "host_oom"}

ROW = ("unit", "kill_time", "cause", "victims", "recovery_unit", "downtime", "recovery_load")
RUNNING = {"running_queued", "last_activity", "report_running_queued"}
RECOVERY = {"recovery_unit", "report_recovery"}
DOWNTIME = {"downtime", "recovery_load", "report_downtime"}
CAUSE = {"cause", "report_cause"}


def name_unit(path: str) -> str | None:
    """The unit ``postmortem/ingest.py`` (``_unit_from_name``) makes of a log file's name: a
    name ending in ``.service`` (before ``.log``), else a name containing an engine's name
    (``sglang``, ``vllm``) + ``.service``."""
    stem = re.sub(r"(\.(log|txt|out|err|gz|xz|bz2|zst|\d+))+$", "", path.rsplit("/", 1)[-1])
    if re.fullmatch(r"[A-Za-z0-9@_.:-]+\.(service|scope)", stem):
        return stem
    if re.fullmatch(r"[A-Za-z0-9@_:-]+", stem) and ("sglang" in stem.lower() or "vllm" in stem.lower()):
        return f"{stem}.service"
    return None


def described(s: Scenario) -> bool:
    """Job lines (``Started …``) carry the unit's Description, not its name."""
    return s.journal_mode is not None and (s.systemd < 249 or s.status_format == "description")


def readable(s: Scenario) -> bool:
    """The server's lines are read at all (in the journal, or a file in the engine's own format
    or a CRI pod log's, which the k8s-cri parser reads through the engine)."""
    return True  # (SGLang's and vLLM's lines are read in every envelope the generator writes)


def file_name(s: Scenario, x: Server) -> str:
    """The name the generator gave ``x``'s log file (a clash with another file's is numbered):
    a server started by hand first, then the units' servers when their lines go to files."""
    order = [srv for srv in (s.fallback,) if srv is not None and not srv.unit]
    if s.sglang_in == "file":
        order += [srv for srv in (s.server, s.other, s.fallback) if srv is not None and srv.unit]
    taken: list[str] = []
    for srv in order:
        name, i = srv.log_name, 1
        while name in taken:
            i += 1
            name = f"{i}-{srv.log_name}"
        taken.append(name)
        if srv is x:
            return name
    return x.log_name


def by_hand(x: Server | None) -> bool:
    """A server the operator started in a shell (no unit; its output in its own file)."""
    return x is not None and not x.unit


def stream_unit(s: Scenario, x: Server) -> str | None:
    """The unit the project gives the server's statistics and events (``server_stats.unit``)."""
    if by_hand(x):
        return name_unit(file_name(s, x))
    if not readable(s):
        return None
    if s.sglang_in == "file":
        return name_unit(file_name(s, x))
    if s.journal_mode in STRUCTURED:
        return x.unit
    if s.journal_mode in TEXT_WALL and not described(s):
        return x.unit  # the journal sink's claim: a .service started ≤ 120 s before its first line
    return None


def load_unit(s: Scenario, x: Server) -> str | None:
    """The unit of a load of ``x`` (``service_loads.unit``): its stream's, else the unit of the
    systemd start it claims (a Description in a text journal's described job lines)."""
    if not readable(s) and not by_hand(x):
        return None  # no load at all
    unit = stream_unit(s, x)
    if unit is not None or s.journal_mode not in WALL_MODES:
        return unit
    if s.journal_mode in STRUCTURED or not described(s):
        return x.unit
    return x.description


def recovery_server(s: Scenario) -> Server | None:
    if s.recovery in ("restart", "operator"):
        return s.server
    if s.recovery in ("fallback", "onfailure", "manual"):
        return s.fallback
    return None


def server_names_victim(s: Scenario) -> bool:
    """The server's log names the process the kernel killed, with its own time: SGLang
    0.5.10+'s ``Subprocess scheduler_0 (pid=…) crashed with exit code -9`` (a scheduler killed
    alone); a V0 vLLM's ``Worker VllmWorkerProcess pid N died, exit code: -9`` (a rank's own
    process, TP > 1); V1's dead worker (0.8.5, TP > 1: its pid in its own lines' prefix) or
    engine core (0.10.1+: its process title) by name (``queries/anchor_monotonic.sql``). Not a
    0.8 engine core (nothing said), a V0 engine ("already dead", no pid), the API server's own
    process (0.4 with one rank)."""
    if s.cause not in KERNEL_CAUSES or s.oom_group:
        return False
    if s.engine == "vllm":
        if s.vllm_version in ("0.4.3", "0.6.6", "0.8.5"):
            return s.server.tp > 1
        return True
    return s.sglang_version not in ("0.4.6.post1", "0.5.2")


def kill_dated_by_server(s: Scenario) -> bool:
    """An undated kernel record gets its time from the server's report of the victim's pid
    (:func:`server_names_victim`), when the server's unit agrees with the record's."""
    unit = stream_unit(s, s.server)
    return server_names_victim(s) and readable(s) and unit in (None, s.server.unit)


def server_dated(s: Scenario) -> bool:
    """The kill's time comes from SGLang's line about its victim (no other source dates it)."""
    return (
        s.cause in KERNEL_CAUSES
        and s.kernel_in == ("dmesg",)
        and s.dmesg_format in MONO_DMESG
        and s.journal_mode not in STRUCTURED
        and kill_dated_by_server(s)
    )


def kernel_undated(s: Scenario) -> bool:
    """The kernel's record is only in a dmesg file with boot-relative stamps (or ``-H``'s
    minutes) and nothing the project uses gives that boot its wall-clock time."""
    if s.cause not in KERNEL_CAUSES or s.kernel_in != ("dmesg",) or s.startup is not None:
        return False
    if s.dmesg_format in ("ctime", "iso", "reltime"):
        return False  # (-e/-H: dated to the minute, its seconds from systemd's lines when there)
    if s.dmesg_format in MONO_DMESG and s.journal_mode in STRUCTURED:
        return False  # the journal's boot id and monotonic clock anchor the boot
    if s.dmesg_format in MONO_DMESG and s.journal_mode in WALL_MODES and systemd_tells_kill(s):
        return False  # systemd's lines about the unit's OOM kill anchor the boot
    return not (s.dmesg_format in MONO_DMESG and kill_dated_by_server(s))


def systemd_tells_kill(s: Scenario) -> bool:
    """systemd logs a line of the kill: its OOM sentence (cgroup v2), or the main process killed
    by SIGKILL — always for SGLang (its SIGQUIT handler takes the tree down), for vLLM only when
    the kernel killed every process (memory.oom.group) or the API server itself (0.4, one rank):
    else its API server exits 1, which says nothing of a kill."""
    if s.engine != "vllm" or s.cgroup_v2 or s.oom_group:
        return True
    return s.vllm_version == "0.4.3" and s.server.tp == 1


WHOLE_SECONDS = {"short", "short-iso", "short-full"}  # and rsyslog's RFC 3164 files


def whole_seconds(s: Scenario) -> bool:
    """The journal's stamps are whole seconds (truncated)."""
    if s.journal_mode == "syslog":
        return s.distro not in ("el9", "debian13", "fedora43")  # those write RFC 3339 with µs
    return s.journal_mode in WHOLE_SECONDS


def kill_precise(s: Scenario) -> bool:
    """The incident's time has its microseconds: some source stamps the kill line that finely."""
    if s.cause in KERNEL_CAUSES and not kernel_undated(s):
        if "dmesg" in s.kernel_in and s.dmesg_format in (*MONO_DMESG, "iso"):
            return True
        return "journal" in s.kernel_in and not whole_seconds(s)
    return not whole_seconds(s)


def failure_seen_after_kill(s: Scenario, t: Truth) -> bool:
    """systemd's ``Failed with result`` of the kill is not before the incident's time: a line
    stamped in whole seconds inside the kill's own second reads as earlier than a kill known to
    the microsecond, and rules that look after the kill skip it."""
    if t.death_utc is None or s.journal_mode not in WALL_MODES:
        return False
    failed = t.death_utc + timedelta(seconds=0.002)
    if whole_seconds(s):
        failed = failed.replace(microsecond=0)
    kill = t.kill_utc if kill_precise(s) else t.kill_utc.replace(microsecond=0)
    if server_dated(s):  # the boot is the server's line's time minus the kill's seconds since boot
        said = t.kill_utc + timedelta(seconds=0.6)
        kill = said.replace(microsecond=said.microsecond // 1000 * 1000)
        if s.sglang_version == "0.5.10" or s.engine == "vllm":  # whole seconds: the anchor adds half a second
            kill = said.replace(microsecond=500_000)
    if s.cause == "gpu_oom" or kernel_undated(s):
        kill = t.death_utc if not whole_seconds(s) else t.death_utc.replace(microsecond=0)
    return failed >= kill


# ----------------------------------------------------------------------------- findings


@dataclass(frozen=True)
class Finding:
    id: str
    title: str
    breaks: Callable[[Scenario, Truth], set[str]]


def _kill_dated(s: Scenario) -> bool:
    """The kernel's record of the kill is dated by its own stamps (dmesg -T or iso)."""
    return (
        s.cause in ("cgroup_oom", "host_oom")
        and "dmesg" in s.kernel_in
        and s.dmesg_format in ("ctime", "iso")
    )


def _no_wall(s: Scenario, t: Truth) -> set[str]:
    """A journal without wall-clock times (``-o cat``, or ``short-monotonic`` with no server
    line in it, no header, nor systemd's line of a dated kill to date its boot): no unit's start
    or death can be put beside the server's lines, so the recovery's unit is not named."""
    if s.journal_mode not in NO_WALL:
        return set()
    if s.journal_mode == "short-monotonic" and (
        s.sglang_in == "journal" or (_kill_dated(s) and systemd_tells_kill(s)) or s.systemd < 250
    ):
        # the server's stamps, the dated kill beside systemd's line of it, or the header of
        # systemd before 250 (each file printed whole) give its boot (queries/anchor_journal.sql);
        # a vLLM API server's exit 1 is no line of a kill
        return set()
    rec = recovery_server(s)
    if rec is None or by_hand(rec) or not readable(s):
        return set()
    if s.sglang_in == "journal":
        return set(RECOVERY)  # (its stdout there has no time to put beside the unit's start)
    if rec is s.server:
        return set()  # the same file: the killed run's unit, linked by its pid or name
    name = file_name(s, rec)
    if unit_from_name(name, guess=False) == rec.unit:
        return set()  # (`fallback-a.service.log` spells its unit: the ingest takes it)
    stem = re.sub(r"(\.(log|txt|out|err|\d+))+$", "", name)
    if stem not in (rec.unit, rec.unit.removesuffix(".service")):
        return set(RECOVERY)
    # a file named after its unit names it when a line names that unit: systemd's job lines
    # (unless they carry Descriptions), or the operator's `systemctl start` of a fallback;
    # OnFailure= starts it under its Description only
    return set() if not described(s) or s.recovery == "fallback" else set(RECOVERY)


def _claims_any_start(s: Scenario, t: Truth) -> set[str]:
    """A server started by hand right after a oneshot whose end systemd before 240 does not log:
    the oneshot's start is the server's."""
    rec = recovery_server(s)
    if not by_hand(rec) or t.recovered_utc is None or t.recovery_load_s is None:
        return set()
    if s.journal_mode is None or s.journal_mode in NO_WALL:
        return set()
    if s.systemd >= 240:
        return set()  # its own lines bracket the oneshot's end: queries/oneshot_descriptions.sql
    first = t.recovered_utc - timedelta(seconds=t.recovery_load_s)
    near = [
        u
        for u, ts in t.other_starts
        # (a start more than LATE_START, 90 s, before the first line names no unit alone)
        if first - timedelta(seconds=89) <= ts <= first + timedelta(seconds=3)
        and not u.endswith(".scope")  # (a login session's scope starts no server: unit_marks.sql)
        # (the failing oneshot's own lines, "Failed to start <Description>.", teach its unit:
        # queries/oneshot_descriptions.sql)
        and u != "gpu-healthcheck.service"
        # (a unit started again and again with nothing ended between is a timer's:
        # server_units._scheduled)
        and u != "sysstat-collect.service"
    ]
    if near:
        return set(RECOVERY) | {"recovery_load"}
    return set()


def project_cause(s: Scenario) -> str:
    """The cause the project gives the night's incident (where it differs from the truth)."""
    if s.cause == "gpu_oom" and not readable(s) and s.journal_mode is not None:
        return "signal"  # the CUDA OOM is unread: systemd's 'signal' is all there is
    if kernel_undated(s) and s.journal_mode is not None:
        says = s.systemd >= 243 and s.cgroup_v2  # systemd's own OOM sentence and 'oom-kill'
        return "unknown" if says else "signal"
    return s.cause


def gpu_workload(s: Scenario) -> bool:
    """``rules.gpu_workload``: the killed unit is known to use GPUs (its server's configuration or
    loads, victims named like a server, a unit named like one)."""
    victims = (s.cause in KERNEL_CAUSES and not kernel_undated(s)) or s.cause == "earlyoom"
    engine_named = "sglang" in s.server.unit or "vllm" in s.server.unit
    return load_unit(s, s.server) == s.server.unit or victims or engine_named


def denies_samples(s: Scenario) -> bool:
    """``rules.verify_gpu_freed``'s last branch: "No nvidia-smi samples cover the minutes after
    the kill", said when none was read in its look window."""
    return project_cause(s) != "signal" and gpu_workload(s)


def mtime_year_wrong(s: Scenario, t: Truth) -> bool:
    """The year the project takes from a copied file's mtime differs from the night's."""
    from zoneinfo import ZoneInfo

    zone = ZoneInfo(s.zone)
    end = (
        t.recovered_utc + timedelta(seconds=600) if t.recovered_utc else t.kill_utc + timedelta(seconds=2100)
    )
    first = t.kill_utc - timedelta(seconds=s.serving_s + sum(s.load_s.values()) + 0.8 + 300)
    if s.startup is not None:
        return False
    mtime = (end + timedelta(seconds=s.mtime_after_s)).astimezone(zone)
    start = first.astimezone(zone)
    base = mtime.year - (1 if start.month > mtime.month else 0)
    return base != start.year


FINDINGS = (
    Finding("F05", "A journal without any times (`-o cat`) does not name the recovery's unit", _no_wall),
    Finding(
        "F15",
        "A server started by hand right after a oneshot whose end is not logged takes its start",
        _claims_any_start,
    ),
)


def explain(s: Scenario, t: Truth) -> dict[str, str]:
    """check name → the ids of the findings that make it fail on this night (``F01+F04``)."""
    out: dict[str, list[str]] = {}
    for f in FINDINGS:
        for check in sorted(f.breaks(s, t)):
            if not t.datable and check not in UNDATED_CHECKS:
                continue  # an undated kill is no incident: only these are compared (F07)
            out.setdefault(check, []).append(f.id)
    return {k: "+".join(v) for k, v in out.items()}


#: the checks compared on a night whose kill cannot be dated (no incident is made of it)
UNDATED_CHECKS = frozenset({"terminal", "oom_kills_once"})


__all__ = ["FINDINGS", "Finding", "explain"]
