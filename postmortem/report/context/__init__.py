"""Typed report contexts: what the templates see, built by job (types, timeline, memory, incident,
index).

Every field is documented in ``docs/report-context.md`` (a test checks that the two agree);
``--format json`` writes the same objects as JSON. All text that came from logs has passed
through the :class:`~postmortem.report.redact.Redactor` before it lands here; escaping for
Markdown happens in the templates (``| cell``, ``| code``, ``| inline``).
"""

from __future__ import annotations

from .common import Sources, as_jsonable, gib_kb, gib_mib, local_text, utc_text, window_text
from .incident import COVER_AFTER, COVER_TAIL, action_items, incident_report, source_rows, sources_near
from .index import slow_load_rows, undated_kill_rows, xid_rows
from .memory import memory_facts, memory_rows, memory_rows_note, silent_text
from .timeline import server_origin, timeline_rows
from .types import (
    ConsumerRow,
    ContainerRow,
    GapRow,
    Impact,
    IncidentReport,
    IndexReport,
    IndexRow,
    IssueReasonRow,
    LoadRow,
    LoadSummary,
    MemoryRow,
    OffsetRow,
    Quote,
    RecommendationRow,
    SlowLoadRow,
    SourceRow,
    TimelineRow,
    UndatedKillRow,
    VictimRow,
    XidRow,
)

__all__ = [
    "COVER_AFTER",
    "COVER_TAIL",
    "ConsumerRow",
    "ContainerRow",
    "GapRow",
    "Impact",
    "IncidentReport",
    "IndexReport",
    "IndexRow",
    "IssueReasonRow",
    "LoadRow",
    "LoadSummary",
    "MemoryRow",
    "OffsetRow",
    "Quote",
    "RecommendationRow",
    "SlowLoadRow",
    "SourceRow",
    "Sources",
    "TimelineRow",
    "UndatedKillRow",
    "VictimRow",
    "XidRow",
    "action_items",
    "as_jsonable",
    "gib_kb",
    "gib_mib",
    "incident_report",
    "local_text",
    "memory_facts",
    "memory_rows",
    "memory_rows_note",
    "server_origin",
    "silent_text",
    "slow_load_rows",
    "source_rows",
    "sources_near",
    "timeline_rows",
    "undated_kill_rows",
    "utc_text",
    "window_text",
    "xid_rows",
]
