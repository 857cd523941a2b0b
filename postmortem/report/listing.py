"""``postmortem incidents`` as a table people read: whole UTC seconds, causes in words,
downtime as a duration (``--format json`` keeps the stored values)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..analysis.summary import CAUSE_LABELS
from ..query import QueryResult
from ..text.formats import duration

#: the columns of the table, and how each value is shown
COLUMNS = (
    "incident_id",
    "killed_utc",
    "host",
    "unit",
    "cause",
    "victim_pid",
    "victim_comm",
    "victims",
    "downtime",
    "recovery_unit",
)


def _row(r: dict[str, Any]) -> tuple[Any, ...]:
    ts = r["ts"]
    return (
        r["incident_id"],
        ts.strftime("%Y-%m-%d %H:%M:%S") if isinstance(ts, datetime) else ts,
        r["host"],
        r["unit"],
        CAUSE_LABELS.get(r["cause"], r["cause"]),
        r["victim_pid"],
        r["victim_comm"],
        r["victims"],
        duration(r["downtime_s"]) if r["downtime_s"] is not None else "not restored",
        # (restored by a server whose log no source ties to a unit: its report names the file)
        r["recovery_unit"] or ("a server of no known unit" if r["downtime_s"] is not None else None),
    )


def incident_table(result: QueryResult) -> QueryResult:
    """The rows of the ``incidents_list`` query, readable."""
    rows = [_row(dict(zip(result.columns, row, strict=True))) for row in result.rows]
    return QueryResult(list(COLUMNS), rows)
