"""``postmortem runbook INCIDENT_ID``: the fallback a report recommends, written out to review.

From one incident of the store: a systemd drop-in for the killed unit (no restart into the same
failure, ``OnFailure=`` to the unit that brought service back when it was another, ``KillMode=
mixed``, ``TimeoutStartSec=`` from its measured loads), one for that fallback unit
(``Conflicts=`` with the killed unit, ``TimeoutStartSec=`` from its loads, ``ExecStartPost=`` a
readiness wait), and the wait itself (``wait-ready.py``: reads ``/v1/models`` for the model id,
backs off, gives up after the longest load measured plus a margin). The words are the templates'
(``templates/runbook/``); every value from the logs is checked before it is written into a unit
file or a command line. docs/runbook.md describes it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import InputError
from .io import write_atomic
from .lazyre import lazy_re
from .query import run_named_dicts
from .store.db import Store

#: a timeout is the longest measured load plus half, rounded up to a minute
MARGIN = 1.5
#: how long the readiness wait tries when no load was measured
DEFAULT_GIVE_UP_S = 900
#: a unit name systemd accepts (letters, digits, ``:-_.\\@``) ending in .service
_UNIT = lazy_re(r"^[A-Za-z0-9:_.\\@-]{1,250}\.service$")
#: a model id safe on a unit's command line (no quote, space, % specifier or shell character)
_MODEL = lazy_re(r"^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,199}$")


@dataclass
class Runbook:
    """What the templates write (values checked)."""

    incident_id: int
    host: str
    cause: str
    kill_utc: str
    killed: str
    fallback: str | None
    killed_loads: int
    killed_max_s: float | None
    killed_p90_s: float | None
    killed_timeout_s: int | None
    fallback_loads: int
    fallback_max_s: float | None
    fallback_p90_s: float | None
    fallback_timeout_s: int | None
    killed_port: int | None
    killed_model: str
    killed_give_up_s: int
    port: int | None
    model: str
    give_up_s: int
    margin_words: str = "the longest plus half, rounded up to a minute"


def timeout_s(loads: list[float]) -> int | None:
    """The start timeout for loads of these seconds: the longest plus half, in whole minutes.

    >>> timeout_s([566.0, 584.0, 570.0]), timeout_s([])
    (900, None)
    """
    if not loads:
        return None
    return int(math.ceil(max(loads) * MARGIN / 60.0) * 60)


def p90(loads: list[float]) -> float | None:
    """The 90th percentile of three loads or more (nearest rank), else None."""
    if len(loads) < 3:
        return None
    ordered = sorted(loads)
    return ordered[min(len(ordered) - 1, math.ceil(0.9 * len(ordered)) - 1)]


def _unit(store: Store, unit: str, host: str | None, until: Any) -> dict[str, Any]:
    rows = run_named_dicts(store, "runbook_unit", {"unit": unit, "host": host, "until": until})
    row = rows[0] if rows else {}
    row["loads"] = [float(x) for x in (row.get("loads") or [])]
    return row


def plan(store: Store, incident_id: int) -> Runbook:
    """The runbook of one incident, or an :class:`InputError` saying why there is none."""
    rows = run_named_dicts(store, "runbook_incident", {"incident_id": incident_id})
    if not rows:
        raise InputError(f"no incident {incident_id} in the store (see 'postmortem incidents')")
    inc = rows[0]
    killed = str(inc["unit"] or "")
    if killed.startswith("k8s:"):
        raise InputError(
            f"incident {incident_id} is a Kubernetes pod's ({killed}): the runbook writes systemd units; "
            "the report's advice says what to change in the pod spec"
        )
    if not _UNIT.match(killed):
        raise InputError(
            f"incident {incident_id}'s unit is not a systemd service a runbook can name: {killed!r}"
        )
    fallback = inc["fallback_unit"] or (inc["recovery_unit"] if inc["recovery_unit"] != killed else None)
    if fallback is not None and not _UNIT.match(str(fallback)):
        fallback = None
    until = inc["recovered_ts"] or inc["ts"]
    k = _unit(store, killed, inc["host"], until)
    f = _unit(store, str(fallback), inc["host"], until) if fallback else {"loads": []}
    kport, kmodel = _endpoint(k)
    fport, fmodel = _endpoint(f)
    return Runbook(
        incident_id=incident_id,
        host=str(inc["host"] or "the host"),
        cause=str(inc["cause"]),
        kill_utc=inc["ts"].strftime("%Y-%m-%d %H:%M:%S") if inc["ts"] else "?",
        killed=killed,
        fallback=str(fallback) if fallback else None,
        killed_loads=len(k["loads"]),
        killed_max_s=max(k["loads"], default=None),
        killed_p90_s=p90(k["loads"]),
        killed_timeout_s=timeout_s(k["loads"]),
        fallback_loads=len(f["loads"]),
        fallback_max_s=max(f["loads"], default=None),
        fallback_p90_s=p90(f["loads"]),
        fallback_timeout_s=timeout_s(f["loads"]),
        killed_port=kport,
        killed_model=kmodel,
        killed_give_up_s=timeout_s(k["loads"]) or DEFAULT_GIVE_UP_S,
        port=fport,
        model=fmodel,
        give_up_s=timeout_s(f["loads"]) or DEFAULT_GIVE_UP_S,
    )


def _endpoint(row: dict[str, Any]) -> tuple[int | None, str]:
    """A unit's server port and the model id its /v1/models lists, if the logs gave safe ones."""
    port = row.get("port")
    model = str(row.get("served_model_name") or row.get("model_path") or "")
    return (
        int(port) if isinstance(port, int) and 0 < port < 65536 else None,
        model if _MODEL.match(model) else "",
    )


def write(rb: Runbook, out: Path, templates: tuple[str, ...] = ()) -> list[Path]:
    """Write the runbook's files under ``out`` (created); returns them."""
    from .text.templates import environment

    env = environment(templates)
    out.mkdir(parents=True, exist_ok=True)
    files = [(f"{rb.killed}.d/50-postmortem-fallback.conf", "killed.conf.j2", 0o644)]
    if rb.fallback:
        files.append((f"{rb.fallback}.d/50-postmortem-fallback.conf", "fallback.conf.j2", 0o644))
    if rb.fallback or rb.killed_port:
        files.append(("wait-ready.py", "wait-ready.py.j2", 0o755))
    written = []
    for name, template, mode in files:
        path = out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        text = env.get_template(f"runbook/{template}").render(rb=rb)
        written.append(write_atomic(path, text if name.endswith(".py") else _tidy(text), mode))
    return written


def _tidy(text: str) -> str:
    """One blank line at most between blocks, one newline at the end."""
    return re.sub(r"\n{3,}", "\n\n", text).strip("\n") + "\n"
