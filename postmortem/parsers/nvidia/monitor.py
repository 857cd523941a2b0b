"""``nvidia-smi dmon`` and ``nvidia-smi pmon`` column logs."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import ClassVar

from ...records import GpuProcess, GpuSample
from ...timeutil import DayInference, Inferred, localize
from ..base import Head, LineChunk, Output, ParseContext, Parser
from .common import NO_STAMP, Snapshots, Stamp, integer, mib, number, text_value


def _names(line: str) -> list[str] | None:
    """Column names of a ``#`` header line (lower case), or None for the units line."""
    names = line.lstrip("#").split()
    if not names or names[0] in ("Idx", "YYYYMMDD", "HH:MM:SS"):
        return None
    return [n.lower() for n in names]


class _Monitor(Parser):
    """Shared reading of dmon/pmon: ``#`` headers, rows split on blanks, ``-`` → NULL, the
    ``-o D``/``-o T`` date and time columns."""

    tables: ClassVar[tuple[str, ...]] = ()
    kind: ClassVar[str] = ""

    def _kind_of(self, names: list[str]) -> str | None:
        if "gpu" not in names:
            return None
        if "pid" in names:
            return "pmon"
        if {"pwr", "sm", "fb", "gtemp", "temp", "mem", "bar1", "mclk", "pviol", "sbecc", "rxpci"} & set(
            names
        ):
            return "dmon"
        return None

    def sniff(self, head: Head) -> int:
        for ln in head.lines[:8]:
            if ln.startswith("#"):
                names = _names(ln)
                if names is not None:
                    return 95 if self._kind_of(names) == self.kind else 0
            elif ln.strip():
                return 0
        return 0

    def parse(self, chunks: Iterable[LineChunk], ctx: ParseContext) -> Iterator[Output]:
        reader = _Reader(self, ctx)
        for chunk in chunks:
            for line_no, line in chunk:
                yield from reader.line(line_no, line)

    @staticmethod
    def _stamp(parts: list[str], di: int | None, ti: int, ctx: ParseContext) -> Stamp | None:
        if di is None:
            return None
        d, t = parts[di], parts[ti]
        if len(d) != 8 or not d.isdigit() or len(t) != 8 or t[2] != ":" or t[5] != ":":
            return None
        try:
            naive = datetime(int(d[:4]), int(d[4:6]), int(d[6:]), int(t[:2]), int(t[3:5]), int(t[6:]))  # noqa: DTZ001
        except ValueError:
            return None
        return Stamp(localize(naive, ctx.zone), f"{d} {t}", Inferred.ZONE)

    def _row(
        self, parts: list[str], pos: dict[str, int], stamp: Stamp, line_no: int, host: str | None
    ) -> GpuSample | GpuProcess | None:
        raise NotImplementedError


class _Reader:
    """One file's state: the header's columns, the day of ``-o T`` rows, the last row's time."""

    def __init__(self, parser: _Monitor, ctx: ParseContext) -> None:
        self.parser = parser
        self.ctx = ctx
        self.snaps = Snapshots(ctx, epoch=False)
        self.names: list[str] | None = None
        if ctx.columns:
            self.names = [c.strip().lower() for c in ctx.columns]
        self.pos: dict[str, int] = {}
        if self.names:
            self.pos = {n: i for i, n in enumerate(self.names)}
        self.days: DayInference | None = None
        self.day_flag: str | None = None
        self.last_key = ""
        self.last_stamp = NO_STAMP
        self.noted = False

    def line(self, line_no: int, line: str) -> Iterator[Output]:
        ctx = self.ctx
        if not line or line[0] == "#":
            self._header(line)
            return
        parts = line.split()
        if not parts:
            ctx.ignored()
            return
        names = self.names
        if names is None or (not parts[0][0].isdigit() and parts[0] != "-"):
            yield from self._other(line_no, line)
            return
        n = len(names)
        if self.parser.kind == "pmon" and len(parts) > n and names[-1] == "command":
            parts = [*parts[: n - 1], " ".join(parts[n - 1 :])]
        if len(parts) != n:
            yield ctx.issue(line_no, f"{len(parts)} columns, header has {n} (cut?)", line)
            return
        out = self.parser._row(parts, self.pos, self._time(parts), line_no, ctx.host)
        if out is None:
            ctx.ignored()  # pmon: a GPU without processes (pid "-")
            return
        ctx.parsed()
        yield out

    def _header(self, line: str) -> None:
        if line:
            got = _names(line)
            if got is not None:
                self.names = got
                self.pos = {n: i for i, n in enumerate(got)}
        self.ctx.ignored()

    def _other(self, line_no: int, line: str) -> Iterator[Output]:
        got_event = self.snaps.feed(line_no, line)
        if got_event is True:
            return
        if got_event is not False:
            yield got_event
            return
        reason = "row before any '#' header line" if self.names is None else "not a dmon/pmon row"
        yield self.ctx.issue(line_no, reason, line)

    def _note(self, text: str) -> None:
        if not self.noted:
            self.noted = True
            self.ctx.note(text)

    def _time(self, parts: list[str]) -> Stamp:
        di = self.pos.get("date")
        ti = self.pos.get("time")
        if ti is None:
            stamp = self.snaps.current()
            self._note(
                f"{self.parser.kind} without -o DT: every row takes the time {stamp.inferred or 'unknown'}"
            )
            return stamp
        key = (parts[di] if di is not None else "") + parts[ti]
        if key != self.last_key:
            self.last_key = key
            got_stamp = self.parser._stamp(parts, di, ti, self.ctx)
            if got_stamp is None and di is None:
                got_stamp = self._time_of_day(parts[ti])
            self.last_stamp = got_stamp or self.snaps.current()
        return self.last_stamp

    def _time_of_day(self, text: str) -> Stamp | None:
        """A ``-o T`` time without a date, on the day ``--at`` or the file's mtime gives."""
        tod = _tod(text)
        if tod is None:
            return None
        if self.days is None:
            self.days, self.day_flag = _days(self.ctx, tod)
        if self.days is None:
            return None
        d = self.days.date_for(tod)
        naive = datetime(d.year, d.month, d.day, tod // 3600, tod // 60 % 60, tod % 60)  # noqa: DTZ001
        stamp = Stamp(localize(naive, self.ctx.zone), text, self.day_flag)
        self._note(f"{self.parser.kind} -o T without dates: the date comes from {self.day_flag}")
        return stamp


def _tod(text: str) -> int | None:
    if len(text) != 8 or text[2] != ":" or text[5] != ":":
        return None
    try:
        h, m, s = int(text[:2]), int(text[3:5]), int(text[6:])
    except ValueError:
        return None
    if h > 23 or m > 59 or s > 60:
        return None
    return h * 3600 + m * 60 + min(s, 59)


def _days(ctx: ParseContext, first_tod: int) -> tuple[DayInference | None, str | None]:
    """The date of the first ``-o T`` row: ``--at``'s date ('given'), else the day that makes
    the capture end at or before the file's mtime ('mtime')."""
    if ctx.at is not None:
        return DayInference(ctx.at.astimezone(ctx.zone).date()), Inferred.GIVEN
    if ctx.mtime is not None:
        local = ctx.mtime.astimezone(ctx.zone).replace(tzinfo=None)
        return DayInference.from_end(local, first_tod), Inferred.MTIME
    return None, None


def _cell(parts: list[str], pos: dict[str, int], *names: str) -> str:
    for name in names:
        i = pos.get(name)
        if i is not None:
            return parts[i]
    return "-"


class NvidiaDmon(_Monitor):
    """``nvidia-smi dmon`` → ``gpu_samples`` (one per GPU per interval).

    Columns by name from the first ``#`` header line (any ``-s`` set, any driver): ``gpu`` →
    index, ``fb`` → mem_used_mib (labelled MB, really MiB; dmon prints no total), ``pwr``,
    ``gtemp`` (``temp`` on older drivers), ``sm`` → util_gpu_pct, ``mem`` → util_mem_pct.
    ``-o DT`` columns give the local time (``--tz``). With ``-o T`` alone the date is that of
    ``--at`` ('given'), else derived from the file's mtime ('mtime'), rolling over at midnight.
    Without time columns every row takes ``--at`` / the mtime (a note says so). ``-`` is NULL;
    repeated headers and blank lines are skipped.

    >>> from postmortem.parsers.base import run_parser
    >>> out, ctx = run_parser(NvidiaDmon(), '''#Date       Time        gpu     fb   bar1    pwr
    ... #YYYYMMDD   HH:MM:SS    Idx     MB     MB      W
    ...  20240104   13:54:35      0    239      3      -''')
    >>> [(s.gpu_index, s.mem_used_mib, s.power_w, s.ts.isoformat()) for s in out]
    [(0, 239, None, '2024-01-04T13:54:35+00:00')]
    """

    name = "nvidia-dmon"
    description = "nvidia-smi dmon device monitoring columns (any -s set, -o DT)"
    tables = ("gpu_samples",)
    kind = "dmon"

    def _row(
        self, parts: list[str], pos: dict[str, int], stamp: Stamp, line_no: int, host: str | None
    ) -> GpuSample | GpuProcess | None:
        return GpuSample(
            line_no, stamp.ts, stamp.raw, stamp.inferred, host, integer(_cell(parts, pos, "gpu")), None, None,
            None, mib(_cell(parts, pos, "fb")), None, None, None,
            number(_cell(parts, pos, "sm")), number(_cell(parts, pos, "mem")),
            number(_cell(parts, pos, "gtemp", "temp")), number(_cell(parts, pos, "pwr")), None, None,
        )  # fmt: skip


class NvidiaPmon(_Monitor):
    """``nvidia-smi pmon`` → ``gpu_processes`` (one per process per interval).

    Columns by name: ``gpu``, ``pid``, ``type`` (C/G/C+G), ``command`` (truncated by pmon),
    ``fb`` (``-s m``, MiB) → used_mib, else NULL. A row with pid ``-`` (a GPU without
    processes) is recognised and skipped. Times as for ``nvidia-dmon``.

    >>> from postmortem.parsers.base import run_parser
    >>> out, ctx = run_parser(NvidiaPmon(), '''# gpu         pid   type     sm    mem    command
    ... # Idx           #    C/G      %      %    name
    ...     0        4242     C     99      7    python3
    ...     1           -     -      -      -    -''')
    >>> [(p.gpu_index, p.pid, p.process_type, p.process_name, p.used_mib) for p in out]
    [(0, 4242, 'C', 'python3', None)]
    """

    name = "nvidia-pmon"
    description = "nvidia-smi pmon process monitoring columns"
    tables = ("gpu_processes",)
    kind = "pmon"

    def _row(
        self, parts: list[str], pos: dict[str, int], stamp: Stamp, line_no: int, host: str | None
    ) -> GpuSample | GpuProcess | None:
        pid = integer(_cell(parts, pos, "pid"))
        if pid is None:
            return None
        return GpuProcess(
            line_no, stamp.ts, stamp.raw, stamp.inferred, host, integer(_cell(parts, pos, "gpu")), None, None,
            pid, text_value(_cell(parts, pos, "command")), mib(_cell(parts, pos, "fb")), False,
            text_value(_cell(parts, pos, "type")),
        )  # fmt: skip
