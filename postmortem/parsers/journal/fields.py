"""Journal fields (json, export, verbose) → one :class:`~.sink.JournalSink` entry.

Field → column: ``__REALTIME_TIMESTAMP`` → ``ts`` (exact; ``ts_raw`` keeps the µs value),
``__MONOTONIC_TIMESTAMP`` → ``monotonic_s``, ``_BOOT_ID`` → ``boot_id``, ``_HOSTNAME`` →
``host``, ``SYSLOG_IDENTIFIER`` (else ``_COMM``) → ``ident``, ``_PID`` (else ``SYSLOG_PID``) →
``pid``, ``UNIT``/``USER_UNIT`` (pid-1 messages about a unit) else ``_SYSTEMD_USER_UNIT`` else
``_SYSTEMD_UNIT`` → ``unit``, ``PRIORITY``, ``_TRANSPORT``, ``MESSAGE``. Kernel entries pass
``_SOURCE_MONOTONIC_TIMESTAMP`` (the kmsg stamp) to the kernel stream. A container's output
relayed by its runtime (``CONTAINER_ID_FULL``, ``CONTAINER_NAME``, ``IMAGE_NAME`` from
``dockerd`` or ``conmon``, see :mod:`.container`) is the container's: ``unit`` is
``docker:<name>``, ``pid`` NULL (``_PID`` is the daemon's), and the container is recorded in
``containers``.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from ..base import ParseContext
from .container import container_of
from .sink import EPOCH, JournalSink

#: the fields any journal parser reads (others are skipped without decoding)
WANTED = frozenset(
    {
        "__REALTIME_TIMESTAMP",
        "__MONOTONIC_TIMESTAMP",
        "_BOOT_ID",
        "_HOSTNAME",
        "SYSLOG_IDENTIFIER",
        "_COMM",
        "_PID",
        "SYSLOG_PID",
        "UNIT",
        "USER_UNIT",
        "_SYSTEMD_UNIT",
        "_SYSTEMD_USER_UNIT",
        "PRIORITY",
        "_TRANSPORT",
        "MESSAGE",
        "MESSAGE_ID",
        "EXIT_CODE",
        "EXIT_STATUS",
        "UNIT_RESULT",
        "N_RESTARTS",
        "CPU_USAGE_NSEC",
        "MEMORY_PEAK",
        "_SOURCE_MONOTONIC_TIMESTAMP",
        "CONTAINER_ID",
        "CONTAINER_ID_FULL",
        "CONTAINER_NAME",
        "IMAGE_NAME",
    }
)
WANTED_BYTES = frozenset(n.encode() for n in WANTED)


def _int(value: str | None) -> int | None:
    if value is None or not value.isdigit():
        return None
    return int(value)


class FieldMapper:
    """Turns one entry's fields into a sink entry (with a per-file realtime cache)."""

    def __init__(self, ctx: ParseContext, sink: JournalSink, *, has_null: bool = True) -> None:
        self.ctx = ctx
        self.sink = sink
        #: the format writes null for a value over journalctl's limit (json); export has no
        #: null — a MESSAGE missing there is an entry cut short
        self.has_null = has_null
        self.null_messages = 0
        self.missing_messages = 0

    def add(
        self,
        line_no: int,
        f: dict[str, str],
        *,
        ts: datetime | None = None,
        ts_raw: str | None = None,
        realtime_us: int | None = None,
        mono_us: int | None = None,
    ) -> None:
        """Add an entry; ``ts``/``realtime_us``/``mono_us`` override the fields (verbose)."""
        if realtime_us is None and ts is None:
            rt = f.get("__REALTIME_TIMESTAMP")
            realtime_us = _int(rt)
            ts_raw = rt
        if ts is None and realtime_us is not None:
            ts = EPOCH + timedelta(microseconds=realtime_us)
        if mono_us is None:
            mono_us = _int(f.get("__MONOTONIC_TIMESTAMP"))
        monotonic_s = mono_us / 1e6 if mono_us is not None else None
        boot_id = f.get("_BOOT_ID")
        host = f.get("_HOSTNAME")
        transport = f.get("_TRANSPORT")
        kmono: float | None = None
        if transport == "kernel":
            src = _int(f.get("_SOURCE_MONOTONIC_TIMESTAMP"))
            kmono = src / 1e6 if src is not None else monotonic_s
        if boot_id and realtime_us is not None and mono_us is not None:
            self.sink.boot_sample(boot_id, host or self.ctx.host, line_no, realtime_us, mono_us)
        message = f.get("MESSAGE")
        if message is None:
            if self.has_null:
                self.null_messages += 1  # json's null: longer than journalctl's limit
            else:
                self.missing_messages += 1
            message = ""
        pid = _int(f.get("_PID")) or _int(f.get("SYSLOG_PID"))
        unit = f.get("UNIT") or f.get("USER_UNIT") or f.get("_SYSTEMD_USER_UNIT") or f.get("_SYSTEMD_UNIT")
        if "CONTAINER_ID_FULL" in f or "CONTAINER_ID" in f:
            container = container_of(f)
            if container is not None:
                unit, pid = container.unit, None
                self.sink.container(line_no, ts, host, container)
        self.sink.entry(
            line_no,
            ts,
            ts_raw,
            None,
            monotonic_s,
            host,
            f.get("SYSLOG_IDENTIFIER") or f.get("_COMM"),
            pid,
            unit,
            _int(f.get("PRIORITY")),
            transport,
            boot_id,
            message,
            f,
            kmono,
        )

    def finish(self) -> None:
        if self.missing_messages:
            self.ctx.note(
                f"{self.missing_messages} "
                + ("entry had" if self.missing_messages == 1 else "entries had")
                + " no MESSAGE field (an entry cut short at the end of the file, or a damaged one): "
                "stored with an empty message"
            )
        if self.null_messages:
            self.ctx.note(
                "some MESSAGE values were null (longer than journalctl's 4096-byte limit); "
                "render with journalctl --all to keep them"
            )
