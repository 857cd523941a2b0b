"""The store's schema migrations: ``NNN_name.sql`` files applied in order (by ``store.db``).

Listing them needs no DuckDB, so a command that only compares versions does not load it."""

from __future__ import annotations

import re
from importlib import resources
from importlib.resources.abc import Traversable

from ...lazyre import lazy_re

_NAME = lazy_re(r"(\d{3})_(\w+)\.sql")


def _named() -> list[tuple[re.Match[str], Traversable]]:
    return [(m, e) for e in resources.files(__package__).iterdir() if (m := _NAME.fullmatch(e.name))]


def all_migrations() -> list[tuple[int, str, str]]:
    """(version, name, sql) for every ``NNN_name.sql`` here, in order."""
    return sorted((int(m.group(1)), m.group(2), e.read_text(encoding="utf-8")) for m, e in _named())


def latest_version() -> int:
    """The highest version here (from the files' names: nothing is read)."""
    return max(int(m.group(1)) for m, _ in _named())
