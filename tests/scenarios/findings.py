"""Known-wrong mechanisms: which checks of which nights each finding explains (see FINDINGS.md)."""

from __future__ import annotations

from .spec import Scenario, Truth


def explain(s: Scenario, t: Truth) -> dict[str, str]:
    """check name → the id of the finding that makes it fail on this night."""
    return {}
