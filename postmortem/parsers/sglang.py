"""SGLang server logs (0.1–0.5.x): the message-level API other parsers call.

This first version fixes the interface; the full parser follows in the same module path.

``looks_like_sglang(message)`` — cheap test whether a message (after a journal/syslog prefix)
is SGLang output. ``SglangStream`` — feed it every later message of that unit/pid too (tracebacks
are unprefixed), with the journal's ``ts``/``unit``/``pid``; it yields records and warnings and
never touches the context's line counters.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime

from .base import Output, ParseContext

_PREFIX = re.compile(
    r"\[(?:\d{4}-\d{2}-\d{2} )?\d{2}:\d{2}:\d{2}(?:\.\d{3})?"
    r"(?: (?:DP|PP|ATTN_CP|MOE_DP|TP|EP)\d+| encode_server| encode_dp_worker\[\d+\])*\] "
)


def looks_like_sglang(message: str) -> bool:
    """True when ``message`` carries SGLang's logger prefix (or SGLang's uvicorn layout).

    >>> looks_like_sglang("[2026-01-15 10:00:00 TP0] Load weight begin. avail mem=77.43 GB")
    True
    >>> looks_like_sglang("Started sglang.service.")
    False
    """
    if message.startswith("[gpu"):
        return message.startswith(("[gpu=", "[gpu_id="))
    return _PREFIX.search(message, 0, 80) is not None


class SglangStream:
    """Message-level SGLang parser (see the module docstring for the contract)."""

    PARSED, IGNORED, UNPARSED = 0, 1, 2

    def __init__(
        self,
        ctx: ParseContext,
        *,
        host: str | None = None,
        unit: str | None = None,
        pid: int | None = None,
        strict: bool = False,
    ) -> None:
        self.ctx = ctx
        self.host = host if host is not None else ctx.host
        self.unit = unit if unit is not None else ctx.unit
        self.pid = pid
        self.strict = strict
        #: what the last :meth:`feed` did with its line (PARSED / IGNORED / UNPARSED)
        self.status = self.IGNORED
        #: True while a multi-line record (a traceback) is open: feed the following lines too
        self.expects_continuation = False

    def feed(
        self,
        line_no: int,
        message: str,
        *,
        ts: datetime | None = None,
        ts_raw: str | None = None,
        ts_inferred: str | None = None,
        host: str | None = None,
        unit: str | None = None,
        pid: int | None = None,
    ) -> Iterator[Output]:
        self.status = self.IGNORED
        return iter(())

    def close(self) -> Iterator[Output]:
        return iter(())
