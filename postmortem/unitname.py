"""The unit a log file's name names (no DuckDB, no parser: ingest asks it for every file)."""

from __future__ import annotations

import os
import re

from .lazyre import lazy_re

_DATE = r"[-_.]?(?:20\d\d-?[01]\d-?[0-3]\d)(?:[-_T]?\d{2}:?\d{2}(?::?\d{2})?)?"
_TAIL = lazy_re(rf"(\.(log|txt|out|err|gz|xz|bz2|zst|\d+)|{_DATE})+$")


def file_stem(path: str) -> str:
    """A log file's name without its suffixes, rotation numbers and dates.

    >>> file_stem("/var/log/fallback-a.log.2.gz"), file_stem("llm-a.service-20250525.log")
    ('fallback-a', 'llm-a.service')
    """
    return _TAIL.sub("", os.path.basename(path))


def unit_from_name(path: str, *, guess: bool = True) -> str | None:
    """The unit a log file's name names: ``llm-a.service.log`` → ``llm-a.service`` (spelled
    out); with ``guess``, also a name an engine's units go by (``<engine>-k26.log`` →
    ``<engine>-k26.service``), which is only a candidate: the build takes it when systemd or the
    kernel know that unit (:mod:`postmortem.analysis.server_units`). A date in the name
    (logrotate's dateext, a daily file) is not part of the unit's name.

    >>> unit_from_name("/var/log/llm-k26.service.log.1"), unit_from_name("server.log") is None
    ('llm-k26.service', True)
    >>> from postmortem.engines import engines
    >>> e = next(iter(engines().values())).name_hints[0]
    >>> [unit_from_name(f"{e}-k26-2026-02-10.log"), unit_from_name(f"{e}_20250525_0300.log")] == [
    ...     f"{e}-k26.service", f"{e}.service"]
    True
    >>> unit_from_name(f"{e}-k26.log", guess=False) is None
    True
    """
    stem = file_stem(path)
    if re.fullmatch(r"[A-Za-z0-9@_.:-]+\.(service|scope)", stem):
        return stem
    if not guess or not re.fullmatch(r"[A-Za-z0-9@_:-]+", stem):
        return None
    from .engines import engines

    return f"{stem}.service" if any(e.names(stem) for e in engines().values()) else None
