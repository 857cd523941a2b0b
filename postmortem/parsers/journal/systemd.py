"""systemd's words → service lifecycle facts; systemd-oomd and earlyoom kill lines.

Pure functions over one message body (after ``systemd[1]: ``), used by every journal/syslog
parser. Wording from systemd v219 to v259 (reference §5, §6):

>>> classify("llm-demo.service: Main process exited, code=killed, status=9/KILL")
Lifecycle(unit='llm-demo.service', action='main_exited', code='killed', status='9/KILL', ...)
>>> classify("Started llm-demo.service - LLM demo server.").description
'LLM demo server'
>>> c = classify("llm-demo.service: Consumed 9h 41min 12.004s CPU time, 1.2G memory peak.")
>>> c.cpu_s, c.memory_peak_bytes
(34872.004, 1288490189)
>>> classify("Reached the end of the tunnel.") is None
True
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from ...lazyre import lazy_re

#: unit types as they end a unit name
UNIT_SUFFIXES = (
    ".service",
    ".scope",
    ".slice",
    ".socket",
    ".target",
    ".mount",
    ".automount",
    ".swap",
    ".timer",
    ".path",
    ".device",
)
_UNIT_RE = r"\S+?\.(?:service|scope|slice|socket|target|mount|automount|swap|timer|path|device)"

#: MESSAGE_ID values (sd-messages.h) of unit lifecycle messages → action
MESSAGE_IDS: dict[str, str] = {
    "7d4958e842da4a758f6c1cdc7b36dcc5": "starting",
    "39f53479d3a045ac8e11786248231fbf": "started",
    "de5b426a63be47a7b6ac3eaac82e2f6f": "stopping",
    "9d1aaa27d60140bd96365438aad20286": "stopped",
    "be02cf6855d2428ba40df7e9d022f03d": "start_failed",
    "d34d037fff1847e6ae669a370e694725": "reloading",
    "7b05ebc668384222baa8881179cfda54": "reloaded",
    "5eb03494b6584870a536b337290809b3": "restart_scheduled",
    "ae8f7b866b0347b9af31fe1c80b127c0": "consumed",
    "7ad2d189f7e94e70a38c781354912448": "deactivated",
    "0e4284a0caca4bfc81c0bb6786972673": "skipped",
    "d9b373ed55a64feb8242e02dbe79a49c": "failed",
    "98e322203f7a4ed290d09fe03c09fe15": "main_exited",
    "fe6faa94e7774663a0da52717891d8ef": "oom_killed",
    "d989611b15e44c9dbf31e3c81256e4ed": "oomd_killed",
}

#: every value of unit_events.action, in documentation order
ACTIONS = (
    "starting",
    "started",
    "stopping",
    "stopped",
    "main_exited",
    "control_exited",
    "failed",
    "oom_killed",
    "oomd_killed",
    "restart_scheduled",
    "consumed",
    "deactivated",
    "finished",
    "start_failed",
    "dependency_failed",
    "start_limit_hit",
    "killing",
    "left_running",
    "left_over",
    "timeout",
    "watchdog",
    "skipped",
    "reached",
    "reloading",
    "reloaded",
    "on_failure",
)


@dataclass(slots=True)
class Lifecycle:
    """What one systemd message says about one unit (``unit`` None: only a description)."""

    unit: str | None
    action: str
    code: str | None = None
    status: str | None = None
    result: str | None = None
    restart_count: int | None = None
    cpu_s: float | None = None
    memory_peak_bytes: int | None = None
    wall_s: float | None = None
    description: str | None = None

    def __repr__(self) -> str:  # short form for doctests
        return (
            f"Lifecycle(unit={self.unit!r}, action={self.action!r}, code={self.code!r}, "
            f"status={self.status!r}, result={self.result!r}, restart_count={self.restart_count!r}, "
            f"cpu_s={self.cpu_s!r}, memory_peak_bytes={self.memory_peak_bytes!r}, "
            f"wall_s={self.wall_s!r}, description={self.description!r})"
        )


def is_unit_name(text: str) -> bool:
    """``foo.service`` → True; ``LLM server`` → False.

    >>> is_unit_name("user@1000.service"), is_unit_name("a b.service"), is_unit_name(".slice")
    (True, False, False)
    """
    return text.endswith(UNIT_SUFFIXES) and " " not in text and not text.startswith(".") and "/" not in text


# --------------------------------------------------------------------------- durations, sizes

_SPAN_UNITS = {
    "y": 31557600.0,
    "month": 2629800.0,
    "w": 604800.0,
    "d": 86400.0,
    "h": 3600.0,
    "min": 60.0,
    "m": 60.0,
    "s": 1.0,
    "ms": 1e-3,
    "us": 1e-6,
    "μs": 1e-6,
    "µs": 1e-6,
    "ns": 1e-9,
}
_SPAN_PART = lazy_re(r"\s*(\d+(?:\.\d+)?)(month|min|ms|us|μs|µs|ns|y|w|d|h|m|s)(?=\s|$)")


def parse_timespan(text: str) -> float | None:
    """systemd's ``format_timespan()`` output → seconds.

    >>> parse_timespan("9h 41min 12.004s"), parse_timespan("123ms"), parse_timespan("1d 2h")
    (34872.004, 0.123, 93600.0)
    >>> parse_timespan("forever") is None
    True
    """
    total = 0.0
    pos = 0
    text = text.strip()
    if not text:
        return None
    while pos < len(text):
        m = _SPAN_PART.match(text, pos)
        if m is None:
            return None
        total += float(m.group(1)) * _SPAN_UNITS[m.group(2)]
        pos = m.end()
    return round(total, 9)


_BYTE_POWERS = {"B": 0, "K": 1, "M": 2, "G": 3, "T": 4, "P": 5, "E": 6}


def parse_size(text: str) -> int | None:
    """systemd's ``format_bytes()`` output (base 1024) → bytes.

    >>> parse_size("1.2G"), parse_size("512M"), parse_size("0B"), parse_size("12 apples")
    (1288490189, 536870912, 0, None)
    """
    if len(text) < 2 or text[-1] not in _BYTE_POWERS:
        return None
    try:
        value = float(text[:-1])
    except ValueError:
        return None
    return round(value * float(1024 ** _BYTE_POWERS[text[-1]]))


# --------------------------------------------------------------------------- lifecycle

_UNIT_PREFIX = lazy_re(rf"^({_UNIT_RE}): (.*)$", re.S)
_PROC_EXIT = lazy_re(
    r"^(Main|main|Control|control) process exited, code=(\w+),? status=(\d+)(?:/(\S+?))?(?: \(success\))?$"
)
_FAILED_RESULT = lazy_re(r"^Failed with result '([\w-]+)'\.$")
_CONSUMED = lazy_re(r"^Consumed (.+?) CPU time(?: over (.+?) wall clock time)?(.*?)\.?$", re.S)
_PEAK = lazy_re(r", ([\d.]+[BKMGTPE]) memory peak")
_RESTART_COUNTER = lazy_re(
    r"^Scheduled restart job(?: immediately on client request)?, restart counter is at (\d+)\.$"
)
_OOMD_UNIT = lazy_re(r"^systemd-oomd killed (\d+|some) process\(es\) in this unit\.$")
_KILLING = lazy_re(r"^Killing process (\d+) \((.*)\) with signal (SIG\w+)\.$")
#: a process the stop could not end (stuck in the kernel: a GPU driver call): v237+ wording
LEFT_RUNNING = lazy_re(r"^Unit process (\d+) \((.*)\) remains running after unit stopped\.$")
#: a start that found the last run's processes still in the unit's cgroup (KillMode=process/none)
LEFT_OVER = lazy_re(
    r"^Found left-over process (\d+) \((.*)\) in control group while starting unit\. Ignoring\.$"
)
_STATE_TIMEOUT = lazy_re(r"^State '([\w-]+)' timed out\. ?(.*)$")
_WATCHDOG = lazy_re(r"^Watchdog timeout \(limit (.+)\)!$")

_BODY_FIXED: dict[str, tuple[str, str | None]] = {
    "A process of this unit has been killed by the OOM killer.": ("oom_killed", None),
    "The kernel OOM killer killed some processes in this unit.": ("oom_killed", None),
    "Succeeded.": ("deactivated", "success"),
    "Deactivated successfully.": ("deactivated", "success"),
    "Unit entered failed state.": ("failed", None),
    "Start request repeated too quickly.": ("start_limit_hit", "start-limit-hit"),
    "Service hold-off time over, scheduling restart.": ("restart_scheduled", None),
    "Service has no hold-off time, scheduling restart.": ("restart_scheduled", None),
    "Service has no hold-off time (RestartSec=0), scheduling restart.": ("restart_scheduled", None),
    "Scheduled restart job.": ("restart_scheduled", None),
    # the unit failed and systemd starts its OnFailure= units (a fallback, a notifier)
    "Triggering OnFailure= dependencies.": ("on_failure", None),
}
_HOLDOFF = lazy_re(r"^Service RestartSec=\S+ expired, scheduling restart\.$")

# job messages (no unit prefix; UNIT= in structured modes); order matters
_JOBS: tuple[tuple[str, str, str, str | None], ...] = (
    # (prefix, suffix, action, result)
    ("Starting ", "...", "starting", None),
    ("Started ", ".", "started", None),
    ("Stopping ", "...", "stopping", None),
    ("Stopped (with error) ", ".", "stopped", "error"),
    ("Stopped target ", ".", "stopped", None),
    ("Stopped ", " with error.", "stopped", "error"),
    ("Stopped ", ".", "stopped", None),
    ("Failed to start ", ".", "start_failed", None),
    ("Dependency failed for ", ".", "dependency_failed", None),
    ("Timed out starting ", ".", "start_failed", "timeout"),
    ("Finished ", ".", "finished", None),
    ("Reached target ", ".", "reached", None),
    ("Reloading ", "...", "reloading", None),
    ("Reloaded ", ".", "reloaded", None),
)
_SKIPPED = lazy_re(
    r"^(.+?) (?:was skipped because of an unmet condition check \((.+)\)\.|skipped, unmet condition check (.+))$"
)
_OLD_FAILED = lazy_re(rf"^Unit ({_UNIT_RE}) entered failed state\.$|^({_UNIT_RE}) failed\.$")
_OLD_LIMIT = lazy_re(
    rf"^start request repeated too quickly for ({_UNIT_RE})$"
    rf"|^({_UNIT_RE}) start request repeated too quickly, refusing to start\.$"
)
_OLD_HOLDOFF = lazy_re(rf"^({_UNIT_RE}) holdoff time over, scheduling restart\.$")


def _proc_exit(unit: str, m: re.Match[str]) -> Lifecycle:
    action = "main_exited" if m.group(1) in ("Main", "main") else "control_exited"
    status = m.group(3) + (f"/{m.group(4)}" if m.group(4) else "")
    return Lifecycle(unit, action, code=m.group(2), status=status)


def _consumed(unit: str, m: re.Match[str]) -> Lifecycle:
    peak = _PEAK.search(m.group(3))
    return Lifecycle(
        unit,
        "consumed",
        cpu_s=parse_timespan(m.group(1)),
        wall_s=parse_timespan(m.group(2)) if m.group(2) else None,
        memory_peak_bytes=parse_size(peak.group(1)) if peak else None,
    )


_Body = Callable[[str, "re.Match[str]"], Lifecycle]
#: the words of a unit's own lines after ``<unit>: ``, by how they begin: (opening, pattern,
#: what they say); tried in order
_BODIES: tuple[tuple[tuple[str, ...], re.Pattern[str], _Body], ...] = (
    (("M", "m", "C", "c"), _PROC_EXIT, _proc_exit),
    (("Failed with result ",), _FAILED_RESULT, lambda u, m: Lifecycle(u, "failed", result=m.group(1))),
    (("Consumed ",), _CONSUMED, _consumed),
    (
        ("Scheduled restart job",),
        _RESTART_COUNTER,
        lambda u, m: Lifecycle(u, "restart_scheduled", restart_count=int(m.group(1))),
    ),
    (("Service RestartSec=",), _HOLDOFF, lambda u, m: Lifecycle(u, "restart_scheduled")),
    (("systemd-oomd killed ",), _OOMD_UNIT, lambda u, m: Lifecycle(u, "oomd_killed", result="oom-kill")),
    (("Killing process ",), _KILLING, lambda u, m: Lifecycle(u, "killing", status=m.group(3))),
    (
        ("Unit process ",),
        LEFT_RUNNING,
        lambda u, m: Lifecycle(u, "left_running", status=f"{m.group(1)} ({m.group(2)})"),
    ),
    (
        ("Found left-over process ",),
        LEFT_OVER,
        lambda u, m: Lifecycle(u, "left_over", status=f"{m.group(1)} ({m.group(2)})"),
    ),
    (
        ("Processes still around after final SIGKILL",),
        lazy_re(""),
        lambda u, m: Lifecycle(u, "left_running"),
    ),
    (("State '",), _STATE_TIMEOUT, lambda u, m: Lifecycle(u, "timeout", status=m.group(1), result="timeout")),
    (("Watchdog timeout",), _WATCHDOG, lambda u, m: Lifecycle(u, "watchdog", result="watchdog")),
)


def _unit_body(unit: str, body: str) -> Lifecycle | None:
    fixed = _BODY_FIXED.get(body)
    if fixed is not None:
        return Lifecycle(unit, fixed[0], result=fixed[1])
    for opening, pattern, said in _BODIES:
        if body.startswith(opening):
            m = pattern.match(body)
            if m:
                return said(unit, m)
    return None


def _split_what(what: str) -> tuple[str | None, str | None]:
    """``unit - description`` (StatusUnitFormat=combined) / ``unit`` / ``description``."""
    left, sep, right = what.partition(" - ")
    if sep and is_unit_name(left):
        return left, right
    if is_unit_name(what):
        return what, None
    return None, what


def _skipped(message: str) -> Lifecycle | None:
    if " skipped" not in message:
        return None
    m = _SKIPPED.match(message)
    if m is None:
        return None
    unit, description = _split_what(m.group(1))
    return Lifecycle(unit, "skipped", status=m.group(2) or m.group(3), description=description)


def classify(message: str) -> Lifecycle | None:
    """Classify a systemd (pid 1 or user manager) message; ``None`` if it is not lifecycle.

    >>> classify("foo.service: Failed with result 'oom-kill'.").result
    'oom-kill'
    >>> classify("foo.service: Scheduled restart job, restart counter is at 3.").restart_count
    3
    >>> classify("Stopped LLM demo server.")
    Lifecycle(unit=None, action='stopped', ..., description='LLM demo server')
    >>> classify("Unit foo.service entered failed state.").action
    'failed'
    >>> classify("foo.service start request repeated too quickly, refusing to start.").unit
    'foo.service'
    """
    if not message:
        return None
    first = message[0]
    if first.islower() or first.isdigit() or first in "-_@\\":
        # "<unit>: <body>" (unit names are mostly lower case), or the ≤v219 free forms
        m = _UNIT_PREFIX.match(message)
        if m:
            found = _unit_body(m.group(1), m.group(2))
            if found is not None:
                return found
        m = _OLD_FAILED.match(message)
        if m:
            return Lifecycle(m.group(1) or m.group(2), "failed")
        m = _OLD_LIMIT.match(message)
        if m:
            return Lifecycle(m.group(1) or m.group(2), "start_limit_hit", result="start-limit-hit")
        m = _OLD_HOLDOFF.match(message)
        if m:
            return Lifecycle(m.group(1), "restart_scheduled")
        return _skipped(message)
    if first == "U":
        m = _OLD_FAILED.match(message)
        if m:
            return Lifecycle(m.group(1) or m.group(2), "failed")
    for prefix, suffix, action, result in _JOBS:
        if message.startswith(prefix) and message.endswith(suffix):
            what = message[len(prefix) : len(message) - len(suffix)]
            if not what:
                continue
            unit, description = _split_what(what)
            return Lifecycle(unit, action, result=result, description=description)
    found = _skipped(message)
    if found is not None:
        return found
    m = _UNIT_PREFIX.match(message)  # upper-case unit names (rare)
    if m:
        return _unit_body(m.group(1), m.group(2))
    return None


def apply_fields(lc: Lifecycle | None, fields: dict[str, str], message: str) -> Lifecycle | None:
    """Refine (or create, from ``MESSAGE_ID``) a classification with journal fields:
    ``UNIT=``/``USER_UNIT=``, ``EXIT_CODE=``, ``EXIT_STATUS=``, ``UNIT_RESULT=``,
    ``N_RESTARTS=``, ``CPU_USAGE_NSEC=``, ``MEMORY_PEAK=``.

    >>> apply_fields(None, {"MESSAGE_ID": "fe6faa94e7774663a0da52717891d8ef",
    ...                     "UNIT": "a.service"}, "Einheit a.service: OOM").action
    'oom_killed'
    """
    unit = fields.get("UNIT") or fields.get("USER_UNIT")
    if lc is None:
        action = MESSAGE_IDS.get(fields.get("MESSAGE_ID", ""))
        if action is None or not unit:
            return None
        lc = Lifecycle(unit, action)
    elif unit:
        lc.unit = unit
    code = fields.get("EXIT_CODE")
    if code and lc.code is None and lc.action in ("main_exited", "control_exited"):
        lc.code = code
    status = fields.get("EXIT_STATUS")
    if status and lc.status is None and lc.action in ("main_exited", "control_exited"):
        lc.status = status
    result = fields.get("UNIT_RESULT")
    if result and lc.result is None:
        lc.result = result
    n = fields.get("N_RESTARTS")
    if n and n.isdigit() and lc.restart_count is None and lc.action == "restart_scheduled":
        lc.restart_count = int(n)
    nsec = fields.get("CPU_USAGE_NSEC")
    if nsec and nsec.isdigit() and lc.action == "consumed":
        lc.cpu_s = int(nsec) / 1e9
    peak = fields.get("MEMORY_PEAK")
    if peak and peak.isdigit() and lc.action == "consumed":
        lc.memory_peak_bytes = int(peak)
    return lc


# --------------------------------------------------------------------------- userspace OOM killers


def unit_from_cgroup(path: str | None) -> str | None:
    """The systemd unit a cgroup path belongs to: its deepest component that is a unit.

    >>> unit_from_cgroup("/system.slice/llm-demo.service")
    'llm-demo.service'
    >>> unit_from_cgroup("/user.slice/user-1000.slice/user@1000.service/app.slice/app-x.scope/sub")
    'app-x.scope'
    >>> unit_from_cgroup("/"), unit_from_cgroup(None)
    (None, None)
    """
    if not path:
        return None
    for part in reversed(path.split("/")):
        if part and is_unit_name(part):
            return part
    return None


_OOMD = lazy_re(r"^(?:Killed (/\S*) |Marked (/\S*) for killing )(due to .*)$")
_EARLYOOM = lazy_re(
    r'^sending (SIG\w+) to process (\d+)(?: uid (\d+))? "(.*)": '
    r"(?:badness|oom_score) -?\d+(?:, oom_score_adj (-?\d+))?(?:, VmRSS (\d+) MiB)?"
)


def oomd_kill(message: str) -> str | None:
    """The cgroup a systemd-oomd kill line names (v248+ ``Killed …``, v260+ ``Marked …``).

    >>> oomd_kill("Killed /system.slice/a.service due to memory pressure for /system.slice being 62.00% > 50.00% for > 20s with reclaim activity")
    '/system.slice/a.service'
    >>> oomd_kill("Marked /user.slice/user-1000.slice for killing due to memory used (1) / total (2) and swap used (3) / total (4) being more than 90.00%")
    '/user.slice/user-1000.slice'
    >>> oomd_kill("Memory pressure for /system.slice is greater than 10") is None
    True
    """
    m = _OOMD.match(message) if message.startswith(("Killed /", "Marked /")) else None
    return None if m is None else m.group(1) or m.group(2)


def oomd_reason(message: str) -> str | None:
    """The rule a systemd-oomd kill line says fired, from ``due to`` on.

    >>> oomd_reason("Killed /system.slice/a.service due to memory pressure for /system.slice being 62.00% > 50.00% for > 20s with reclaim activity")
    'due to memory pressure for /system.slice being 62.00% > 50.00% for > 20s with reclaim activity'
    """
    m = _OOMD.match(message) if message.startswith(("Killed /", "Marked /")) else None
    return None if m is None else m.group(3)


def left_process(body: str) -> tuple[str, str] | None:
    """``(pid, name)`` of a unit message naming one process systemd did not end: ``Unit process N
    (name) remains running after unit stopped.`` or ``Found left-over process N (name) in control
    group while starting unit. Ignoring.``"""
    m = LEFT_RUNNING.match(body) or LEFT_OVER.match(body)
    return None if m is None else (m.group(1), m.group(2))


def sigkilled_process(body: str) -> tuple[str, str] | None:
    """``(pid, name)`` of a unit message sending one process SIGKILL in a stop: ``Killing process
    N (name) with signal SIGKILL.`` — what ``Processes still around after final SIGKILL`` means.

    >>> sigkilled_process("Killing process 5300 (VLLM::Worker_TP) with signal SIGKILL.")
    ('5300', 'VLLM::Worker_TP')
    >>> sigkilled_process("Killing process 5300 (python3) with signal SIGTERM.") is None
    True
    """
    m = _KILLING.match(body)
    return None if m is None or m.group(3) != "SIGKILL" else (m.group(1), m.group(2))


@dataclass(frozen=True, slots=True)
class EarlyoomKill:
    signal: str
    pid: int
    uid: int | None
    name: str
    oom_score_adj: int | None
    vm_rss_mib: int | None = None


def earlyoom_kill(message: str) -> EarlyoomKill | None:
    """An earlyoom ``sending SIG… to process …`` line (v1.3–v1.9 wordings).

    >>> earlyoom_kill('sending SIGTERM to process 4242 uid 1000 "python3": badness 812, VmRSS 61234 MiB')
    EarlyoomKill(signal='SIGTERM', pid=4242, uid=1000, name='python3', oom_score_adj=None, vm_rss_mib=61234)
    >>> earlyoom_kill('sending SIGKILL to process 7 "a b": oom_score 900, oom_score_adj 0, VmRSS 1 MiB, cmdline "x"').name
    'a b'
    """
    if not message.startswith("sending SIG"):
        return None
    m = _EARLYOOM.match(message)
    if m is None:
        return None
    return EarlyoomKill(
        m.group(1),
        int(m.group(2)),
        int(m.group(3)) if m.group(3) else None,
        m.group(4),
        int(m.group(5)) if m.group(5) else None,
        int(m.group(6)) if m.group(6) else None,
    )
