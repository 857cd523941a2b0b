"""Pieces shared by the NVIDIA parsers: cell values, bus ids, snapshot times, failure outputs.

Conventions (documented in ``docs/schema_parts/nvidia.md``):

* every "no value" token (``[N/A]``, ``N/A``, ``[Not Supported]``, ``[Insufficient
  Permissions]``, ``[Unknown Error]``, ``-``, ``ERR!``, DCGM blank sentinels, truncated
  ``13583...`` cells, empty cells) is ``None`` — never 0;
* MiB are integers (nvidia-smi prints ceilings; MiB = 2^20 bytes even where a header says MB);
* bus ids are stored in nvidia-smi's canonical form ``00000000:18:00.0`` (8-hex domain, upper
  case, with the function) — :func:`normalise_bus_id`; ``gpu_xids`` rows use the kernel form
  ``0000:18:00`` — :func:`xid_bus_id`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache

from ...lazyre import lazy_re
from ...records import GpuEvent
from ...timeutil import Inferred, epoch_seconds, localize, name_stamp, parse_ctime, parse_iso, zone_for_word
from ..base import ParseContext

# --------------------------------------------------------------------------- bus ids

_BUS_RE = lazy_re(
    r"(?:PCI:|GPU ?)?(?:([0-9A-Fa-f]{1,8}):)?([0-9A-Fa-f]{1,2}):([0-9A-Fa-f]{1,2})(?:\.([0-7]))?"
)


@lru_cache(maxsize=4096)
def normalise_bus_id(text: str | None) -> str | None:
    """Any printed PCI bus id → ``00000000:9B:00.0`` (the form nvidia-smi and DCGM print).

    Accepts nvidia-smi/DCGM ``00000000:9B:00.0``, lspci ``0000:9b:00.0``, kernel Xid
    ``PCI:0000:9b:00`` (no function: ``.0``), the ``GPU0000:03:00.0`` of nvidia-smi's error
    output and a bare ``9b:00.0`` (domain 0). Anything else → ``None``.

    >>> [normalise_bus_id(b) for b in ("PCI:0000:9b:00", "0000:9b:00.0", "00000000:9B:00.0")]
    ['00000000:9B:00.0', '00000000:9B:00.0', '00000000:9B:00.0']
    >>> normalise_bus_id("GPU0000:03:00.0"), normalise_bus_id("18:00.1"), normalise_bus_id("gpu-0")
    ('00000000:03:00.0', '00000000:18:00.1', None)
    """
    if not text:
        return None
    m = _BUS_RE.fullmatch(text.strip())
    if m is None:
        return None
    domain = int(m.group(1) or "0", 16)
    return f"{domain:08X}:{int(m.group(2), 16):02X}:{int(m.group(3), 16):02X}.{m.group(4) or '0'}"


def xid_bus_id(text: str | None) -> str | None:
    """Any printed bus id → the kernel Xid form ``dddd:bb:dd`` (lower case, no function) that
    ``gpu_xids.bus_id`` holds.

    >>> xid_bus_id("00000000:9B:00.0"), xid_bus_id("PCI:0000:9b:00")
    ('0000:9b:00', '0000:9b:00')
    """
    canon = normalise_bus_id(text)
    if canon is None:
        return None
    return f"{int(canon[:8], 16):04x}:{canon[9:11].lower()}:{canon[12:14].lower()}"


# --------------------------------------------------------------------------- cells

#: error tokens: NULL in the cell, and a gpu_events row (kind ``unknown_error``)
ERROR_TOKENS = frozenset({"[Unknown Error]", "Unknown Error", "ERR!", "[GPU is lost]", "GPU is lost"})


def is_error(cell: str) -> bool:
    return cell in ERROR_TOKENS


def mib(cell: str) -> int | None:
    """``23028 MiB`` / ``23028`` / ``23028MiB`` → 23028; null tokens and truncated cells → None.

    >>> [mib(c) for c in ("23028 MiB", "7", "803MiB", "[N/A]", "13583...", "-", "1.5 GiB")]
    [23028, 7, 803, None, None, None, None]
    """
    if cell.isdigit():
        return int(cell)
    if cell[-4:] == " MiB" and cell[:-4].isdigit():
        return int(cell[:-4])
    c = cell.strip()
    if c.endswith("MiB"):
        c = c[:-3].rstrip()
    elif c.endswith(" MB"):
        c = c[:-3]
    if c.isdigit():
        return int(c)
    return None


def number(cell: str) -> float | None:
    """A value with an optional unit suffix (``%``, ``W``, ``C``, ``MHz``…) → float, else None.

    >>> [number(c) for c in ("627.40 W", "0 %", "52", "38C", "N/A", "[Not Supported]", "-3 C")]
    [627.4, 0.0, 52.0, 38.0, None, None, -3.0]
    """
    c = cell.strip()
    if not c or (c[0] in "[NE-" and not c[1:2].isdigit()):
        return None
    head, _, unit = c.partition(" ")
    if unit:
        try:
            return float(head)
        except ValueError:
            pass
    cut = len(c)
    while cut and not (c[cut - 1].isdigit()):
        cut -= 1
    if cut == 0:
        return None
    head = c[:cut]
    try:
        return float(head)
    except ValueError:
        return None


def integer(cell: str) -> int | None:
    """``0`` → 0; ``[N/A]``/``-``/``N/A`` → None.

    >>> integer(" 3 "), integer("-"), integer("0x1")
    (3, None, None)
    """
    c = cell.strip()
    if c.isdigit():
        return int(c)
    return None


def text_value(cell: str) -> str | None:
    """A text cell; null tokens → None.

    >>> text_value("NVIDIA H200"), text_value("[N/A]"), text_value("N/A"), text_value(" ")
    ('NVIDIA H200', None, None, None)
    """
    c = cell.strip()
    if not c or c in _NULL_TEXT or (c[0] == "[" and c[-1] == "]"):
        return None
    return c


_NULL_TEXT = frozenset({"N/A", "-", "ERR!", "Unknown Error", "Not Found", "Not Supported"})


def driver_text(cell: str) -> str | None:
    """R610 marks ``Driver Version : 610.57.04 [Deprecated; …]``: keep the version only.

    >>> driver_text("610.57.04 [Deprecated; will be removed in CUDA 14.0. Use KMD Version instead]")
    '610.57.04'
    """
    value = text_value(cell)
    if value is None:
        return None
    return value.split(" [", 1)[0].strip() or None


# --------------------------------------------------------------------------- times


@dataclass(frozen=True, slots=True)
class Stamp:
    """A sample time: UTC value, text as printed, what was inferred."""

    ts: datetime | None
    raw: str | None
    inferred: str | None


NO_STAMP = Stamp(None, None, None)


def context_stamp(ctx: ParseContext) -> Stamp:
    """The time of a snapshot that prints none: ``--at`` ('given'), else a date and time in the
    file's name (``nvidia-smi-20250611-032130.txt``, in ``--tz``: 'filename'), else the file's
    mtime (a copied file's is the copy's)."""
    if ctx.at is not None:
        return Stamp(ctx.at, None, Inferred.GIVEN)
    named = name_stamp(ctx.path, ctx.zone)
    if named is not None:
        return Stamp(named, None, Inferred.FILENAME)
    if ctx.mtime is not None:
        return Stamp(ctx.mtime, None, Inferred.MTIME)
    return NO_STAMP


def ctime_stamp(text: str, ctx: ParseContext) -> Stamp | None:
    """A ctime line (nvidia-smi's, or ``date``'s with a zone word) → Stamp, else None."""
    parsed = parse_ctime(text)
    if parsed is None:
        return None
    naive, word = parsed
    zone = zone_for_word(word)
    raw = text.strip()
    if zone is not None:
        return Stamp(localize(naive.replace(tzinfo=zone), zone), raw, None)
    return Stamp(localize(naive, ctx.zone), raw, Inferred.ZONE)


_ISO_LINE = lazy_re(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:[.,]\d{1,9})?)?(?: ?(?:Z|[+-]\d\d:?\d\d|UTC))?")
_ISO_SEARCH = lazy_re(
    r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:[.,]\d{1,9})?)?(?: ?(?:Z|[+-]\d\d:?\d\d|UTC)(?![\w]))?"
)
_CTIME_SEARCH = lazy_re(
    r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun),? +[A-Za-z0-9]{1,3} +[A-Za-z0-9]{1,3} +\d{1,2}:\d\d:\d\d"
    r"(?: +(?:AM|PM))?(?: +(?:[A-Z]{1,5}|[+-]\d{4}))? +\d{4}"
)


def iso_stamp(text: str, ctx: ParseContext) -> Stamp | None:
    raw = text.strip()
    body = raw.replace(",", ".")
    if body.endswith(" UTC"):
        body = body[:-4] + "+00:00"
    elif body.endswith("UTC"):
        body = body[:-3] + "+00:00"
    aware = parse_iso(body.replace(" +", "+").replace(" -", "-"), None)
    if aware is not None:
        return Stamp(aware, raw, None)
    local = parse_iso(body, ctx.zone)
    if local is None:
        return None
    return Stamp(local, raw, Inferred.ZONE)


def date_line_stamp(line: str, ctx: ParseContext, *, epoch: bool = True) -> Stamp | None:
    """A line that is only a time, as ``date`` (any common format) or nvidia-smi print it.

    >>> from postmortem.parsers.base import ParseContext
    >>> date_line_stamp("Wed Feb  5 14:07:58 UTC 2025", ParseContext()).ts.isoformat()
    '2025-02-05T14:07:58+00:00'
    >>> date_line_stamp("2025-02-05T14:07:58+01:00", ParseContext()).ts.isoformat()
    '2025-02-05T13:07:58+00:00'
    >>> date_line_stamp("1738764478", ParseContext()).ts.isoformat()
    '2025-02-05T14:07:58+00:00'
    >>> date_line_stamp("| 0 |", ParseContext()) is None
    True
    """
    s = line.strip()
    if len(s) < 10 or len(s) > 48:
        return None
    c = s[0]
    if c in "MTWFS":
        return ctime_stamp(s, ctx)
    if c.isdigit():
        if epoch and len(s) == 10 and s.isdigit():
            return Stamp(epoch_seconds(int(s)), s, None)
        if _ISO_LINE.fullmatch(s):
            return iso_stamp(s, ctx)
    return None


_BANNER = lazy_re(r"^\s*([=#*~-])\1{2,}\s*(.*?)\s*\1*\s*$")


def banner_stamp(line: str, ctx: ParseContext) -> Stamp | bool | None:
    """A ``=== … ===`` banner (also ``---``, ``###``, ``***``): its time, ``False`` if it is a
    banner without one, ``None`` if the line is no banner.

    >>> from postmortem.parsers.base import ParseContext
    >>> banner_stamp("=== 2025-02-05 14:07:58 ===", ParseContext()).ts.isoformat()
    '2025-02-05T14:07:58+00:00'
    >>> banner_stamp("===== snapshot =====", ParseContext())
    False
    >>> banner_stamp("==== Wed Feb  5 14:07:58 UTC 2025 ====", ParseContext()).raw
    'Wed Feb  5 14:07:58 UTC 2025'
    """
    m = _BANNER.match(line)
    if m is None:
        return None
    inner = m.group(2)
    hit = _ISO_SEARCH.search(inner)
    if hit:
        return iso_stamp(hit.group(0), ctx) or False
    hit = _CTIME_SEARCH.search(inner)
    if hit:
        return ctime_stamp(hit.group(0), ctx) or False
    return False


# --------------------------------------------------------------------------- failure outputs

_HANDLE = lazy_re(
    r"Unable to determine the device handle for (?:GPU|gpu) ?(?P<bus>[0-9A-Fa-f]{1,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?)?\s*:?\s*(?P<err>.*)$"
)

#: gpu_events.kind values (documented in docs/schema_parts/nvidia.md)
KIND_DEVICE_HANDLE = "device_handle_error"
KIND_GPU_LOST = "gpu_lost"
KIND_NO_DEVICES = "no_devices"
KIND_SMI_FAILED = "smi_failed"
KIND_NVML_INIT = "nvml_init_failed"
KIND_UNKNOWN_ERROR = "unknown_error"


def failure_kind(line: str) -> tuple[str, str | None, str] | None:
    """(kind, bus id, message) of an nvidia-smi failure output line, else None.

    >>> failure_kind("Unable to determine the device handle for GPU0000:03:00.0: Unknown Error")
    ('device_handle_error', '00000000:03:00.0', 'Unable to determine the device handle for GPU0000:03:00.0: Unknown Error')
    >>> failure_kind("Unable to determine the device handle for gpu 0000:b3:00.0: GPU is lost.  Reboot the system to recover this GPU")[:2]
    ('gpu_lost', '00000000:B3:00.0')
    >>> failure_kind("No devices were found")[0], failure_kind("Failed to initialize NVML: Driver/library version mismatch")[0]
    ('no_devices', 'nvml_init_failed')
    """
    if "Unable to determine the device handle" in line:
        i = line.index("Unable to determine the device handle")
        msg = line[i:].strip()
        m = _HANDLE.match(msg)
        bus = normalise_bus_id(m.group("bus")) if m and m.group("bus") else None
        err = m.group("err") if m else msg
        kind = KIND_GPU_LOST if "GPU is lost" in err else KIND_DEVICE_HANDLE
        return kind, bus, msg
    if "No devices were found" in line:
        return KIND_NO_DEVICES, None, line.strip()
    if "NVIDIA-SMI has failed" in line:
        return KIND_SMI_FAILED, None, line[line.index("NVIDIA-SMI has failed") :].strip()
    if "Failed to initialize NVML" in line:
        return KIND_NVML_INIT, None, line[line.index("Failed to initialize NVML") :].strip()
    return None


#: lines nvidia-smi prints after a failure line (nothing more to store)
_FAILURE_TAILS = (
    "NVML library version:",
    "Make sure that the latest NVIDIA driver is installed",
    "Please also try",
)


def is_failure_head(line: str) -> bool:
    """Is ``line`` (stripped) an nvidia-smi failure output, as sniffers see it?"""
    s = line.strip()
    return (
        s.startswith(
            ("Unable to determine the device handle", "NVIDIA-SMI has failed", "Failed to initialize NVML")
        )
        or s == "No devices were found"
    )


class Snapshots:
    """What sits between snapshots in a capture file: blank lines, ``date`` lines, banners and
    failure outputs. Keeps the pending time of the next snapshot.

    ``take()`` returns the time for a snapshot starting now: the last date line or banner time
    seen since the previous snapshot, else ``--at`` / the file's mtime (:func:`context_stamp`).
    """

    __slots__ = ("ctx", "epoch", "last", "pending")

    def __init__(self, ctx: ParseContext, *, epoch: bool = True) -> None:
        self.ctx = ctx
        self.epoch = epoch
        self.pending: Stamp | None = None
        self.last: Stamp | None = None

    def take(self) -> Stamp:
        stamp = self.pending or context_stamp(self.ctx)
        self.pending = None
        self.last = stamp
        return stamp

    def current(self) -> Stamp:
        """The time of an event happening now (pending, else last snapshot's, else context)."""
        return self.pending or self.last or context_stamp(self.ctx)

    def feed(self, line_no: int, line: str) -> GpuEvent | bool:
        """Handle an in-between line: ``True`` (counted, nothing to yield), a ``GpuEvent`` (counted
        parsed), or ``False`` when the line is none of these (the caller must deal with it)."""
        ctx = self.ctx
        s = line.strip()
        if not s:
            ctx.ignored()
            return True
        stamp = date_line_stamp(s, ctx, epoch=self.epoch)
        if stamp is not None:
            self.pending = stamp
            ctx.parsed()
            return True
        b = banner_stamp(s, ctx)
        if b is not None:
            if isinstance(b, Stamp):
                self.pending = b
                ctx.parsed()
            else:
                ctx.ignored()
            return True
        if s.startswith(_FAILURE_TAILS):
            ctx.ignored()  # the second line of a failure output
            return True
        fail = failure_kind(s)
        if fail is not None:
            kind, bus, msg = fail
            if self.pending is not None:  # the failure is the snapshot that date line announced
                self.last, self.pending = self.pending, None
            stamp = self.current()
            ctx.parsed()
            return GpuEvent(line_no, stamp.ts, stamp.raw, stamp.inferred, ctx.host, bus, kind, msg)
        return False

    def event(self, line_no: int, bus: str | None, kind: str, message: str) -> GpuEvent:
        stamp = self.current()
        return GpuEvent(line_no, stamp.ts, stamp.raw, stamp.inferred, self.ctx.host, bus, kind, message)


def error_event(
    line_no: int, stamp: Stamp, host: str | None, bus: str | None, who: str, fields: list[str]
) -> GpuEvent:
    """A ``[Unknown Error]`` cell (or ``ERR!``) on a GPU: its fields could not be read."""
    return GpuEvent(
        line_no,
        stamp.ts,
        stamp.raw,
        stamp.inferred,
        host,
        bus,
        KIND_UNKNOWN_ERROR,
        f"{who}: {', '.join(fields)} unreadable ([Unknown Error])",
    )
