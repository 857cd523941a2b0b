"""File-level kernel parsers: ``dmesg`` output in every time format, and /dev/kmsg records."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from datetime import datetime, timedelta

from ...lazyre import lazy_re
from ...timeutil import Inferred, YearInference, month_number, parse_dmesg_ctime, parse_iso
from .. import register
from ..base import Head, LineChunk, Output, ParseContext, Parser
from .stream import KernelStream

TABLES = ("kernel_messages", "oom_kills", "oom_tasks", "gpu_xids")

#: a record longer than this many continuation lines is split (bounded memory)
MAX_RECORD_LINES = 2000

_LEVELS = ("emerg", "alert", "crit", "err", "warn", "notice", "info", "debug")
_LEVEL_OF = {name: i for i, name in enumerate(_LEVELS)}

_CALLER = r"(?: ?\[\s*[TC]\d+\])?"
_MONO = lazy_re(r"\[\s*(\d+\.\d+)(?: <\s*\d+\.\d+>)?\]" + _CALLER + " ?")
_CTIME = lazy_re(r"\[(\S+ +\S+ +\d{1,2} \d\d:\d\d:\d\d \d{4})\]" + _CALLER + " ?")
_ISO = lazy_re(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d,\d{6}[+-]\d\d:?\d\d)" + _CALLER + " ?")
# reltime (-e, -H): the local minute ("%b%e %H:%M") on a line whose minute changed, else the
# seconds since the previous line
_MINUTE = lazy_re(r"\[(\D+?) ?(\d{1,2}) (\d\d):(\d\d)\]" + _CALLER + " ?")
_DELTA = lazy_re(r"\[\s*\+(\d+\.\d+)\]" + _CALLER + " ?")
# --time-format delta without the monotonic part: recognised, no usable time
_NO_TIME = lazy_re(r"\[(?:<\s*\d+\.\d+>|\s*\+\d+\.\d+|\D+? ?\d{1,2} \d\d:\d\d)\]" + _CALLER + " ?")
_RAW = lazy_re(r"<(\d{1,4})>")
_DECODE = lazy_re(
    r"(?:kern|user|mail|daemon|auth|syslog|lpr|news|uucp|cron|authpriv|ftp|res[0-3]|local[0-7]) *:"
    r"(emerg|alert|crit|err|warn|notice|info|debug) *: "
)
_KMSG = lazy_re(r"(\d{1,4}),(\d+),(\d+),[-c+]?(?:,[^;]*)?;")

# what other tools' timestamped lines look like (syslog, ISO, journal, server loggers, epoch, kmsg)
_FOREIGN = lazy_re(
    r"(?:[^\s\d\[]\S{0,9} +\d{1,2} \d\d:\d\d:\d\d"
    r"|\d{1,2}月 +\d{1,2} \d\d:\d\d:\d\d"
    r"|\d{4}-\d\d-\d\d[T ]\d\d:\d\d"
    r"|\[?\d{4}[-/]\d\d[-/]\d\d"
    r"|\w{3} \d{4}-\d\d-\d\d"
    r"|\d{9,10}\.\d+ "
    r"|\d{1,4},\d+,\d+,[-c+]?[,;]"
    r"|-- (?:Logs begin|Journal begins|Boot |Reboot|No entries)"
    r"|[{\x1e])"
)
_SHORT_MONO_BODY = lazy_re(r"([^\s:\[]+) ([^\s:\[]+)(?:\[\d+\])?: ")
_IDENT_PID = lazy_re(r"[^\s:\[]+\[\d+\]: ")
_KERNEL_MARKERS = (
    "invoked oom-killer:",
    "Killed process ",
    "Call Trace:",
    "oom_reaper:",
    "Out of memory",
    "Memory cgroup",
    "Mem-Info:",
    "NVRM:",
    "Linux version ",
    "Command line: ",
    "BIOS-e820",
    "Hardware name:",
    " cpuset=",
    "entered promiscuous mode",
    "entered blocking state",
    "entered forwarding state",
    "entered disabled state",
    "link becomes ready",
    "EXT4-fs",
    "audit: type=",
    "segfault at ",
)
_USERSPACE_HINTS = lazy_re(
    r"(?:Started|Starting|Stopped|Stopping|Finished|Reached target|Listening on) \S+"
    r"|\S+\.(?:service|scope|socket|timer): "
    r"|\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"
)


Stamp = tuple[datetime | None, str | None, str | None, float | None, int | None, int]


class Reltime:
    """The clock of one ``dmesg -e``/``-H`` file. A line whose local minute changed prints it
    (``[Oct15 22:00]``, no seconds, no year); the others print the seconds since the line
    before (``[  +0.000049]``). A minute's first line is dated at the minute's start and the
    lines after it by the deltas summed, so all of a minute's lines are early by the same
    amount, under a minute (``ts_inferred='minute'``); ``anchor_minutes.sql`` takes the seconds
    from systemd's lines about the same OOM kill. Deltas before any minute are undated.

    >>> from postmortem.parsers.base import ParseContext
    >>> clock = Reltime(ParseContext(year=2026))
    >>> [(str(st[0]), st[1], st[2]) for st in (clock.stamp(s, 0, None) for s in
    ...     ("[  +0.5] x", "[Oct 2 10:01] x", "[  +1.250000] x", "[Oct15 22:00] x"))]
    [('None', '+0.5', None), ('2026-10-02 10:01:00+00:00', 'Oct 2 10:01', 'minute'), ('2026-10-02 10:01:01.250000+00:00', '+1.250000', 'minute'), ('2026-10-15 22:00:00+00:00', 'Oct15 22:00', 'minute')]
    """

    def __init__(self, ctx: ParseContext) -> None:
        self._ctx = ctx
        self._years: YearInference | None = None
        self._minute: datetime | None = None
        self._us = 0  # microseconds since the minute's first line

    def stamp(self, line: str, pos: int, level: int | None) -> Stamp | None:
        m = _DELTA.match(line, pos)
        if m is not None:
            raw = m.group(1)
            delta = float(raw)
            if self._minute is None or delta >= 60:
                # (a delta is printed only within a minute: a longer one is a damaged file, and
                # the lines after it wait for the next minute)
                self._minute = None
                return None, "+" + raw, None, None, level, m.end()
            self._us += round(delta * 1_000_000)
            return (
                self._minute + timedelta(microseconds=self._us),
                "+" + raw,
                Inferred.MINUTE,
                None,
                level,
                m.end(),
            )
        m = _MINUTE.match(line, pos)
        month = month_number(m.group(1)) if m is not None else None
        if m is None or month is None:
            return None
        day, hour, minute = int(m.group(2)), int(m.group(3)), int(m.group(4))
        self._minute = None  # (no such minute: the deltas after it are undated too)
        if not 1 <= day <= 31:
            return None
        if self._years is None:
            self._years = self._ctx.year_inference(month, day)
        try:
            naive = datetime(self._years.year_for(month, day), month, day, hour, minute)  # noqa: DTZ001
        except ValueError:
            return None
        self._minute, self._us = self._ctx.forward().localize(naive), 0
        raw = line[m.start() + 1 : m.end(4)]
        return self._minute, raw, Inferred.MINUTE, None, level, m.end()


def split_prefix(line: str, ctx: ParseContext, clock: Reltime | None = None) -> Stamp | None:
    """``(ts, ts_raw, ts_inferred, monotonic_s, level, message start)`` of a dmesg line, or
    ``None`` when it carries no dmesg prefix. ``clock`` dates ``-e``/``-H`` stamps (else they
    are recognised with no time).

    >>> from postmortem.parsers.base import ParseContext
    >>> ctx = ParseContext()
    >>> split_prefix("[  152.104016] x", ctx)
    (None, '152.104016', None, 152.104016, None, 15)
    >>> split_prefix("<4>[  152.104016] x", ctx)[3:]
    (152.104016, 4, 18)
    >>> split_prefix("kern  :err   : [  152.104816] x", ctx)[3:]
    (152.104816, 3, 30)
    >>> ts, raw, inferred, mono, level, at = split_prefix("[Wed Dec  2 13:30:19 2026] x", ctx)
    >>> ts.isoformat(), raw, inferred, mono, at
    ('2026-12-02T13:30:19+00:00', 'Wed Dec  2 13:30:19 2026', 'zone', None, 27)
    >>> split_prefix("2026-12-02T13:30:19,104016+00:00 x", ctx)[0].isoformat()
    '2026-12-02T13:30:19.104016+00:00'
    >>> split_prefix("[   31.935015][   T71] x", ctx)[3:]
    (31.935015, None, 23)
    >>> split_prefix("x", ctx) is None
    True
    """
    level: int | None = None
    pos = 0
    first = line[:1]
    if first == "<":
        m = _RAW.match(line)
        if m is None:
            return None
        level = int(m.group(1)) & 7
        pos = m.end()
        if line.startswith(" ", pos):
            pos += 1
        first = line[pos : pos + 1]
    elif first.isalpha():
        m = _DECODE.match(line)
        if m is None:
            return None
        level = _LEVEL_OF[m.group(1)]
        pos = m.end()
        first = line[pos : pos + 1]
    if first == "[":
        m = _MONO.match(line, pos)
        if m is not None:
            raw = m.group(1)
            return None, raw, None, float(raw), level, m.end()
        m = _CTIME.match(line, pos)
        if m is not None:
            raw = m.group(1)
            ts = parse_dmesg_ctime(raw, ctx.zone, ctx.forward())
            return ts, raw, Inferred.ZONE if ts is not None else None, None, level, m.end()
        if clock is not None and (st := clock.stamp(line, pos, level)) is not None:
            return st
        m = _NO_TIME.match(line, pos)
        if m is not None:
            return None, m.group(0).strip(), None, None, level, m.end()
    elif first.isdigit():
        m = _ISO.match(line, pos)
        if m is not None:
            raw = m.group(1)
            return parse_iso(raw), raw, None, None, level, m.end()
    # a priority or facility:level prefix without a stamp (dmesg -r -t, dmesg -x -t)
    return (None, None, None, None, level, pos) if level is not None else None


def _is_short_monotonic(bodies: list[str]) -> bool:
    """``journalctl -o short-monotonic`` looks like dmesg: ``[  152.1] host ident[pid]: msg``."""
    if not bodies:
        return False
    kernel = sum(1 for b in bodies if b.startswith("kernel: "))
    if kernel * 5 >= len(bodies):
        return True
    if sum(1 for b in bodies if _IDENT_PID.match(b)) * 10 >= len(bodies) * 6:
        return True  # --no-hostname: "[  10.1] systemd[1]: …" on most lines
    hosts: dict[str, int] = {}
    for b in bodies:
        m = _SHORT_MONO_BODY.match(b)
        if m is not None:
            hosts[m.group(1)] = hosts.get(m.group(1), 0) + 1
    top = max(hosts.values(), default=0)
    return top * 10 >= len(bodies) * 6


@register
class DmesgParser(Parser):
    """``dmesg`` output in any time format, with OOM-killer records and NVIDIA Xids.

    Handles the default ``[ secs.usecs]`` stamp, ``-T`` (ctime, zone-less: ``--tz``
    applies; localised month names), ``--time-format iso``, ``-r`` (``<N>`` priority),
    ``-x`` (``kern  :warn  :``), the caller id (``[    T1234]``), ``-d``, and prefix-less
    copies (``-t``, test assets). Continuation lines of a multi-line record (indented by
    the prefix width) join their record, as journald would show it.

    >>> from postmortem.parsers.base import run_parser
    >>> text = '''[  152.104016] python3 invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0
    ... [  152.104531] memory: usage 524288kB, limit 524288kB, failcnt 0
    ... [  152.104779] [  pid  ]   uid  tgid total_vm      rss pgtables_bytes swapents oom_score_adj name
    ... [  152.104783] [   4242]     0  4242   135290   132377  1110016        0             0 VLLM Worker 1
    ... [  152.104789] oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=/system.slice/demo.service,task_memcg=/system.slice/demo.service,task=VLLM Worker 1,pid=4242,uid=0
    ... [  152.104816] Memory cgroup out of memory: Killed process 4242 (VLLM Worker 1) total-vm:541160kB, anon-rss:523008kB, file-rss:6500kB, shmem-rss:0kB, UID:0 pgtables:1084kB oom_score_adj:0'''
    >>> out, ctx = run_parser(DmesgParser(), text)
    >>> sorted({type(o).__name__ for o in out})
    ['OomKill', 'OomTask', 'TableBatch']
    >>> batch = out[-1]  # kernel_messages rows come as Arrow blocks of up to 65536 rows
    >>> batch.table, batch.data.num_rows, batch.data["monotonic_s"][0].as_py(), ctx.parsed_lines
    ('kernel_messages', 6, 152.104016, 6)
    >>> task = [o for o in out if type(o).__name__ == "OomTask"][0]
    >>> task.pid, task.rss_pages, task.name
    (4242, 132377, 'VLLM Worker 1')
    >>> kill = [o for o in out if type(o).__name__ == "OomKill"][0]
    >>> kill.victim_pid, kill.anon_rss_kb, kill.scope, kill.unit, kill.memcg_limit_kb, kill.header_line_no
    (4242, 523008, 'memcg', 'demo.service', 524288, 1)
    """

    name = "dmesg"
    description = "dmesg output (every time format, prefix-less copies), OOM kills, NVIDIA Xids"
    tables = TABLES

    def sniff(self, head: Head) -> int:
        lines = [line for line in head.lines if line.strip()]
        if not lines:
            return 0
        bodies = []
        for line in lines:
            st = split_prefix(line, _SNIFF_CTX)
            if st is not None:
                bodies.append(line[st[5] :])
        if len(bodies) * 2 >= len(lines):
            if _is_short_monotonic(bodies):
                return 5
            return 90 if len(bodies) * 10 >= len(lines) * 9 else 70
        if bodies:
            return 0
        # prefix-less copies: kernel wording and nobody else's stamps
        if sum(1 for line in lines if _FOREIGN.match(line)) * 5 > len(lines):
            return 0
        if not any(marker in line for line in lines for marker in _KERNEL_MARKERS):
            return 0
        if any(_USERSPACE_HINTS.match(line) for line in lines):
            return 10
        return 40

    def parse(self, chunks: Iterable[LineChunk], ctx: ParseContext) -> Iterator[Output]:  # noqa: C901 - 18 > 15: listed in docs/dev/README.md
        stream = KernelStream(ctx, batch=True)
        record = stream.record
        clock = Reltime(ctx)
        host = ctx.host
        mono_match = _MONO.match
        stamped: bool | None = None
        # the record being collected: its first line's stamp and its text lines
        rec_no = 0
        rec_stamp: Stamp | None = None
        rec_lines: list[tuple[int, str]] = []
        indent = 0
        for chunk in chunks:
            lines = chunk.lines
            if stamped is None:
                stamped = _decide_stamped(lines, ctx)
                if not stamped:
                    ctx.note("dmesg copy without timestamps (dmesg -t or a stripped copy): times are NULL")
            no = chunk.first_line_no - 1
            blank = foreign = 0
            if not stamped:
                for line in lines:
                    no += 1
                    if not line or line.isspace():
                        blank += 1
                        continue
                    yield from record(no, line, ((no, line),), None, None, None, None, host, None, None, None)
                ctx.ignored(blank)
                ctx.parsed(len(lines) - blank)
                continue
            for line in lines:
                no += 1
                st: Stamp | None
                if line[:1] == "[" and (m := mono_match(line)) is not None:
                    raw = m.group(1)
                    st = (None, raw, None, float(raw), None, m.end())
                else:
                    st = split_prefix(line, ctx, clock)
                if st is not None:
                    if rec_stamp is not None:
                        if len(rec_lines) == 1:  # _flush(), inlined for the common one-line record
                            ts, ts_raw, inferred, mono, level, _ = rec_stamp
                            yield from record(
                                rec_no,
                                rec_lines[0][1],
                                rec_lines,
                                ts,
                                ts_raw,
                                inferred,
                                mono,
                                host,
                                level,
                                None,
                                None,
                            )
                        else:
                            yield from _flush(record, rec_no, rec_stamp, rec_lines, host)
                    rec_no, rec_stamp, indent = no, st, st[5]
                    rec_lines = [(no, line[indent:])]
                    continue
                if not line or line.isspace():
                    blank += 1
                    continue
                if rec_stamp is not None and line[0] in " \t" and len(rec_lines) < MAX_RECORD_LINES:
                    body = line[indent:] if line[:indent].isspace() else line.lstrip()
                    rec_lines.append((no, body))
                    continue
                if _FOREIGN_STAMP.match(line):
                    # another log's line (a journal's, syslog's or a server's own time, which dmesg
                    # never prints) in a dmesg file: not a kernel message, and not of its time
                    if rec_stamp is not None:
                        yield from _flush(record, rec_no, rec_stamp, rec_lines, host)
                        rec_stamp = None
                    foreign += 1
                    yield ctx.issue(no, "not a dmesg line: another log's timestamp", line)
                    continue
                # an unstamped line that does not continue a record: it takes the previous stamp
                if rec_stamp is not None:
                    yield from _flush(record, rec_no, rec_stamp, rec_lines, host)
                    ts, _, inferred, mono, level, _ = rec_stamp
                    rec_stamp = (ts, None, Inferred.PREVIOUS if ts is not None else inferred, mono, level, 0)
                else:
                    rec_stamp = (None, None, None, None, None, 0)
                rec_no, indent = no, 0
                rec_lines = [(no, line)]
            ctx.ignored(blank)
            ctx.parsed(len(lines) - blank - foreign)
        if rec_stamp is not None:
            yield from _flush(record, rec_no, rec_stamp, rec_lines, host)
        yield from stream.close()


_SNIFF_CTX = ParseContext()

#: the start of a line of another log, stamped as dmesg never stamps: a journal's or syslog's
#: time and host (ISO or "May 25 20:17:19"), a server's or Python logger's "[2025-05-25 20:17:19"
_FOREIGN_STAMP = lazy_re(
    r"(?:\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d\S* \S+ \S+?(?:\[\d+\])?: "
    r"|[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \S+ \S+?(?:\[\d+\])?: "
    r"|\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)"
)


def _decide_stamped(lines: list[str], ctx: ParseContext) -> bool:
    """A file is stamped when its first non-blank line, or at least half of its first 200,
    carry a dmesg prefix (a prefix-less copy then keeps every line a record of its own)."""
    # a context of its own: the file's ForwardLocalizer must not see these lines before the parse
    sniff = ParseContext(zone=ctx.zone)
    seen = stamped = 0
    for line in lines:
        if not line.strip():
            continue
        seen += 1
        if split_prefix(line, sniff) is not None:
            if seen == 1:
                return True
            stamped += 1
        if seen >= 200:
            break
    return seen == 0 or stamped * 2 >= seen


def _flush(
    record: Callable[..., list[Output]],
    line_no: int,
    st: Stamp,
    lines: list[tuple[int, str]],
    host: str | None,
) -> list[Output]:
    ts, ts_raw, inferred, mono, level, _ = st
    message = lines[0][1] if len(lines) == 1 else "\n".join(text for _, text in lines)
    return record(line_no, message, lines, ts, ts_raw, inferred, mono, host, level, None, None)


@register
class KmsgParser(Parser):
    """/dev/kmsg records (``pri,seq,usec,flags;message``), e.g. ``cat /dev/kmsg`` or
    go-kmsg-parser dumps. ``\\xNN`` escapes are decoded (``\\x0a`` splits a multi-line record);
    dictionary lines (`` SUBSYSTEM=pci``) are recognised and ignored.

    >>> from postmortem.parsers.base import run_parser
    >>> text = '''3,504,152104816,-;Memory cgroup out of memory: Killed process 2383 (llm::scheduler) total-vm:541160kB, anon-rss:523008kB, file-rss:6500kB, shmem-rss:0kB, UID:0 pgtables:1084kB oom_score_adj:0
    ...  SUBSYSTEM=memory'''
    >>> out, ctx = run_parser(KmsgParser(), text)
    >>> kill, batch = out
    >>> msg = batch.data.to_pylist()[0]
    >>> msg["level"], msg["seq"], msg["monotonic_s"], kill.victim_comm, kill.scope, ctx.parsed_lines, ctx.ignored_lines
    (3, 504, 152.104816, 'llm::scheduler', 'memcg', 1, 1)
    """

    name = "kmsg"
    description = "/dev/kmsg records (priority, sequence, boot-relative µs), OOM kills, NVIDIA Xids"
    tables = TABLES

    def sniff(self, head: Head) -> int:
        lines = [line for line in head.lines if line.strip() and not line.startswith(" ")]
        if not lines:
            return 0
        hits = sum(1 for line in lines if _KMSG.match(line))
        if hits * 10 >= len(lines) * 9:
            return 95
        return 60 if hits * 2 >= len(lines) else 0

    def parse(self, chunks: Iterable[LineChunk], ctx: ParseContext) -> Iterator[Output]:
        stream = KernelStream(ctx, batch=True)
        host = ctx.host
        match = _KMSG.match
        feed = stream.feed
        for chunk in chunks:
            parsed = 0
            for no, line in chunk:
                m = match(line)
                if m is None:
                    if not line.strip() or line[0] == " ":
                        ctx.ignored()  # blank, or a dictionary line (" SUBSYSTEM=acpi")
                    else:
                        yield ctx.issue(no, "not a /dev/kmsg record", line)
                    continue
                parsed += 1
                usec = m.group(3)
                yield from feed(
                    no,
                    line[m.end() :],
                    ts=None,
                    ts_raw=usec,
                    ts_inferred=None,
                    monotonic_s=int(usec) / 1_000_000,
                    host=host,
                    level=int(m.group(1)) & 7,
                    seq=int(m.group(2)),
                )
            ctx.parsed(parsed)
        yield from stream.close()
