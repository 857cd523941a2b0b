"""load_regression: a load much slower than the unit's usual."""

from __future__ import annotations

from statistics import median

from ..facts import IncidentFacts
from ..load_stats import is_regression
from . import Finding, Found, rule, spec

NAME = "load_regression"


@rule(NAME, severity="medium", requires=("incident", "recovery_loads", "unit_loads"))
def load_regression(f: IncidentFacts, found: Found) -> Finding | None:
    """The recovery's (or the killed run's) load against the median of the unit's other loads."""
    for load, stats in ((f.incident.recovery_load, f.recovery_loads), (f.incident.killed_load, f.unit_loads)):
        if load is None or stats is None or not is_regression(load, stats):
            continue
        med = median([ld.load_s for ld in stats.ready if ld is not load and ld.load_s is not None])
        return spec(NAME).finding({"load_unit": load.unit, "load_s": load.load_s, "median_s": med})
    return None
