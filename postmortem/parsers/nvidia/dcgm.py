"""dcgm-exporter Prometheus text (``curl :9400/metrics`` saved to a file, once or many times)."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator

from ...records import GpuSample, GpuXid
from ...timeutil import epoch_seconds
from ..base import Head, LineChunk, Output, ParseContext, Parser
from .common import Snapshots, Stamp, normalise_bus_id, xid_bus_id

_LINE = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+(-?\d+))?\s*")
_LABEL = re.compile(r'([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"')

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

    def parse(self, chunks: Iterable[LineChunk], ctx: ParseContext) -> Iterator[Output]:  # noqa: C901 - 22 > 15: listed in docs/dev/README.md
        snaps = Snapshots(ctx)
        gpus: dict[tuple[str, ...], _Gpu] = {}
        seen_metrics: set[str] = set()
        last_xid: dict[tuple[str | None, str | None, int | None], int] = {}
        scrape: Stamp | None = None
        skipped_mig = False
        for chunk in chunks:
            for line_no, line in chunk:
                if line.startswith("#"):
                    if line.startswith(("# HELP ", "# TYPE ")):
                        metric = line[7:].split(" ", 1)[0]
                        if metric in seen_metrics:
                            yield from self._flush(gpus, ctx)
                            seen_metrics.clear()
                            scrape = None
                    ctx.ignored()
                    continue
                if not line.startswith("DCGM_"):
                    got = snaps.feed(line_no, line)
                    if got is not False:
                        if snaps.pending is not None:
                            yield from self._flush(gpus, ctx)
                            seen_metrics.clear()
                            scrape = None
                        if got is not True:
                            yield got
                        continue
                    if line[:1].isalpha() and _LINE.fullmatch(line):
                        ctx.ignored()  # another exporter's metric
                        continue
                    yield ctx.issue(line_no, "not a Prometheus metrics line", line)
                    continue
                m = _LINE.fullmatch(line)
                if m is None:
                    yield ctx.issue(line_no, "unreadable metrics line", line)
                    continue
                metric, label_text, value_text, ts_ms = m.groups()
                column = METRICS.get(metric)
                if column is None and metric != XID_METRIC:
                    ctx.ignored()
                    continue
                labels = dict(_LABEL.findall(label_text or ""))
                if labels.get("GPU_I_ID"):
                    if not skipped_mig:
                        skipped_mig = True
                        ctx.note("dcgm-exporter: MIG instance series (GPU_I_ID) skipped")
                    ctx.ignored()
                    continue
                if ts_ms is not None:
                    stamp = Stamp(epoch_seconds(int(ts_ms) / 1000), ts_ms, None)
                else:
                    if scrape is None:
                        scrape = snaps.take()
                    stamp = scrape
                value = _value(value_text)
                if metric == XID_METRIC:
                    g = _Gpu(line_no, labels, stamp, ctx.host)
                    key3 = (g.uuid, g.bus, g.index)
                    code = int(value) if value is not None else 0
                    ctx.parsed()
                    if code and last_xid.get(key3) != code:
                        msg = (
                            labels.get("err_msg")
                            or f"{XID_METRIC}={code} (dcgm-exporter: last Xid of the GPU)"
                        )
                        yield GpuXid(
                            line_no, stamp.ts, stamp.raw, stamp.inferred, None, g.host, xid_bus_id(g.bus), code,
                            None, None, msg,
                        )  # fmt: skip
                    last_xid[key3] = code
                    continue
                key = (
                    labels.get("Hostname") or labels.get("hostname") or "",
                    labels.get("gpu", ""),
                    labels.get("UUID") or labels.get("uuid") or "",
                    ts_ms or "",
                )
                gpu = gpus.get(key)
                if gpu is not None and column in gpu.values:
                    yield from self._flush(gpus, ctx)  # the same series again: a new scrape
                    seen_metrics.clear()
                    if ts_ms is None:
                        scrape = snaps.take()
                        stamp = scrape
                    gpu = None
                if gpu is None:
                    gpu = gpus[key] = _Gpu(line_no, labels, stamp, ctx.host)
                seen_metrics.add(metric)
                gpu.values[column] = value  # type: ignore[index]
                ctx.parsed()
        yield from self._flush(gpus, ctx)

    @staticmethod
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
