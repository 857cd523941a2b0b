"""Analysis: pure functions over query results that fill the derived tables.

``rebuild`` recomputes ``service_loads``, ``incidents``, ``incident_evidence`` and
``recommendations`` from the ingested tables; ``build`` calls it after every ingest.
"""

from __future__ import annotations

from ..store.db import Store, ident


def rebuild(store: Store, *, window_s: float = 1800.0) -> None:
    """Recompute every derived table (filled in by the correlation stage)."""
    del window_s
    with store.transaction():
        for table in ("service_loads", "incidents", "incident_evidence", "recommendations"):
            store.execute(f"DELETE FROM {ident(table)}")  # noqa: S608
