"""Parsers for journald and syslog sources, registered from here.

* ``journal-short``: ``journalctl -o short*`` text and classic syslog files (:mod:`.short`);
* ``journal-json``: ``-o json``, ``json-seq``, ``json-sse``, ``json-pretty`` (:mod:`.jsonmode`);
* ``journal-export``: ``-o export`` streams and binary ``*.journal`` files (:mod:`.export`);
* ``journal-verbose``: ``-o verbose`` (:mod:`.verbose`);
* ``journal-cat``: ``-o cat``, messages only, no timestamps (:mod:`.cat`).

All of them store one ``journal_entries`` row per entry and share the routing in
:mod:`.sink`: systemd lifecycle → ``unit_events`` (:mod:`.systemd`), systemd-oomd/earlyoom →
``oom_kills``, kernel entries → the kernel parser's ``KernelStream``, an inference server's output →
its engine's message-level stream, realtime/monotonic pairs → ``boots``.
"""

from __future__ import annotations

from .cat import JournalCatParser
from .export import JournalExportParser
from .jsonmode import JournalJsonParser
from .short import JournalShortParser
from .verbose import JournalVerboseParser

__all__ = [
    "JournalCatParser",
    "JournalExportParser",
    "JournalJsonParser",
    "JournalShortParser",
    "JournalVerboseParser",
]
