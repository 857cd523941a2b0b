"""``nvidia-smi --query-gpu=… --format=csv`` and ``--query-compute-apps=…`` (one parser)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, overload

from ...lazyre import lazy_re
from ...records import GpuProcess, GpuSample
from ...timeutil import Inferred, SlashStampReader, parse_slash_stamp
from ..base import Head, LineChunk, Output, ParseContext, Parser
from .common import (
    Snapshots,
    Stamp,
    date_line_stamp,
    error_event,
    integer,
    is_failure_head,
    mib,
    normalise_bus_id,
    number,
    text_value,
)
from .common import driver_text as _driver

_HEAD_CELL = lazy_re(r"([A-Za-z][A-Za-z0-9_.]*)(?: \[([^\]]*)\])?")

# --query-gpu fields (and aliases) we store → GpuSample field
GPU_FIELDS: dict[str, str] = {
    "timestamp": "ts",
    "index": "gpu_index",
    "uuid": "gpu_uuid",
    "gpu_uuid": "gpu_uuid",
    "pci.bus_id": "bus_id",
    "gpu_bus_id": "bus_id",
    "name": "name",
    "gpu_name": "name",
    "memory.used": "mem_used_mib",
    "memory.total": "mem_total_mib",
    "memory.free": "mem_free_mib",
    "memory.reserved": "mem_reserved_mib",
    "utilization.gpu": "util_gpu_pct",
    "utilization.memory": "util_mem_pct",
    "temperature.gpu": "temp_c",
    "power.draw": "power_w",
    "power.draw.average": "power_w_avg",
    "power.draw.instant": "power_w_inst",
    "pstate": "pstate",
    "driver_version": "driver_version",
    "kmd_version": "kmd_version",
}

# --query-compute-apps properties → GpuProcess field
APP_FIELDS: dict[str, str] = {
    "timestamp": "ts",
    "gpu_uuid": "gpu_uuid",
    "gpu_bus_id": "bus_id",
    "gpu_name": "gpu_name",
    "gpu_serial": "gpu_serial",
    "pid": "pid",
    "process_name": "process_name",
    "name": "process_name",
    "used_gpu_memory": "used_mib",
    "used_memory": "used_mib",
}
_APP_MARKERS = frozenset({"pid", "process_name", "used_gpu_memory", "used_memory"})

# a few of the --query-gpu fields nvidia-smi knows, to recognise a header line
_KNOWN_PREFIXES = (
    "timestamp",
    "index",
    "uuid",
    "name",
    "pci.",
    "memory.",
    "utilization.",
    "temperature.",
    "power.",
    "pstate",
    "clocks",
    "driver_",
    "fan.",
    "count",
    "serial",
    "gpu_",
    "pid",
    "process_name",
    "used_",
    "ecc.",
    "mig.",
    "compute_",
    "persistence_",
    "display_",
    "vbios_",
    "inforom.",
    "retired_pages.",
    "remapped_rows.",
    "kmd_",
    "enforced.",
    "pcie.",
    "accounting.",
    "reset_status.",
    "encoder.",
    "module.",
    "protected_memory.",
    "vgpu_",
    "c2c.",
    "fabric.",
)

#: common ``noheader`` field lists, tried in order when --columns is not given
GUESS_LISTS: tuple[tuple[str, ...], ...] = (
    (
        "timestamp",
        "index",
        "uuid",
        "pci.bus_id",
        "name",
        "memory.total",
        "memory.reserved",
        "memory.used",
        "memory.free",
        "utilization.gpu",
        "utilization.memory",
        "temperature.gpu",
        "power.draw",
        "pstate",
        "clocks.sm",
    ),
    (
        "timestamp",
        "name",
        "pci.bus_id",
        "driver_version",
        "pstate",
        "pcie.link.gen.max",
        "pcie.link.gen.current",
        "temperature.gpu",
        "utilization.gpu",
        "utilization.memory",
        "memory.total",
        "memory.free",
        "memory.used",
    ),
    ("index", "uuid", "name", "temperature.gpu", "utilization.gpu", "memory.used", "memory.total"),
    ("timestamp", "index", "memory.used", "memory.total"),
    ("index", "name", "memory.used", "memory.total", "utilization.gpu"),
    ("index", "memory.used", "memory.total"),
    ("memory.used", "memory.total"),
    ("memory.used",),
    (
        "timestamp",
        "gpu_name",
        "gpu_bus_id",
        "gpu_serial",
        "gpu_uuid",
        "pid",
        "process_name",
        "used_gpu_memory",
    ),
    ("gpu_uuid", "pid", "process_name", "used_gpu_memory"),
    ("gpu_bus_id", "pid", "process_name", "used_gpu_memory"),
    ("pid", "process_name", "used_gpu_memory"),
    ("gpu_uuid", "pid", "used_gpu_memory"),
    ("pid", "used_gpu_memory"),
)


def _is_null(c: str) -> bool:
    c = c.strip()
    return not c or c in ("N/A", "-") or (c[0] == "[" and c[-1] == "]")


def _ok_mib(c: str) -> bool:
    return mib(c) is not None or _is_null(c)


def _ok_num(c: str) -> bool:
    return number(c) is not None or _is_null(c)


_VALIDATORS: dict[str, Callable[[str], bool]] = {
    "timestamp": lambda c: parse_slash_stamp(c) is not None,
    "index": lambda c: c.isdigit(),
    "pid": lambda c: c.isdigit(),
    "uuid": lambda c: c.startswith(("GPU-", "MIG-")),
    "gpu_uuid": lambda c: c.startswith(("GPU-", "MIG-")),
    "pci.bus_id": lambda c: normalise_bus_id(c) is not None,
    "gpu_bus_id": lambda c: normalise_bus_id(c) is not None,
    "pstate": lambda c: (c[:1] == "P" and c[1:].isdigit()) or _is_null(c),
    "name": lambda c: bool(c) and not c.replace(".", "").isdigit(),
    "gpu_name": lambda c: bool(c) and not c.replace(".", "").isdigit(),
    "process_name": lambda c: bool(c) and not c.isdigit(),
    "driver_version": lambda c: bool(re.fullmatch(r"\d+\.\d+(?:\.\d+)?", c)),
}


def _validator(field: str) -> Callable[[str], bool]:
    if field in _VALIDATORS:
        return _VALIDATORS[field]
    if field.startswith("memory.") or field in ("used_gpu_memory", "used_memory"):
        return _ok_mib
    return _ok_num


def guess_columns(cells: list[str]) -> tuple[str, ...] | None:
    """The first common field list that fits a ``noheader`` row (by count and cell shapes).

    >>> guess_columns(["2026/01/15 10:00:00.123", "0", "81559 MiB"]) is None
    True
    >>> guess_columns(["4242", "python3", "28234 MiB"])
    ('pid', 'process_name', 'used_gpu_memory')
    >>> guess_columns(["1234", "81559"])
    ('memory.used', 'memory.total')
    """
    for fields in GUESS_LISTS:
        if len(fields) != len(cells):
            continue
        if all(_validator(f)(c.strip()) for f, c in zip(fields, cells, strict=True)):
            return fields
    return None


def parse_header(line: str) -> list[str] | None:
    """Field names of a CSV header line (units dropped), or None if it is no header.

    >>> parse_header("timestamp, index, memory.used [MiB], temperature.gpu")
    ['timestamp', 'index', 'memory.used', 'temperature.gpu']
    >>> header_units("timestamp, memory.used [MiB], utilization.gpu [%]")
    ['', 'MiB', '%']
    >>> parse_header("NVIDIA H100 NVL, P0, 2026/02/25 10:04:37.416") is None
    True
    """
    s = line.strip()
    if not s or not s[0].isalpha():
        return None
    fields = []
    known = 0
    for cell in s.split(","):
        m = _HEAD_CELL.fullmatch(cell.strip())
        if m is None:
            return None
        name = m.group(1).lower()
        if name.startswith(_KNOWN_PREFIXES):
            known += 1
        fields.append(name)
    if known == 0 or known * 2 < len(fields):
        return None
    if len(fields) == 1 and "." not in fields[0] and "_" not in fields[0]:
        return None
    return fields


def header_units(line: str) -> list[str]:
    out = []
    for cell in line.strip().split(","):
        m = _HEAD_CELL.fullmatch(cell.strip())
        out.append(m.group(2) or "" if m else "")
    return out


_SAMPLE_SLOTS: tuple[tuple[str, Callable[[str], object]], ...] = (
    ("gpu_index", integer),
    ("gpu_uuid", text_value),
    ("bus_id", normalise_bus_id),
    ("name", text_value),
    ("mem_used_mib", mib),
    ("mem_total_mib", mib),
    ("mem_free_mib", mib),
    ("mem_reserved_mib", mib),
    ("util_gpu_pct", number),
    ("util_mem_pct", number),
    ("temp_c", number),
    ("power_w", number),
    ("pstate", text_value),
    ("driver_version", _driver),
)


class _Layout:
    """Column positions of the stored fields for one header."""

    def __init__(self, fields: list[str] | tuple[str, ...], units: list[str] | None = None) -> None:
        self.fields = list(fields)
        #: the unit each value carries (``MiB``, ``%``…; "" without one or with ``nounits``)
        self.units = units if units is not None else [""] * len(self.fields)
        self.n = len(self.fields)
        self.apps = any(f in _APP_MARKERS for f in self.fields)
        table = APP_FIELDS if self.apps else GPU_FIELDS
        self.pos: dict[str, int] = {}
        for i, f in enumerate(self.fields):
            target = table.get(f)
            if target is not None and target not in self.pos:
                self.pos[target] = i

        # the GPU sample plan: (position among the 14 value fields after ``host``, cell, converter)
        power = next((self.pos[k] for k in ("power_w", "power_w_avg", "power_w_inst") if k in self.pos), None)
        plan: list[tuple[int, int, Callable[[str], object]]] = []
        for slot, (target, conv) in enumerate(_SAMPLE_SLOTS):
            col = self.pos.get(target)
            if target == "power_w":
                col = power
            elif target == "driver_version" and col is None:
                col = self.pos.get("kmd_version")
                conv = text_value
            if col is not None:
                plan.append((slot, col, conv))
        self.plan = plan
        self._fast: Any = None

    def get(self, target: str) -> int:
        return self.pos.get(target, -1)

    def fast_plan(self) -> Any:
        """The compiled pass's view of this header (:class:`.fastcsv.Plan`), made once."""
        if self._fast is None:
            from .fastcsv import Plan

            self._fast = Plan(self.n, self.units, self.plan)
        return self._fast


#: a block shorter than this goes through the per-line path (Arrow setup costs more)
VECTOR_MIN_ROWS = 256


class _ChunkLines(Sequence[str]):
    """A chunk's lines, each decoded when asked for (most are read by the compiled pass)."""

    def __init__(self, chunk: LineChunk) -> None:
        self.chunk = chunk
        self.n = len(chunk)

    def __len__(self) -> int:
        return self.n

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[str]: ...
    def __getitem__(self, i: int | slice) -> str | Sequence[str]:
        if isinstance(i, slice):
            return [self.chunk.line(j) for j in range(*i.indices(self.n))]
        return self.chunk.line(i)


class _State:
    """What the parser carries from line to line and chunk to chunk."""

    def __init__(self, ctx: ParseContext) -> None:
        self.ctx = ctx
        self.snaps = Snapshots(ctx, epoch=False)
        self.layout: _Layout | None = None
        self.failing: set[object] = set()
        self.read_stamp = SlashStampReader(ctx.zone)
        self.last_raw = ""
        self.last_stamp = Stamp(None, None, None)


class NvidiaSmiCsv(Parser):
    """``nvidia-smi --query-gpu=… --format=csv[,noheader][,nounits]`` (``-l``/``-lms`` loops) →
    ``gpu_samples``; ``--query-compute-apps=…`` → ``gpu_processes`` (decided by the header).

    Fields are found by name in any order; units in the header or not; every "no value" token
    is NULL. The ``timestamp`` field is local time without a zone (``--tz``, ts_inferred
    'zone'); without one, rows take the last ``date`` line / banner, else ``--at`` / mtime.
    ``noheader`` files use ``--columns``, else the first common field list whose shapes fit
    (see :data:`GUESS_LISTS`; a note says which). A header printed again (another run appended)
    switches the layout. A short row (a loop killed mid-write) is stored with the missing cells
    NULL — the last cell too when no separator followed it, as it may be cut — and a warning.
    ``[Unknown Error]`` cells become a ``gpu_events`` row when a GPU starts failing. Cells are
    split on ``", "`` (nvidia-smi never quotes). A ``noheader,nounits`` file without a timestamp
    or UUID column is not recognised by content: give ``--format nvidia-smi-csv --columns …``.

    >>> from postmortem.parsers.base import run_parser
    >>> out, ctx = run_parser(NvidiaSmiCsv(), '''timestamp, index, memory.total [MiB], memory.used [MiB], power.draw [W]
    ... 2026/01/15 10:00:00.123, 0, 143771 MiB, 32362 MiB, [N/A]
    ... 2026/01/15 10:00:00.125, 1, 143771 MiB, 0 MiB, 76.10 W''')
    >>> [(s.gpu_index, s.mem_used_mib, s.mem_total_mib, s.power_w, s.ts.isoformat()) for s in out]
    [(0, 32362, 143771, None, '2026-01-15T10:00:00.123000+00:00'), (1, 0, 143771, 76.1, '2026-01-15T10:00:00.125000+00:00')]
    >>> out, ctx = run_parser(NvidiaSmiCsv(), '''timestamp, gpu_bus_id, gpu_uuid, pid, process_name, used_gpu_memory [MiB]
    ... 2026/01/15 10:00:00.456, 00000000:83:00.0, GPU-0, 4242, llm::worker_TP0, 28234 MiB''')
    >>> [(p.pid, p.process_name, p.used_mib, p.bus_id) for p in out]
    [(4242, 'llm::worker_TP0', 28234, '00000000:83:00.0')]
    """

    name = "nvidia-smi-csv"
    description = "nvidia-smi --query-gpu / --query-compute-apps CSV (also -l/-lms loops)"
    tables = ("gpu_samples", "gpu_processes", "gpu_events")
    line_offsets = False  # (the fast path splits the rows itself; 42 of 43 bench chunks never asked)

    def sniff(self, head: Head) -> int:
        # a loop of `date; nvidia-smi --query-gpu=… --format=csv` puts a date line before each
        # snapshot: the parser reads them as the snapshots' times, the sniff looks past them
        probe = ParseContext()
        lines = [
            ln for ln in head.lines if ln.strip() and date_line_stamp(ln.strip(), probe, epoch=False) is None
        ]
        if not lines:
            return 0
        first = lines[0]
        fields = parse_header(first)
        if (fields is not None and "," in first) or (fields is not None and len(fields) == 1):
            known = [f for f in fields or () if f in GPU_FIELDS or f in APP_FIELDS]
            if known:
                return 95
            return 70
        # noheader: rows with ", " separators, a timestamp / MiB / GPU- cell, same count
        rows = [ln for ln in lines[:16] if not is_failure_head(ln)]
        if not rows:
            return 0
        counts = {ln.count(", ") for ln in rows}
        if len(counts) != 1 or 0 in counts:
            return 0
        marks = sum(
            1
            for ln in rows
            if " MiB" in ln or "GPU-" in ln or parse_slash_stamp(ln.split(", ", 1)[0]) is not None
        )
        if marks == len(rows) and all(not ln.lstrip().startswith(("|", "#", "<", "+")) for ln in rows):
            return 60
        return 0

    def parse(self, chunks: Iterable[LineChunk], ctx: ParseContext) -> Iterator[Output]:
        st = _State(ctx)
        if ctx.columns:
            st.layout = _Layout([c.strip().split(" [", 1)[0].lower() for c in ctx.columns])
        for chunk in chunks:
            # a large block's lines are decoded one at a time, only where the fast path stops
            lines: Sequence[str] = chunk.lines if len(chunk) < VECTOR_MIN_ROWS else _ChunkLines(chunk)
            first = chunk.first_line_no
            start = 0
            pos: int | None = 0  # the byte where line ``start`` begins, while known
            # the per-line path up to the first regular row (header, banners), then whole blocks
            # of regular rows in one compiled pass, the per-line path again for anything irregular
            while start < len(lines):
                if st.layout is not None and not st.layout.apps and len(lines) - start >= VECTOR_MIN_ROWS:
                    from .fastcsv import vector_rows

                    done = vector_rows(st, chunk, start, pos, VECTOR_MIN_ROWS)
                    if done is not None:
                        batch, start, pos = done
                        yield batch
                        continue
                # before the header is known, one line at a time (the header switches the layout)
                stop = min(len(lines), start + (VECTOR_MIN_ROWS if st.layout is not None else 1))
                yield from self._rows(st, lines, first, start, stop)
                start, pos = stop, None

    def _rows(self, st: _State, lines: Sequence[str], first: int, start: int, stop: int) -> Iterator[Output]:  # noqa: C901 - 30 > 15: listed in docs/dev/README.md
        ctx = st.ctx
        snaps = st.snaps
        failing = st.failing
        read_stamp = st.read_stamp
        host = ctx.host
        layout = st.layout
        last_raw = st.last_raw
        last_stamp = st.last_stamp
        try:
            for i in range(start, stop):
                line = lines[i]
                line_no = first + i
                if "," not in line or line[0] in "=#*~":
                    got = snaps.feed(line_no, line)
                    if got is True:
                        continue
                    if got is not False:
                        yield got
                        continue
                    fields = parse_header(line)
                    if fields is not None:
                        layout = _Layout(fields, header_units(line))
                        ctx.ignored()
                        continue
                    if layout is None or layout.n != 1 or line[0] in "=#*~":
                        yield ctx.issue(line_no, "not a CSV row of nvidia-smi output", line)
                        continue
                elif line[0].isalpha():
                    fields = parse_header(line)
                    if fields is not None:
                        layout = _Layout(fields, header_units(line))
                        ctx.ignored()
                        continue
                    if "Unable to determine" in line or "NVIDIA-SMI has failed" in line or "NVML" in line:
                        got = snaps.feed(line_no, line)
                        if got is not False and got is not True:
                            yield got
                            continue
                # nvidia-smi separates with ", " and never quotes (a name may hold a bare ",")
                body = line.rstrip()
                if body.endswith(","):
                    body = body[:-1] + ", "
                cells = body.split(", ") if ", " in body else [c.strip() for c in body.split(",")]
                if layout is None:
                    guess = guess_columns(cells)
                    if guess is None:
                        yield ctx.issue(
                            line_no,
                            "CSV row without a header and no known field list fits (give --columns)",
                            line,
                        )
                        continue
                    layout = _Layout(guess)
                    ctx.note(f"nvidia-smi CSV without header: assumed fields {','.join(guess)}")
                n = layout.n
                short = False
                suspect = -1  # the last cell printed, which a killed loop may have cut
                if len(cells) != n:
                    if len(cells) > n and layout.apps and layout.get("process_name") >= 0:
                        k = layout.get("process_name")
                        extra = len(cells) - n
                        cells = [*cells[:k], ", ".join(cells[k : k + extra + 1]), *cells[k + extra + 1 :]]
                    elif len(cells) < n:
                        short = True
                        if not line.rstrip().endswith(","):
                            suspect = len(cells) - 1
                        cells = cells + [""] * (n - len(cells))
                    else:
                        yield ctx.issue(line_no, f"CSV row has {len(cells)} fields, header has {n}", line)
                        continue
                elif not cells[-1]:
                    short = True
                elif layout.units[-1]:
                    suspect = n - 1
                if suspect >= 0:
                    unit = layout.units[suspect]
                    c = cells[suspect]
                    if unit and (c.endswith(unit) or _is_null(c)):
                        pass
                    elif unit or short:
                        cells[suspect] = ""
                        short = True
                # time
                p = layout.get("ts")
                if p >= 0:
                    raw = cells[p].strip()
                    if raw != last_raw:
                        ts = read_stamp(raw)
                        last_stamp = Stamp(ts, raw, Inferred.ZONE) if ts is not None else snaps.current()
                        last_raw = raw
                    stamp = last_stamp
                else:
                    stamp = snaps.current()
                if short:
                    yield ctx.issue(
                        line_no,
                        f"short CSV row ({len([c for c in cells if c])} of {n} fields, truncated?): "
                        "missing cells stored as NULL",
                        line,
                        unparsed=False,
                    )
                if layout.apps:
                    yield self._app(layout, cells, stamp, line_no, host)
                    ctx.parsed()
                    continue
                sample = self._gpu(layout, cells, stamp, line_no, host)
                ctx.parsed()
                yield sample
                if "[Unknown Error]" in line or "ERR!" in line:
                    key = sample.gpu_uuid or sample.bus_id or sample.gpu_index
                    if key not in failing:
                        failing.add(key)
                        bad = [
                            layout.fields[j]
                            for j, c in enumerate(cells)
                            if c.strip() in ("[Unknown Error]", "ERR!")
                        ]
                        who = f"GPU {sample.gpu_index}" if sample.gpu_index is not None else "GPU"
                        yield error_event(line_no, stamp, host, sample.bus_id, who, bad)
                elif failing:
                    failing.discard(sample.gpu_uuid or sample.bus_id or sample.gpu_index)
        finally:
            st.layout = layout
            st.last_raw = last_raw
            st.last_stamp = last_stamp

    @staticmethod
    def _gpu(layout: _Layout, cells: list[str], stamp: Stamp, line_no: int, host: str | None) -> GpuSample:
        vals: list[Any] = [None] * 14
        for slot, i, conv in layout.plan:
            vals[slot] = conv(cells[i])
        return GpuSample(line_no, stamp.ts, stamp.raw, stamp.inferred, host, *vals)

    @staticmethod
    def _app(layout: _Layout, cells: list[str], stamp: Stamp, line_no: int, host: str | None) -> GpuProcess:
        pos = layout.pos

        def cell(target: str) -> str:
            i = pos.get(target)
            return cells[i] if i is not None else ""

        return GpuProcess(
            line_no,
            stamp.ts,
            stamp.raw,
            stamp.inferred,
            host,
            None,
            text_value(cell("gpu_uuid")),
            normalise_bus_id(cell("bus_id")),
            integer(cell("pid")),
            text_value(cell("process_name")),
            mib(cell("used_mib")),
            False,
        )
