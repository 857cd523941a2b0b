"""fallback_autoregressive: a speculative server's autoregressive sibling brought service back."""

from __future__ import annotations

from ..facts import IncidentFacts
from . import Finding, Found, rule, spec
from .common import spec_algorithm

NAME = "fallback_autoregressive"


@rule(NAME, severity="medium", requires=("incident", "recovery_loads"))
def fallback_autoregressive(f: IncidentFacts, found: Found) -> Finding | None:
    """The fallback without speculative decoding that brought service back: when to run it, and
    its load time to budget (this time, median, p90)."""
    inc = f.incident
    algo = spec_algorithm(f)
    unit = inc.fallback_unit
    stats = f.recovery_loads if unit else None
    if not algo or not unit or stats is None:
        return None
    data = {
        "algorithm": algo,
        "fallback": unit,
        "last_s": inc.recovery_load.load_s if inc.recovery_load else None,
        "median_s": stats.median_load_s,
        "loads": stats.count,
        "p90_s": stats.phases["load_s"].p90 if "load_s" in stats.phases and stats.count > 2 else None,
    }
    return spec(NAME).finding(data)
