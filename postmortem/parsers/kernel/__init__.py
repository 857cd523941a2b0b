"""Kernel sources: ``dmesg`` in every time format, /dev/kmsg, and the message-level
:class:`KernelStream` that the journal and syslog parsers route kernel messages through.

Tables: ``kernel_messages`` (every kernel message), ``oom_kills`` and ``oom_tasks`` (OOM-killer
records from 2.6.32 to 6.x, see :mod:`.oom`), ``gpu_xids`` (NVIDIA ``NVRM: Xid`` lines).
"""

from __future__ import annotations

from .dmesg import DmesgParser, KmsgParser, split_prefix
from .oom import OomAssembler, scope_of_prefix, unit_of
from .stream import KernelStream, normalise_bus_id, unescape_kmsg

__all__ = [
    "DmesgParser",
    "KernelStream",
    "KmsgParser",
    "OomAssembler",
    "normalise_bus_id",
    "scope_of_prefix",
    "split_prefix",
    "unescape_kmsg",
    "unit_of",
]
