"""The default ``nvidia-smi`` box table (every driver layout), alone or many times over."""

from __future__ import annotations

import re
from collections.abc import Generator, Iterable, Iterator

from ...lazyre import lazy_re
from ...records import GpuProcess, GpuSample
from ..base import Head, LineChunk, Output, ParseContext, Parser
from .common import (
    NO_STAMP,
    Snapshots,
    Stamp,
    date_line_stamp,
    error_event,
    is_failure_head,
    mib,
    normalise_bus_id,
    number,
)

_HEADER = lazy_re(
    r"NVIDIA-SMI\s+(?P<smi>[\w.-]+)\s+(?:Driver|KMD) Version:\s*(?P<drv>[\w.-]+)"
    r"(?:\s+CUDA(?: UMD)? Version:\s*(?P<cuda>[\w./-]+))?"
)
_ROW1_CELL0 = lazy_re(r"\s*(\d+)\s+(.*?)\s+(On|Off|WDDM|TCC|N/A|ERR!)\s*")
_BUS_CELL = lazy_re(r"\s*([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s+(\S+)\s*")
_ROW2_CELL0 = lazy_re(r"\s*(\S+)\s+(\S+)\s+(\S+)\s+(\S+?)\s*/\s*(\S+)\s*")
_MEM_CELL = lazy_re(r"\s*(\d+)MiB\s*/\s*(\d+)MiB\s*")
_PROC = lazy_re(
    r"\s*(\d+)\s+(?:(N/A|\d+)\s+(N/A|\d+)\s+)?(\d+)\s+(C\+G|M\+C|C|G|M)\s+(.*?)\s*"
    r"(\d+MiB|\d*\.\.\.|N/A|ERR!)\s*"
)
_ERR = "ERR!"
#: a one-cell section title (the text before its ':') → the section it opens
_SECTIONS = {"Processes": "procs", "MIG devices": "mig"}


def _is_caption(stripped: str) -> bool:
    """A one-cell row that is no data: empty, a process table's column names, the no-process line."""
    return (
        not stripped
        or stripped.startswith(("GPU ", "ID ", "No running processes found"))
        or stripped == "Usage"
        or "Process name" in stripped
        or (stripped.endswith("Usage") and stripped.startswith("ID"))
    )


#: the first row of a GPU, waiting for its second: line number, index, name, bus id
_Row1 = tuple[int, int, str, str | None]
#: fan, temperature, perf, power, cap, used MiB, total MiB, utilisation, memory cell is ERR!
_Row2 = tuple[str, str, str, str, str, int | None, int | None, str, bool]


class _Snap:
    """The snapshot being read: its time, driver and the GPUs seen (index → bus id)."""

    __slots__ = ("bus_of", "driver", "errors", "section", "stamp")

    def __init__(self, stamp: Stamp, driver: str | None) -> None:
        self.stamp = stamp
        self.driver = driver
        self.section = "gpus"
        self.bus_of: dict[int, str | None] = {}
        self.errors: set[int] = set()


class NvidiaSmiTable(Parser):
    """The default ``nvidia-smi`` table → ``gpu_samples`` (one per GPU) and ``gpu_processes``.

    Every generation: 79 columns (≤525), 89 (535), 91 (550+), ``|---`` or ``+---`` rules, the
    wide PID column of 570+, the R610 ``KMD Version`` header, MIG tables (their device rows are
    recognised and skipped), ``No running processes found``. Cells are read between ``|``
    by their content, never by column. Anything before the first ``|`` is dropped, so indented
    tables and tables behind a log prefix read the same. The ctime line above a table (or a
    ``date`` line / ``=== … ===`` banner written by a cron job) is the sample time, local
    (``--tz``); a table without one takes ``--at`` ('given'), else the file's mtime ('mtime').
    A process memory cell cut to ``13583...`` is NULL with ``truncated`` (also set when the name
    was cut with ``...``). ``ERR!`` cells are NULL and make a ``gpu_events`` row
    (``unknown_error``). Failure outputs (``Unable to determine the device handle …``,
    ``No devices were found``, ``NVIDIA-SMI has failed …``, ``Failed to initialize NVML …``)
    become ``gpu_events`` rows.

    >>> from postmortem.parsers.base import run_parser
    >>> table = '''Thu Jan 15 10:00:00 2026
    ... +-----------------------------------------------------------------------------------------+
    ... | NVIDIA-SMI 570.00.00              Driver Version: 570.00.00      CUDA Version: 12.8     |
    ... |=========================================+========================+======================|
    ... |   0  NVIDIA H200                    On  |   00000000:18:00.0 Off |                    0 |
    ... | N/A   51C    P0            412W /  700W |   32362MiB / 143771MiB |     97%      Default |
    ... |                                         |                        |             Disabled |
    ... +-----------------------------------------+------------------------+----------------------+
    ... |    0   N/A  N/A            4242      C   llm::worker_TP0                 13583... |'''
    >>> out, ctx = run_parser(NvidiaSmiTable(), table)
    >>> s, p = out
    >>> (s.gpu_index, s.bus_id, s.mem_used_mib, s.mem_total_mib, s.temp_c, s.power_w, s.ts.isoformat())
    (0, '00000000:18:00.0', 32362, 143771, 51.0, 412.0, '2026-01-15T10:00:00+00:00')
    >>> (p.pid, p.process_name, p.used_mib, p.truncated, p.bus_id)
    (4242, 'llm::worker_TP0', None, True, '00000000:18:00.0')
    """

    name = "nvidia-smi-table"
    description = "default nvidia-smi table output (all driver layouts), concatenated snapshots, failures"
    tables = ("gpu_samples", "gpu_processes", "gpu_events")

    def sniff(self, head: Head) -> int:
        text = head.text
        if "NVIDIA-SMI " in text and _HEADER.search(text):
            # a table on its own (or indented) is ours; one behind log prefixes is probably a
            # log that captured nvidia-smi output: leave it to that log's parser if it claims it
            bare = any(ln.lstrip().startswith("| NVIDIA-SMI ") for ln in head.lines)
            return 95 if bare else 60
        rows = [ln[ln.index("|") :] for ln in head.lines if "|" in ln]
        if any(_MEM_CELL.fullmatch(cell) for ln in rows if "MiB /" in ln for cell in ln.split("|")):
            return 60
        if any(_PROC.fullmatch(ln[1:].rstrip().rstrip("|")) for ln in rows):
            return 50
        meaningful = [ln for ln in head.lines if ln.strip()][:8]
        timeish = all(is_failure_head(ln) or date_line_stamp(ln, _SNIFF_CTX) is not None for ln in meaningful)
        if meaningful and timeish and any(is_failure_head(ln) for ln in meaningful):
            return 60
        return 0

    def parse(self, chunks: Iterable[LineChunk], ctx: ParseContext) -> Iterator[Output]:
        reader = _Reader(self, ctx)
        for chunk in chunks:
            for line_no, line in chunk:
                yield from reader.line(line_no, line)
        yield from reader.end_gpu()

    @staticmethod
    def _row2(cells: list[str]) -> _Row2 | None:
        m = _ROW2_CELL0.fullmatch(cells[0])
        if m is None:
            return None
        mem = cells[1]
        mm = _MEM_CELL.fullmatch(mem)
        used: int | None
        total: int | None
        if mm is not None:
            used, total = int(mm.group(1)), int(mm.group(2))
        elif mem.strip() in ("N/A", _ERR):
            used = total = None
        elif _ERR in mem and "/" in mem:
            left, right = mem.split("/", 1)
            used, total = mib(left), mib(right)
        else:
            return None
        util = cells[2].split()
        return (
            m.group(1),
            m.group(2),
            m.group(3),
            m.group(4),
            m.group(5),
            used,
            total,
            util[0] if util else "",
            _ERR in mem,
        )

    def _flush(
        self,
        pending: _Row1,
        row2: _Row2 | None,
        snap: _Snap | None,
        ctx: ParseContext,
        row2_line: int | None = None,
    ) -> Iterator[Output]:
        line_no, idx, name, bus = pending
        stamp = snap.stamp if snap is not None else NO_STAMP
        driver = snap.driver if snap is not None else None
        ctx.parsed()
        if row2 is None:
            yield GpuSample(
                line_no, stamp.ts, stamp.raw, stamp.inferred, ctx.host, idx, None, bus, name or None,
                None, None, None, None, None, None, None, None, None, driver,
            )  # fmt: skip
            return
        ctx.parsed()
        _fan, temp, perf, pwr, _cap, used, total, util, mem_err = row2
        yield GpuSample(
            line_no, stamp.ts, stamp.raw, stamp.inferred, ctx.host, idx, None, bus, name or None,
            used, total, None, None, number(util), None, number(temp), number(pwr),
            perf if perf.startswith("P") else None, driver,
        )  # fmt: skip
        bad = [
            label
            for label, value in (
                ("fan", _fan),
                ("temperature", temp),
                ("perf", perf),
                ("power", pwr),
                ("utilization", util),
            )
            if value == _ERR
        ]
        if mem_err:
            bad.append("memory")
        if bad and snap is not None and idx not in snap.errors:
            snap.errors.add(idx)
            yield error_event(row2_line or line_no, stamp, ctx.host, bus, f"GPU {idx}", bad)

    @staticmethod
    def _process(m: re.Match[str], line_no: int, snap: _Snap, ctx: ParseContext) -> GpuProcess:
        gpu = int(m.group(1))
        name = m.group(6).strip()
        mem = m.group(7)
        truncated = mem.endswith("...") or name.endswith("...") or name.startswith("...")
        used = int(mem[:-3]) if mem.endswith("MiB") else None
        stamp = snap.stamp
        return GpuProcess(
            line_no, stamp.ts, stamp.raw, stamp.inferred, ctx.host, gpu, None, snap.bus_of.get(gpu),
            int(m.group(4)), name or None, used, truncated, m.group(5),
        )  # fmt: skip


class _Reader:
    """One file's state: the snapshot being read and a GPU's first row waiting for its second."""

    def __init__(self, parser: NvidiaSmiTable, ctx: ParseContext) -> None:
        self.parser = parser
        self.ctx = ctx
        self.snaps = Snapshots(ctx)
        self.snap: _Snap | None = None
        self.pending: _Row1 | None = None

    def end_gpu(self) -> Iterator[Output]:
        """Write the GPU whose first row waits, without a second row."""
        if self.pending is not None:
            yield from self.parser._flush(self.pending, None, self.snap, self.ctx)
            self.pending = None

    def _snap(self) -> _Snap:
        self.snap = self.snap or _Snap(self.snaps.take(), None)
        return self.snap

    def line(self, line_no: int, line: str) -> Iterator[Output]:
        ctx = self.ctx
        bar = line.find("|")
        if bar < 0:
            bar = line.find("+-")
            if bar < 0:
                yield from self._loose(line_no, line)
                return
        t = line[bar:].rstrip()
        if len(t) < 2:
            yield ctx.issue(line_no, "not part of an nvidia-smi table", line)
            return
        if t[0] == "+" or t[1] in "-=":
            yield from self.end_gpu()
            ctx.ignored()  # a rule
            return
        if t[-1] != "|":
            yield from self._unclosed(line_no, line, t)
            return
        cells = t[1:-1].split("|")
        if len(cells) == 1:
            yield from self._wide(line_no, line, cells[0])
            return
        yield from self._cells(line_no, line, t, cells)

    def _loose(self, line_no: int, line: str) -> Iterator[Output]:
        """A line outside the table: a date line, a banner, a failure message, or junk."""
        yield from self.end_gpu()
        got = self.snaps.feed(line_no, line)
        if got is True:
            if self.snaps.pending is not None:
                self.snap = None  # a date line / banner: the next table is a new snapshot
            return
        if got is not False:
            yield got
            return
        yield self.ctx.issue(line_no, "not part of an nvidia-smi table", line)

    def _unclosed(self, line_no: int, line: str, t: str) -> Iterator[Output]:
        # a date line behind a log prefix: "app[web.1] [info]|Thu Jan 15 10:00:00 2026"
        stamp = date_line_stamp(t[1:], self.ctx)
        if stamp is None:
            yield self.ctx.issue(line_no, "table row without its closing '|' (cut?)", line)
            return
        self.snaps.pending = stamp
        self.snap = None
        self.ctx.parsed()

    def _wide(self, line_no: int, line: str, body: str) -> Iterator[Output]:
        """A row of one cell: the header, a section title, column names or a process."""
        ctx = self.ctx
        m = _HEADER.search(body) if "NVIDIA-SMI" in body else None
        if m is not None:
            yield from self.end_gpu()
            self.snap = _Snap(self.snaps.take(), m.group("drv"))
            ctx.parsed()
            return
        stripped = body.strip()
        section = _SECTIONS.get(stripped.split(":", 1)[0]) if ":" in stripped else None
        if section is not None:
            self._snap().section = section
            ctx.ignored()
            return
        if _is_caption(stripped):
            ctx.ignored()
            return
        m = _PROC.fullmatch(body)
        if m is not None:
            yield self.parser._process(m, line_no, self._snap(), ctx)
            ctx.parsed()
            return
        yield ctx.issue(line_no, "unrecognised nvidia-smi table row", line)

    def _cells(self, line_no: int, line: str, t: str, cells: list[str]) -> Iterator[Output]:
        """A row of the GPU table (3 cells) or of the MIG devices table (4 cells)."""
        ctx = self.ctx
        if self.snap is not None and self.snap.section == "mig":
            ctx.ignored()
            return
        if self.pending is not None:
            row2 = self.parser._row2(cells) if len(cells) == 3 else None
            if row2 is not None:
                yield from self.parser._flush(self.pending, row2, self.snap, ctx, line_no)
                self.pending = None
                return
            yield from self.end_gpu()
        if len(cells) == 3 and (yield from self._three(line_no, line, cells)):
            return
        if len(cells) >= 3 and ("MIG" in t or "BAR1" in t or "Shared" in t):
            ctx.ignored()
            return
        yield ctx.issue(line_no, "unrecognised nvidia-smi table row", line)

    def _three(self, line_no: int, line: str, cells: list[str]) -> Generator[Output, None, bool]:
        """A GPU's first row (kept until its second), or a row that is not data; ``False``
        when the row is none of these."""
        ctx, c0 = self.ctx, cells[0]
        m1 = _ROW1_CELL0.fullmatch(c0)
        mb = _BUS_CELL.fullmatch(cells[1]) if m1 is not None else None
        if m1 is not None and mb is not None:
            snap = self.snap
            if snap is None or int(m1.group(1)) in snap.bus_of:
                snap = self.snap = _Snap(self.snaps.take(), snap.driver if snap is not None else None)
            bus = normalise_bus_id(mb.group(1))
            snap.bus_of[int(m1.group(1))] = bus
            snap.section = "gpus"
            self.pending = (line_no, int(m1.group(1)), m1.group(2), bus)
            return True
        if self.parser._row2(cells) is not None:
            yield ctx.issue(line_no, "GPU table row without the row above it (index, bus id)", line)
            return True
        if not c0.strip() and not cells[1].strip():
            ctx.ignored()  # the MIG M. line, or an empty row
            return True
        if "Name" in c0 or "Temp" in c0 or "Fan" in c0 or "Bus-Id" in cells[1]:
            ctx.ignored()  # column headers
            return True
        return False


_SNIFF_CTX = ParseContext()
