"""Removing unfinished loads (no Arrow needed: opening a store stays cheap)."""

from __future__ import annotations

from .db import Store
from .parts import REGISTRY, native, unregister


def discard_source(store: Store, source_id: int, resume_line: int | None) -> None:
    """Remove the rows of ``source_id`` (an unfinished load, a file replaced): every row, or the
    rows from ``resume_line`` on for a file that was being appended to."""
    for table in store.table_names():
        cols = {c for c, _ in store.columns(table)}
        if "source_id" not in cols or table in ("sources", REGISTRY):
            continue
        if resume_line is not None and resume_line > 1:
            if "line_no" in cols:
                store.execute(
                    f"DELETE FROM {native(store, table)} WHERE source_id = ? AND line_no >= ?",  # noqa: S608
                    [source_id, resume_line],
                ).fetchall()
        else:
            store.execute(f"DELETE FROM {native(store, table)} WHERE source_id = ?", [source_id]).fetchall()  # noqa: S608
    if resume_line is not None and resume_line > 1:
        store.execute(
            "UPDATE sources SET status = 'complete', resume_line = NULL WHERE source_id = ?", [source_id]
        ).fetchall()
    else:
        # (an unfinished append registered no part: the parts of the lines before it stay)
        unregister(store, source_id)
        store.execute("DELETE FROM sources WHERE source_id = ?", [source_id]).fetchall()


def recover_interrupted(store: Store) -> list[str]:
    """Undo loads that a crash (``kill -9``, power loss) left unfinished; returns their paths.

    The next ingest of those files then does them again, so each file ends up fully in or not in.
    """
    rows = store.fetchall("SELECT source_id, path, resume_line FROM sources WHERE status = 'loading'")
    if not rows:
        return []
    with store.transaction():
        for sid, _path, resume in rows:
            discard_source(store, int(sid), resume)
    return [str(r[1]) for r in rows]
