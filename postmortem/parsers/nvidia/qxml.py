"""``nvidia-smi -q -x`` XML (DTD v10–v13), alone or many documents in one file.

Safety: documents are read with :mod:`xml.parsers.expat` driving an
:class:`xml.etree.ElementTree.TreeBuilder`. Any entity declaration (``<!ENTITY`` in an internal
DTD subset, general or parameter) stops the document before it is expanded: the
``EntityDeclHandler`` raises, so "billion laughs" and external-entity documents are refused
with a parse issue. Parameter-entity parsing is off and no external DTD is ever fetched (no
``ExternalEntityRefHandler``), so ``SYSTEM "nvsmi_device_v13.dtd"`` is just a name. An
undeclared entity reference is an expat error (a parse issue). Memory stays bounded: each
``<gpu>`` element is turned into records when it closes and then cleared.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from xml.etree.ElementTree import Element, TreeBuilder
from xml.parsers import expat

from ...records import GpuProcess, GpuSample
from ..base import Head, LineChunk, Output, ParseContext, Parser
from .common import (
    Snapshots,
    Stamp,
    ctime_stamp,
    driver_text,
    error_event,
    integer,
    mib,
    normalise_bus_id,
    number,
    text_value,
)

_POWER_PATHS = (
    "gpu_power_readings/average_power_draw",
    "gpu_power_readings/power_draw",
    "power_readings/power_draw",
    "power_readings/average_power_draw",
    "gpu_power_readings/instant_power_draw",
    "power_readings/instant_power_draw",
)
_ERROR_PATHS = (
    "fb_memory_usage/total", "fb_memory_usage/used", "fb_memory_usage/free", "fb_memory_usage/reserved",
    "utilization/gpu_util", "utilization/memory_util", "temperature/gpu_temp", *_POWER_PATHS[:3],
)  # fmt: skip


class _Refused(Exception):
    pass


class _Doc:
    """One XML document being read."""

    def __init__(self, first_line: int) -> None:
        self.first_line = first_line
        self.lines = 0
        self.records = 0
        self.out: list[Output] = []
        self.builder = TreeBuilder()
        self.depth = 0
        self.closed = False
        self.stamp: Stamp | None = None
        self.driver: str | None = None
        self.kmd: str | None = None
        p = expat.ParserCreate()
        p.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
        p.EntityDeclHandler = self._entity
        p.StartElementHandler = self._start
        p.EndElementHandler = self._end
        p.CharacterDataHandler = self.builder.data
        self.parser = p
        self.on_gpu: object = None

    @staticmethod
    def _entity(*_args: object) -> None:
        raise _Refused("XML document declares entities: refused (entity expansion is disabled)")

    def _start(self, name: str, attrs: dict[str, str]) -> None:
        self.depth += 1
        if name == "gpu" or name == "process_info":
            attrs = dict(attrs)
            attrs["_line"] = str(self.first_line + self.parser.CurrentLineNumber - 1)
        self.builder.start(name, attrs)

    def _end(self, name: str) -> None:
        self.depth -= 1
        elem = self.builder.end(name)
        if self.depth == 1:
            if name == "timestamp":
                self.stamp_text = (elem.text or "").strip()
            elif name == "driver_version":
                self.driver = driver_text(elem.text or "")
            elif name == "kmd_version":
                self.kmd = driver_text(elem.text or "")
            elif name == "gpu":
                assert callable(self.on_gpu)
                self.on_gpu(self, elem)
                elem.clear()
        elif self.depth == 0:
            self.closed = True

    stamp_text: str = ""


def _t(elem: Element, path: str) -> str:
    found = elem.find(path)
    if found is None or found.text is None:
        return ""
    return found.text.strip()


class NvidiaSmiXml(Parser):
    """``nvidia-smi -q -x`` → ``gpu_samples`` (one per ``<gpu>``) and ``gpu_processes``.

    Elements are read by name (``fb_memory_usage/{total,reserved,used,free}``,
    ``utilization/{gpu_util,memory_util}``, ``temperature/gpu_temp``, power from
    ``gpu_power_readings/average_power_draw`` (v13) or ``power_readings/power_draw`` (≤v12),
    ``processes/process_info``); a missing element is NULL, whatever the DTD version.
    ``<timestamp>`` is local (``--tz``); several documents in one file (a cron job, with ``date``
    lines or banners between) each take their own time; a document without one takes the
    ``date`` line before it, else ``--at`` / mtime. No GPU index is printed: ``gpu_index`` is
    NULL. Lines of a document count as parsed when it yielded records, else ignored. See the
    module docstring for the entity-expansion refusal.

    >>> from postmortem.parsers.base import run_parser
    >>> doc = '''<?xml version="1.0" ?>
    ... <!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v13.dtd">
    ... <nvidia_smi_log><timestamp>Thu Jan 15 10:00:00 2026</timestamp><driver_version>595.00</driver_version>
    ... <gpu id="00000000:06:00.0"><uuid>GPU-1</uuid>
    ... <fb_memory_usage><total>20475 MiB</total><reserved>460 MiB</reserved><used>3534 MiB</used><free>16482 MiB</free></fb_memory_usage>
    ... <processes><process_info><pid>4242</pid><type>C</type><process_name>python3</process_name><used_memory>410 MiB</used_memory></process_info></processes>
    ... </gpu></nvidia_smi_log>'''
    >>> out, ctx = run_parser(NvidiaSmiXml(), doc)
    >>> s, p = out
    >>> (s.bus_id, s.mem_used_mib, s.mem_total_mib, s.mem_reserved_mib, s.driver_version, p.pid, p.used_mib)
    ('00000000:06:00.0', 3534, 20475, 460, '595.00', 4242, 410)
    >>> bomb = '<?xml version="1.0"?>\\n<!DOCTYPE l [<!ENTITY a "aaaa">]>\\n<nvidia_smi_log>&a;</nvidia_smi_log>'
    >>> [o.reason for o in run_parser(NvidiaSmiXml(), bomb)[0]][:1]
    ['XML document declares entities: refused (entity expansion is disabled)']
    """

    name = "nvidia-smi-xml"
    description = "nvidia-smi -q -x XML (DTD v10-v13), concatenated documents"
    tables = ("gpu_samples", "gpu_processes", "gpu_events")

    def sniff(self, head: Head) -> int:
        text = head.text
        if "<nvidia_smi_log" in text or ("<?xml" in text and "nvsmi_device" in text):
            starts = ("<?xml", "<nvidia_smi_log", "<!DOCTYPE nvidia_smi_log")
            return 95 if any(ln.lstrip().startswith(starts) for ln in head.lines) else 40
        return 0

    def parse(self, chunks: Iterable[LineChunk], ctx: ParseContext) -> Iterator[Output]:
        snaps = Snapshots(ctx)
        doc: _Doc | None = None
        broken = False  # inside a document that failed: skip to its end
        for chunk in chunks:
            for line_no, line in chunk:
                if doc is None:
                    s = line.lstrip()
                    if s.startswith("<?xml") or (
                        not broken and s.startswith(("<nvidia_smi_log", "<!DOCTYPE nvidia_smi_log"))
                    ):
                        broken = False
                        doc = self._open(line_no, ctx, snaps)
                    elif broken:
                        if "</nvidia_smi_log>" in line:
                            broken = False
                        yield ctx.issue(line_no, "inside an unreadable XML document", line)
                        continue
                    else:
                        got = snaps.feed(line_no, line)
                        if got is True:
                            continue
                        if got is not False:
                            yield got
                            continue
                        yield ctx.issue(line_no, "not part of an nvidia-smi XML document", line)
                        continue
                doc.lines += 1
                try:
                    doc.parser.Parse(line + "\n", False)
                except (expat.ExpatError, _Refused) as exc:
                    doc.lines -= 1
                    yield from self._close(doc, ctx)
                    reason = str(exc) if isinstance(exc, _Refused) else f"invalid XML: {exc}"
                    yield ctx.issue(line_no, reason, line)
                    broken = "</nvidia_smi_log>" not in line
                    doc = None
                    continue
                if doc.out:
                    yield from doc.out
                    doc.out.clear()
                if doc.closed:
                    yield from self._close(doc, ctx)
                    doc = None
        if doc is not None:
            last_line = doc.first_line + doc.lines - 1
            yield from self._close(doc, ctx)
            yield ctx.issue(
                last_line,
                "XML document not closed (truncated?): GPUs read so far kept",
                "",
                unparsed=False,
            )

    def _open(self, line_no: int, ctx: ParseContext, snaps: Snapshots) -> _Doc:
        doc = _Doc(line_no)
        fallback = snaps.take()

        def on_gpu(d: _Doc, elem: Element) -> None:
            if d.stamp is None:
                d.stamp = ctime_stamp(d.stamp_text, ctx) if d.stamp_text else None
                if d.stamp is None:
                    d.stamp = fallback
            produced = list(self._gpu(elem, d, ctx))
            d.records += len(produced)
            d.out.extend(produced)

        doc.on_gpu = on_gpu
        return doc

    @staticmethod
    def _close(doc: _Doc, ctx: ParseContext) -> Iterator[Output]:
        if doc.out:
            yield from doc.out
            doc.out.clear()
        if doc.records:
            ctx.parsed(doc.lines)
        else:
            ctx.ignored(doc.lines)
        doc.lines = 0

    @staticmethod
    def _gpu(elem: Element, doc: _Doc, ctx: ParseContext) -> Iterator[Output]:
        st = doc.stamp
        assert st is not None
        line_no = int(elem.get("_line", str(doc.first_line)))
        bus = normalise_bus_id(elem.get("id")) or normalise_bus_id(_t(elem, "pci/pci_bus_id"))
        uuid = text_value(_t(elem, "uuid"))
        power = None
        for path in _POWER_PATHS:
            power = number(_t(elem, path))
            if power is not None:
                break
        yield GpuSample(
            line_no, st.ts, st.raw, st.inferred, ctx.host, None, uuid, bus,
            text_value(_t(elem, "product_name")),
            mib(_t(elem, "fb_memory_usage/used")), mib(_t(elem, "fb_memory_usage/total")),
            mib(_t(elem, "fb_memory_usage/free")), mib(_t(elem, "fb_memory_usage/reserved")),
            number(_t(elem, "utilization/gpu_util")), number(_t(elem, "utilization/memory_util")),
            number(_t(elem, "temperature/gpu_temp")), power,
            text_value(_t(elem, "performance_state")), doc.driver or doc.kmd,
        )  # fmt: skip
        for proc in elem.iterfind("processes/process_info"):
            yield GpuProcess(
                int(proc.get("_line", str(line_no))), st.ts, st.raw, st.inferred, ctx.host, None, uuid, bus,
                integer(_t(proc, "pid")), text_value(_t(proc, "process_name")), mib(_t(proc, "used_memory")),
                False, text_value(_t(proc, "type")),
            )  # fmt: skip
        bad = [p for p in _ERROR_PATHS if "Unknown Error" in _t(elem, p)]
        if bad:
            yield error_event(line_no, st, ctx.host, bus, f"GPU {bus}", bad)
