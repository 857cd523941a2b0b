"""Whose release GPU memory that fell after a death was: the death's, or a stop's before it.

A start that fails at once (a missing file, a wrong argument) often follows ``systemctl
restart``: the run that held the GPUs was stopped, the new one died before it took any memory.
nvidia-smi's samples then show the memory held before the failure and gone after it, but what
freed it was the stop. A release that follows the unit's stop — systemd's ``Stopping …`` /
``Stopped …`` of it (named by its Description, before systemd 249), an operator's
``systemctl stop`` or ``restart`` of it — after the last sample that showed the memory held is
that stop's, not the death's.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from ..query import run_named_dicts
from ..store.db import Store
from .model import Incident
from .timeline import TimelineEvent

#: what stops a unit: systemd's job lines, and the operator's verbs
STOP_KINDS = frozenset({"stopping", "stopped"})
STOP_VERBS = frozenset({"stop", "restart"})


def names_unit(ev: TimelineEvent, unit: str, descriptions: Iterable[str] = ()) -> bool:
    """Whether ``ev`` stops ``unit``: systemd's stop job of it (by its name or one of its
    ``descriptions``), or an operator's ``systemctl stop|restart`` naming it.

    >>> from datetime import UTC
    >>> t = datetime(2025, 1, 1, tzinfo=UTC)
    >>> cmd = TimelineEvent(t, "operator", None, "command", "/usr/bin/systemctl restart llm", 1, 18)
    >>> stopped = TimelineEvent(t, "systemd", "Serve llm", "stopped", "Stopped Serve llm.", 1, 20)
    >>> names_unit(cmd, "llm.service"), names_unit(stopped, "llm.service"), names_unit(stopped, "llm.service", ["Serve llm"])
    (True, False, True)
    """
    if ev.origin == "systemd":
        return ev.kind in STOP_KINDS and (ev.unit == unit or ev.unit in set(descriptions))
    if ev.origin != "operator":
        return False
    words = ev.message.split()
    return (
        "systemctl" in ev.message
        and bool(STOP_VERBS & set(words))
        and (unit in words or unit.removesuffix(".service") in words)
    )


def unit_descriptions(store: Store, unit: str) -> set[str]:
    """The Descriptions a journal that names jobs by them teaches for ``unit`` (an operator's
    start of it, its oneshot-like start and end: ``operator_descriptions.sql``,
    ``oneshot_descriptions.sql``)."""
    return {
        str(r["description"])
        for name in ("operator_descriptions", "oneshot_descriptions")
        for r in run_named_dicts(store, name)
        if r["unit"] == unit
    }


def stop_before_release(
    store: Store, inc: Incident, events: Sequence[TimelineEvent], held: Sequence[datetime]
) -> TimelineEvent | None:
    """The unit's first stop after the last of ``held`` (each released GPU's last sample that
    showed its memory held) and before the death's second, or None. A stop that the death
    ended (a stop timeout's SIGKILL) is no other release than the death's."""
    if inc.ts is None or inc.unit is None or not held or inc.cause == "timeout":
        return None
    since, until = max(held), inc.ts.replace(microsecond=0)
    window = [ev for ev in events if since <= ev.ts < until and ev.origin in ("systemd", "operator")]
    stops = [ev for ev in window if names_unit(ev, inc.unit)]
    if not stops and any(ev.kind in STOP_KINDS for ev in window):
        # (systemd before 249 names a stop job by the unit's Description)
        descriptions = unit_descriptions(store, inc.unit)
        stops = [ev for ev in window if names_unit(ev, inc.unit, descriptions)]
    return stops[0] if stops else None
