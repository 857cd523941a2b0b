"""``nvidia-smi --query-gpu`` CSV loops: ``-l`` (header once), ``nounits``, and a cron loop of
``date`` + one query per snapshot (no ``timestamp`` field: the ``date`` line dates the rows).

Formats follow /work/shared/reference/nvidia.md §1 (``", "`` separator, ``field [unit]`` header
cells, ``YYYY/MM/DD HH:MM:SS.mmm`` local time, ``date``'s C-locale default
``%a %b %e %H:%M:%S %Z %Y``).

>>> from datetime import UTC, datetime
>>> t = datetime(2026, 1, 15, 10, 0, 0, 123000, tzinfo=UTC)
>>> g = Gpus(["GPU-a"], 143771)
>>> csv_loop([t], g, lambda i, ts: 32362, "loop", "UTC")
['timestamp, index, uuid, memory.total [MiB], memory.used [MiB], memory.free [MiB], utilization.gpu [%]', '2026/01/15 10:00:00.123, 0, GPU-a, 143771 MiB, 32362 MiB, 111408 MiB, 97 %']
>>> csv_loop([t], g, lambda i, ts: 1, "date-lines", "UTC")[:2]
['Thu Jan 15 10:00:00 UTC 2026', 'index, uuid, memory.used [MiB], memory.total [MiB]']
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo


@dataclass(frozen=True)
class Gpus:
    uuids: list[str]
    total_mib: int


def uuids(host: str, n: int) -> list[str]:
    out = []
    for i in range(n):
        h = hashlib.md5(f"{host}/{i}".encode()).hexdigest()
        out.append(f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}")
    return out


def csv_loop(
    times: list[datetime], gpus: Gpus, used: Callable[[int, datetime], int], kind: str, zone: str
) -> list[str]:
    """The file's lines: one snapshot per time in ``times``, one row per GPU."""
    tz = ZoneInfo(zone)
    out: list[str] = []
    units = kind != "nounits"

    def u(v: int | str, unit: str) -> str:
        return f"{v} {unit}" if units else f"{v}"

    if kind in ("loop", "nounits"):
        out.append(
            "timestamp, index, uuid, "
            + (
                "memory.total [MiB], memory.used [MiB], memory.free [MiB], utilization.gpu [%]"
                if units
                else "memory.total, memory.used, memory.free, utilization.gpu"
            )
        )
    for ts in times:
        local = ts.astimezone(tz)
        if kind == "date-lines":
            out.append(f"{local.strftime('%a %b')} {local.day:2d} {local.strftime('%H:%M:%S %Z %Y')}")
            out.append("index, uuid, memory.used [MiB], memory.total [MiB]")
        for i, uuid in enumerate(gpus.uuids):
            mib = used(i, ts)
            if kind == "date-lines":
                out.append(f"{i}, {uuid}, {mib} MiB, {gpus.total_mib} MiB")
                continue
            stamp = local.strftime("%Y/%m/%d %H:%M:%S") + f".{local.microsecond // 1000:03d}"
            util = 97 if mib > 1000 else 0
            free = gpus.total_mib - mib - 1
            out.append(
                f"{stamp}, {i}, {uuid}, {u(gpus.total_mib, 'MiB')}, {u(mib, 'MiB')}, {u(free, 'MiB')}, {u(util, '%')}"
            )
    return out
