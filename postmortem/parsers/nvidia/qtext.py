"""``nvidia-smi -q`` (and ``-a``) text output, alone or many times over."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ...lazyre import lazy_re
from ...records import GpuProcess, GpuSample
from ..base import Head, LineChunk, Output, ParseContext, Parser
from .common import (
    NO_STAMP,
    Snapshots,
    Stamp,
    ctime_stamp,
    driver_text,
    error_event,
    integer,
    is_error,
    mib,
    normalise_bus_id,
    number,
    text_value,
)

_GPU_LINE = lazy_re(r"GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*")

# (section, key) → field of the GPU sample; section "" = directly under the GPU
_GPU_KEYS: dict[tuple[str, str], str] = {
    ("", "Product Name"): "name",
    ("", "GPU UUID"): "uuid",
    ("", "Performance State"): "pstate",
    ("FB Memory Usage", "Total"): "total",
    ("FB Memory Usage", "Reserved"): "reserved",
    ("FB Memory Usage", "Used"): "used",
    ("FB Memory Usage", "Free"): "free",
    ("Utilization", "Gpu"): "util_gpu",
    ("Utilization", "GPU"): "util_gpu",
    ("Utilization", "Memory"): "util_mem",
    ("Temperature", "GPU Current Temp"): "temp",
    ("GPU Power Readings", "Power Draw"): "power",
    ("GPU Power Readings", "Average Power Draw"): "power",
    ("GPU Power Readings", "Instantaneous Power Draw"): "power_inst",
    ("Power Readings", "Power Draw"): "power",
    ("Power Readings", "Average Power Draw"): "power",
    ("Power Readings", "Instantaneous Power Draw"): "power_inst",
    ("PCI", "Bus Id"): "bus",
}
_PROC_KEYS = {"Process ID", "GPU instance ID", "Compute instance ID"}
_PROC_SUB = {"Type": "type", "Name": "name", "Used GPU Memory": "used"}


class _Gpu:
    __slots__ = ("bus", "errors", "line_no", "procs", "values")

    def __init__(self, line_no: int, bus: str | None) -> None:
        self.line_no = line_no
        self.bus = bus
        self.values: dict[str, str] = {}
        self.procs: list[dict[str, object]] = []
        self.errors: list[str] = []


class NvidiaSmiQ(Parser):
    """``nvidia-smi -q`` text → ``gpu_samples`` (one per GPU block) and ``gpu_processes``.

    Keys are read by name under their section (indentation, 4 spaces a level), never by
    column: the key width drift (42 → 55 characters) and the renames ``Gpu`` → ``GPU``,
    ``Power Draw`` → ``Average Power Draw`` (used first) / ``Instantaneous Power Draw``, and
    R610's ``KMD Version`` and ``[Deprecated…]`` driver mark are handled. ``Timestamp`` is local
    time (``--tz``); several logs in one file (a cron job) each take their own. ``-q`` prints no
    GPU index: ``gpu_index`` is NULL (join on bus id / UUID). ``Unknown Error`` values are NULL
    and make one ``gpu_events`` row per GPU block.

    >>> from postmortem.parsers.base import run_parser
    >>> text = '''==============NVSMI LOG==============
    ... Timestamp                                 : Thu Jan 15 10:00:00 2026
    ... Driver Version                            : 535.00.00
    ... GPU 00000000:18:00.0
    ...     Product Name                          : NVIDIA A100-SXM4-40GB
    ...     FB Memory Usage
    ...         Total                             : 40960 MiB
    ...         Reserved                          : 620 MiB
    ...         Used                              : 4 MiB
    ...         Free                              : 40334 MiB
    ...     Processes                             : None'''
    >>> out, ctx = run_parser(NvidiaSmiQ(), text)
    >>> [(s.bus_id, s.name, s.mem_used_mib, s.mem_total_mib, s.mem_free_mib, s.driver_version) for s in out]
    [('00000000:18:00.0', 'NVIDIA A100-SXM4-40GB', 4, 40960, 40334, '535.00.00')]
    """

    name = "nvidia-smi-q"
    description = "nvidia-smi -q text output (any driver), concatenated logs"
    tables = ("gpu_samples", "gpu_processes", "gpu_events")

    def sniff(self, head: Head) -> int:
        text = head.text
        if "==NVSMI LOG==" in text:
            return 95 if any(ln.lstrip().startswith("==") and "NVSMI LOG" in ln for ln in head.lines) else 60
        if "Product Name" in text and "FB Memory Usage" in text and _GPU_LINE.search(text):
            return 80
        return 0

    def parse(self, chunks: Iterable[LineChunk], ctx: ParseContext) -> Iterator[Output]:
        reader = _Reader(ctx)
        for chunk in chunks:
            for line_no, line in chunk:
                yield from reader.line(line_no, line)
        yield from reader.end_gpu()


def _split(line: str, stripped: str) -> tuple[str, str | None]:
    """``Key : value`` → (key, value); ``Key :`` → (key, ""); a bare ``Section`` → (it, None)."""
    sep = line.find(" : ")
    if sep < 0 and stripped.endswith(" :"):
        return stripped[:-2].strip(), ""
    if sep >= 0:
        return line[:sep].strip(), line[sep + 3 :].strip()
    return stripped, None


class _Reader:
    """One file's state: the log's time and driver, the GPU block being read, its sections."""

    def __init__(self, ctx: ParseContext) -> None:
        self.ctx = ctx
        self.snaps = Snapshots(ctx)
        self.stamp: Stamp | None = None
        self.driver: str | None = None
        self.gpu: _Gpu | None = None
        self.stack: list[str] = []

    def end_gpu(self) -> Iterator[Output]:
        if self.gpu is not None:
            yield from _flush(self.gpu, self.stamp, self.driver, self.ctx)
            self.gpu = None

    def line(self, line_no: int, line: str) -> Iterator[Output]:
        stripped = line.strip()
        if not stripped:
            self.ctx.ignored()
            return
        if "NVSMI LOG" in stripped and stripped.startswith("="):
            yield from self.end_gpu()
            self.stamp = self.snaps.take()
            self.driver = None
            self.stack = []
            self.ctx.ignored()
            return
        level = (len(line) - len(line.lstrip(" "))) // 4
        key, value = _split(line, stripped)
        if level > 0:
            self._nested(line_no, level, key, value)
        elif value is None:
            yield from self._bare(line_no, line, stripped)
        else:
            yield from self._top(line_no, line, key, value)

    def _bare(self, line_no: int, line: str, stripped: str) -> Iterator[Output]:
        """A line at the left margin without a value: a GPU block's start, a date, or junk."""
        ctx, snaps = self.ctx, self.snaps
        m = _GPU_LINE.fullmatch(stripped)
        if m is not None:
            if self.gpu is not None:
                yield from _flush(self.gpu, self.stamp, self.driver, ctx)
            if self.stamp is None:
                self.stamp = snaps.take()
            self.gpu = _Gpu(line_no, normalise_bus_id(m.group(1)))
            self.stack = ["GPU"]
            ctx.parsed()
            return
        got = snaps.feed(line_no, line)
        if got is False:
            yield ctx.issue(line_no, "not a line of nvidia-smi -q output", line)
            return
        if self.gpu is not None and snaps.pending is not None:
            yield from self.end_gpu()
            self.stamp = None
        if got is not True:
            yield got

    def _top(self, line_no: int, line: str, key: str, value: str) -> Iterator[Output]:
        """``Key : value`` at the left margin: the log's time, its driver, or another section."""
        ctx = self.ctx
        if key == "Timestamp":
            got_stamp = ctime_stamp(value, ctx)
            if got_stamp is None:
                yield ctx.issue(line_no, "unreadable -q Timestamp", line)
                return
            self.stamp = got_stamp
            ctx.parsed()
            return
        if key == "Driver Version" or (key == "KMD Version" and self.driver is None):
            self.driver = driver_text(value)
            ctx.parsed()
            return
        yield from self.end_gpu()
        self.stack = [key]
        ctx.ignored()

    def _nested(self, line_no: int, level: int, key: str, value: str | None) -> None:
        """An indented line: a GPU's value, kept when its (section, key) is one we read."""
        ctx, gpu, stack = self.ctx, self.gpu, self.stack
        if gpu is None:
            ctx.ignored()  # a section outside a GPU block (e.g. -d restricted header parts)
            return
        del stack[level:]
        while len(stack) < level:
            stack.append("")
        section = stack[level - 1] if level >= 2 else ""
        stack.append(key)
        if value is None:
            ctx.ignored()
            return
        if is_error(value):
            gpu.errors.append(f"{section + ' / ' if section else ''}{key}")
        field = _GPU_KEYS.get((section, key))
        if field is not None:
            gpu.values.setdefault(field, value)
            ctx.parsed()
            return
        top = stack[1] if len(stack) > 1 else ""
        if top == "Processes" and _process(gpu, line_no, level, key, value):
            ctx.parsed()
            return
        ctx.ignored()


def _process(gpu: _Gpu, line_no: int, level: int, key: str, value: str) -> bool:
    """Read a line under ``Processes``; ``False`` when it is not one we keep."""
    procs = gpu.procs
    if level == 2 and key in _PROC_KEYS:
        if key == "GPU instance ID" or not procs or (key == "Process ID" and "pid" in procs[-1]):
            procs.append({"line_no": line_no})
        if key == "Process ID":
            procs[-1]["pid"] = integer(value)
            procs[-1]["line_no"] = line_no
        return True
    sub = _PROC_SUB.get(key)
    if sub is not None and procs and level >= 3:
        procs[-1][sub] = value
        return True
    return False


def _flush(gpu: _Gpu, stamp: Stamp | None, driver: str | None, ctx: ParseContext) -> Iterator[Output]:
    st = stamp or NO_STAMP
    v = gpu.values
    bus = gpu.bus or normalise_bus_id(v.get("bus"))
    power = number(v["power"]) if "power" in v else None
    if power is None and "power_inst" in v:
        power = number(v["power_inst"])
    uuid = text_value(v["uuid"]) if "uuid" in v else None
    yield GpuSample(
        gpu.line_no, st.ts, st.raw, st.inferred, ctx.host, None, uuid, bus,
        text_value(v["name"]) if "name" in v else None,
        mib(v.get("used", "")), mib(v.get("total", "")), mib(v.get("free", "")), mib(v.get("reserved", "")),
        number(v.get("util_gpu", "")), number(v.get("util_mem", "")), number(v.get("temp", "")), power,
        text_value(v["pstate"]) if "pstate" in v else None, driver,
    )  # fmt: skip
    for proc in gpu.procs:
        if "pid" not in proc:
            continue
        name = text_value(str(proc.get("name", "")))
        ptype = text_value(str(proc.get("type", "")))
        yield GpuProcess(
            int(str(proc["line_no"])), st.ts, st.raw, st.inferred, ctx.host, None, uuid, bus,
            proc["pid"],  # type: ignore[arg-type]
            name, mib(str(proc.get("used", ""))), False, ptype,
        )  # fmt: skip
    if gpu.errors:
        yield error_event(gpu.line_no, st, ctx.host, bus, f"GPU {bus}", gpu.errors)
