"""dcgm-exporter Prometheus text (``curl :9400/metrics`` saved to a file, once or many times)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator

from ...lazyre import lazy_re
from ...records import GpuSample, GpuXid
from ...timeutil import epoch_seconds
from ..base import Head, LineChunk, Output, ParseContext, Parser
from .common import Snapshots, Stamp, normalise_bus_id, xid_bus_id

_LINE = lazy_re(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+(-?\d+))?\s*")
_LABEL = lazy_re(r'([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"')

#: DCGM field → gpu_samples column
METRICS: dict[str, str] = {
    "DCGM_FI_DEV_FB_USED": "mem_used_mib",
    "DCGM_FI_DEV_FB_FREE": "mem_free_mib",
    "DCGM_FI_DEV_FB_RESERVED": "mem_reserved_mib",
    "DCGM_FI_DEV_FB_TOTAL": "mem_total_mib",
    "DCGM_FI_DEV_GPU_UTIL": "util_gpu_pct",
    "DCGM_FI_DEV_MEM_COPY_UTIL": "util_mem_pct",
    "DCGM_FI_DEV_GPU_TEMP": "temp_c",
    "DCGM_FI_DEV_POWER_USAGE": "power_w",
}
XID_METRIC = "DCGM_FI_DEV_XID_ERRORS"
#: DCGM_INT32_BLANK (0x7ffffff0): this value and above (INT64 and FP64 blanks too) mean "no value"
BLANK = float(0x7FFFFFF0)


def _value(text: str) -> float | None:
    """A sample value; NaN, ±Inf and DCGM blank sentinels → None.

    >>> _value("43"), _value("9223372036854775794"), _value("NaN"), _value("140737488355328")
    (43.0, None, None, None)
    """
    try:
        v = float(text)
    except ValueError:
        return None
    if math.isnan(v) or math.isinf(v) or v >= BLANK:
        return None
    return v


class _Gpu:
    __slots__ = ("bus", "driver", "host", "index", "line_no", "name", "stamp", "uuid", "values")

    def __init__(self, line_no: int, labels: dict[str, str], stamp: Stamp, host: str | None) -> None:
        self.line_no = line_no
        self.stamp = stamp
        self.index = int(labels["gpu"]) if labels.get("gpu", "").isdigit() else None
        self.uuid = labels.get("UUID") or labels.get("uuid") or None
        self.bus = normalise_bus_id(labels.get("pci_bus_id"))
        self.name = labels.get("modelName") or None
        self.host = labels.get("Hostname") or labels.get("hostname") or host
        self.driver = labels.get("DCGM_FI_DRIVER_VERSION") or None
        self.values: dict[str, float | None] = {}


class DcgmExporter(Parser):
    """dcgm-exporter metrics → ``gpu_samples`` (one per GPU per scrape) and ``gpu_xids``.

    ``DCGM_FI_DEV_FB_USED/FREE/RESERVED/TOTAL`` (MiB), ``GPU_UTIL``, ``MEM_COPY_UTIL``,
    ``GPU_TEMP``, ``POWER_USAGE`` of one GPU (labels ``gpu``, ``UUID`` or ``uuid``,
    ``pci_bus_id``, ``modelName``, ``Hostname`` or ``hostname`` → host,
    ``DCGM_FI_DRIVER_VERSION``) form one sample. The scrape time is the sample timestamp (ms)
    when the scraper stored one, else the last ``date`` line / banner, else ``--at`` / mtime.
    A series seen again, or a ``# HELP`` of a metric already read, starts a new scrape. Blank
    sentinels (≥ 0x7ffffff0, NaN) are NULL. MIG instance series (``GPU_I_ID``) are skipped.
    ``DCGM_FI_DEV_XID_ERRORS`` is the *last* Xid of a GPU: a ``gpu_xids`` row is written when it
    becomes non-zero or changes (bus id in the kernel's ``dddd:bb:dd`` form).

    >>> from postmortem.parsers.base import run_parser
    >>> text = '''# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).
    ... DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-1",pci_bus_id="00000000:1A:00.0",Hostname="n1"} 43 1700000000000
    ... DCGM_FI_DEV_FB_FREE{gpu="0",UUID="GPU-1",pci_bus_id="00000000:1A:00.0",Hostname="n1"} 81000 1700000000000
    ... DCGM_FI_DEV_FB_RESERVED{gpu="0",UUID="GPU-1",pci_bus_id="00000000:1A:00.0",Hostname="n1"} 9223372036854775794 1700000000000'''
    >>> [s] = run_parser(DcgmExporter(), text)[0]
    >>> (s.host, s.gpu_index, s.mem_used_mib, s.mem_free_mib, s.mem_reserved_mib, s.ts.isoformat())
    ('n1', 0, 43, 81000, None, '2023-11-14T22:13:20+00:00')
    """

    name = "dcgm-exporter"
    description = "dcgm-exporter Prometheus metrics text (one or many scrapes)"
    tables = ("gpu_samples", "gpu_xids")

    def sniff(self, head: Head) -> int:
        hits = sum(1 for ln in head.lines if ln.startswith(("DCGM_FI_", "# HELP DCGM_", "# TYPE DCGM_")))
        return 95 if hits else 0

    def parse(self, chunks: Iterable[LineChunk], ctx: ParseContext) -> Iterator[Output]:
        reader = _Reader(ctx)
        for chunk in chunks:
            for line_no, line in chunk:
                yield from reader.line(line_no, line)
        yield from _flush(reader.gpus, ctx)


class _Reader:
    """One file's state: the GPUs of the scrape being read, the metrics it has, the last Xids."""

    def __init__(self, ctx: ParseContext) -> None:
        self.ctx = ctx
        self.snaps = Snapshots(ctx)
        self.gpus: dict[tuple[str, ...], _Gpu] = {}
        self.seen_metrics: set[str] = set()
        self.last_xid: dict[tuple[str | None, str | None, int | None], int] = {}
        self.scrape: Stamp | None = None
        self.skipped_mig = False

    def _next_scrape(self) -> Iterator[Output]:
        yield from _flush(self.gpus, self.ctx)
        self.seen_metrics.clear()

    def line(self, line_no: int, line: str) -> Iterator[Output]:
        ctx = self.ctx
        if line.startswith("#"):
            yield from self._comment(line)
            return
        if not line.startswith("DCGM_"):
            yield from self._other(line_no, line)
            return
        m = _LINE.fullmatch(line)
        if m is None:
            yield ctx.issue(line_no, "unreadable metrics line", line)
            return
        metric, label_text, value_text, ts_ms = m.groups()
        column = METRICS.get(metric)
        if column is None and metric != XID_METRIC:
            ctx.ignored()
            return
        labels = dict(_LABEL.findall(label_text or ""))
        if labels.get("GPU_I_ID"):
            self._mig()
            return
        if ts_ms is not None:
            stamp = Stamp(epoch_seconds(int(ts_ms) / 1000), ts_ms, None)
        else:
            if self.scrape is None:
                self.scrape = self.snaps.take()
            stamp = self.scrape
        value = _value(value_text)
        if column is None:  # the Xid metric
            yield from self._xid(line_no, labels, stamp, value)
            return
        yield from self._sample(line_no, metric, column, labels, stamp, ts_ms, value)

    def _comment(self, line: str) -> Iterator[Output]:
        if line.startswith(("# HELP ", "# TYPE ")):
            metric = line[7:].split(" ", 1)[0]
            if metric in self.seen_metrics:
                yield from self._next_scrape()
                self.scrape = None
        self.ctx.ignored()

    def _other(self, line_no: int, line: str) -> Iterator[Output]:
        ctx = self.ctx
        got = self.snaps.feed(line_no, line)
        if got is not False:
            if self.snaps.pending is not None:
                yield from self._next_scrape()
                self.scrape = None
            if got is not True:
                yield got
            return
        if line[:1].isalpha() and _LINE.fullmatch(line):
            ctx.ignored()  # another exporter's metric
            return
        yield ctx.issue(line_no, "not a Prometheus metrics line", line)

    def _mig(self) -> None:
        if not self.skipped_mig:
            self.skipped_mig = True
            self.ctx.note("dcgm-exporter: MIG instance series (GPU_I_ID) skipped")
        self.ctx.ignored()

    def _xid(
        self, line_no: int, labels: dict[str, str], stamp: Stamp, value: float | None
    ) -> Iterator[Output]:
        g = _Gpu(line_no, labels, stamp, self.ctx.host)
        key3 = (g.uuid, g.bus, g.index)
        code = int(value) if value is not None else 0
        self.ctx.parsed()
        if code and self.last_xid.get(key3) != code:
            msg = labels.get("err_msg") or f"{XID_METRIC}={code} (dcgm-exporter: last Xid of the GPU)"
            yield GpuXid(
                line_no, stamp.ts, stamp.raw, stamp.inferred, None, g.host, xid_bus_id(g.bus), code,
                None, None, msg,
            )  # fmt: skip
        self.last_xid[key3] = code

    def _sample(
        self,
        line_no: int,
        metric: str,
        column: str,
        labels: dict[str, str],
        stamp: Stamp,
        ts_ms: str | None,
        value: float | None,
    ) -> Iterator[Output]:
        key = (
            labels.get("Hostname") or labels.get("hostname") or "",
            labels.get("gpu", ""),
            labels.get("UUID") or labels.get("uuid") or "",
            ts_ms or "",
        )
        gpu = self.gpus.get(key)
        if gpu is not None and column in gpu.values:
            yield from self._next_scrape()  # the same series again: a new scrape
            if ts_ms is None:
                self.scrape = self.snaps.take()
                stamp = self.scrape
            gpu = None
        if gpu is None:
            gpu = self.gpus[key] = _Gpu(line_no, labels, stamp, self.ctx.host)
        self.seen_metrics.add(metric)
        gpu.values[column] = value
        self.ctx.parsed()


def _flush(gpus: dict[tuple[str, ...], _Gpu], ctx: ParseContext) -> Iterator[Output]:
    for g in sorted(gpus.values(), key=lambda g: g.line_no):
        v = g.values

        def i(col: str, v: dict[str, float | None] = v) -> int | None:
            x = v.get(col)
            return round(x) if x is not None else None

        st = g.stamp
        yield GpuSample(
            g.line_no, st.ts, st.raw, st.inferred, g.host, g.index, g.uuid, g.bus, g.name,
            i("mem_used_mib"), i("mem_total_mib"), i("mem_free_mib"), i("mem_reserved_mib"),
            v.get("util_gpu_pct"), v.get("util_mem_pct"), v.get("temp_c"), v.get("power_w"), None, g.driver,
        )  # fmt: skip
    gpus.clear()
