"""A finding → its words: ``templates/rules/<rule>.md.j2`` rendered with the finding's data.

Besides the finding's own data every rule template gets:

* ``unit`` — how a sentence names the incident's unit (``container x`` for a container);
* ``inc_unit`` — the unit's name as is, ``fallback_unit`` — the fallback that brought service
  back (or ``None``);
* ``engine`` — the killed server's engine (:class:`postmortem.engines.Engine`: its ``label``);
* ``flag(key)`` — the engine's flag for an engine-neutral setting key
  (``flag("gpu_memory_fraction")`` → ``--mem-fraction-static`` for SGLang);
* ``phrase(key)`` — an engine's own words for something the rule names (its
  :attr:`~postmortem.engines.Engine.phrases`; ``""`` when it has none);
* ``severity`` — the finding's severity;
* ``memory_max`` — the unit setting that caps memory on the host (``MemoryMax=``, or
  ``MemoryLimit=`` before systemd 231), ``oom_policy`` — whether its systemd has
  ``OOMPolicy=`` (``yes``, ``no``, ``unknown``: see :class:`..facts.Systemd`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...engines import Engine, engines, get_engine
from ...text.templates import render_blocks
from ..model import Recommendation, incident_end, unit_words
from . import Finding

#: a rule template's blocks: ``title`` and ``text`` (the full reasoning, the appendix's);
#: ``headline`` and ``summary`` (the body's: one line, at most three sentences); ``action`` and
#: ``action_type`` (the action item: mitigate, prevent or detect); ``factor`` (a contributing
#: factor it shows); ``went_well``, ``went_wrong``, ``lucky`` (lessons learned) — a missing or
#: empty block says nothing
BLOCKS = (
    "title",
    "text",
    "action",
    "headline",
    "summary",
    "action_type",
    "factor",
    "went_well",
    "went_wrong",
    "lucky",
)


def engine_of(facts: Any) -> Engine:
    """The killed server's engine: its load's, its configuration's, the engine its unit or a
    victim is named after; else the first registered engine (whose words the advice then uses)."""
    inc = facts.incident
    load = inc.killed_load
    name = (load.engine if load is not None else None) or (facts.config or {}).get("engine")
    if name:
        return get_engine(name)
    known = list(engines().values())
    for engine in known:
        if engine.names(inc.unit) or any(engine.owns_process(v.comm) for v in inc.victims):
            return engine
    return known[0]


def variables(finding: Finding, facts: Any) -> dict[str, Any]:
    """The template's variables: the common ones, then the finding's data."""
    inc = facts.incident
    engine = engine_of(facts)
    return {
        "unit": unit_words(inc),
        "inc_unit": inc.unit,
        "fallback_unit": inc.fallback_unit,
        "engine": engine,
        "flag": lambda key: engine.setting(key).flag or key,
        #: whether the engine has the setting at all (vLLM has no bound on its waiting queue)
        "has": lambda key: engine.setting(key).flag is not None,
        "phrase": lambda key: engine.phrases.get(key, ""),
        "severity": finding.severity,
        "memory_max": facts.systemd.memory_max,
        "oom_policy": facts.systemd.oom_policy,
        #: the word for the moment the process ended: kill, crash, failure ("after the kill")
        "end": incident_end(inc),
        **finding.data,
    }


def render_finding(finding: Finding, facts: Any, templates: Sequence[str] = ()) -> Recommendation:
    words = render_blocks(f"rules/{finding.rule}.md.j2", variables(finding, facts), BLOCKS, templates)
    return Recommendation(
        finding.rule,
        finding.severity,
        words["title"],
        words["text"],
        list(finding.evidence),
        words["action"] or None,
        headline=words["headline"] or words["title"],
        summary=words["summary"],
        action_type=words["action_type"] or ("mitigate" if words["action"] else ""),
        factor=words["factor"],
        went_well=words["went_well"],
        went_wrong=words["went_wrong"],
        lucky=words["lucky"],
    )
