"""NVIDIA GPU telemetry: nvidia-smi (CSV, table, ``-q``, ``-q -x``), dmon/pmon, dcgm-exporter.

Every parser of this package registers here (the registry imports ``postmortem.parsers.nvidia``).
Shared conventions (null tokens, MiB integers, the canonical bus id, snapshot times, failure
outputs) live in :mod:`postmortem.parsers.nvidia.common`; ``docs/schema_parts/nvidia.md``
documents the columns and the ``gpu_events.kind`` values.
"""

from __future__ import annotations

from .. import register
from .common import normalise_bus_id, xid_bus_id
from .dcgm import DcgmExporter
from .monitor import NvidiaDmon, NvidiaPmon
from .qtext import NvidiaSmiQ
from .query_csv import NvidiaSmiCsv
from .qxml import NvidiaSmiXml
from .table import NvidiaSmiTable

__all__ = [
    "DcgmExporter",
    "NvidiaDmon",
    "NvidiaPmon",
    "NvidiaSmiCsv",
    "NvidiaSmiQ",
    "NvidiaSmiTable",
    "NvidiaSmiXml",
    "normalise_bus_id",
    "xid_bus_id",
]

for _cls in (NvidiaSmiCsv, NvidiaSmiTable, NvidiaSmiQ, NvidiaSmiXml, NvidiaDmon, NvidiaPmon, DcgmExporter):
    register(_cls)
