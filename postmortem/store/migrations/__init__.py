"""The store's schema migrations: ``NNN_name.sql`` files applied in order (by ``store.db``).

Listing them needs no DuckDB, so a command that only compares versions does not load it."""

from __future__ import annotations

import re
from importlib import resources


def all_migrations() -> list[tuple[int, str, str]]:
    """(version, name, sql) for every ``NNN_name.sql`` here, in order."""
    out = []
    for entry in resources.files(__package__).iterdir():
        m = re.fullmatch(r"(\d{3})_(\w+)\.sql", entry.name)
        if m:
            out.append((int(m.group(1)), m.group(2), entry.read_text(encoding="utf-8")))
    return sorted(out)


def latest_version() -> int:
    """The highest version here (from the files' names: nothing is read)."""
    found = (re.fullmatch(r"(\d{3})_\w+\.sql", e.name) for e in resources.files(__package__).iterdir())
    return max(int(m.group(1)) for m in found if m)
