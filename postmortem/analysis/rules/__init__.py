"""Recommendation rules as a registry, in the insights-core manner.

A rule is one module under ``postmortem/analysis/rules/``: a function registered with
:func:`rule` under its name, with the severity it reports, the facts it reads
(:class:`~postmortem.analysis.facts.IncidentFacts` fields) and the rules whose findings it
reads (``after``: declared, never called). It returns a :class:`Finding` — the numbers, names
and evidence behind the advice — or ``None`` when its evidence is absent. It never writes a
sentence: its title, text and action item live in ``templates/rules/<name>.md.j2`` (blocks
``title``, ``text``, ``action``), which a user's ``--templates`` directory can reword.

:func:`recommend` runs every rule in registration order (a rule's ``after`` rules come first:
checked at registration), renders each finding through its template, lists an action item once
when two findings lead to it, and sorts by severity.

Adding a rule: ``docs/dev/adding-a-rule.md``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..model import Recommendation, SourceRef

SEVERITIES = ("high", "medium", "low", "info")

#: rule modules, in the order their rules run (and, within a severity, are listed)
RULE_MODULES: tuple[str, ...] = (
    "host_ram_not_gpu",
    "bound_queue",
    "gpu_held_by_another_process",
    "speculative_gpu_settings",
    "gpu_headroom",
    "fallback_autoregressive",
    "unit_memory_limits",
    "k8s_memory_limit",
    "k8s_startup_probe",
    "k8s_oom_group",
    "k8s_keep_events",
    "restart_policy",
    "reset_failed",
    "verify_gpu_freed",
    "host_rebooted",
    "health_check_backoff",
    "load_regression",
    "restart_loop",
    "stop_timeout",
    "gpu_fault",
    "server_error",
    "hicache_host_memory",
    "find_the_signal",
)


@dataclass(frozen=True)
class Finding:
    """What a rule found: its data (the template's variables) and the lines that show it.

    ``severity`` is the rule's unless the finding says otherwise (a rule whose case decides how
    urgent it is)."""

    rule: str
    severity: str
    data: Mapping[str, Any] = field(default_factory=dict)
    evidence: Sequence[SourceRef] = ()


#: the findings of the rules a rule declared in ``after`` (``None``: it found nothing)
Found = Mapping[str, "Finding | None"]
RuleFn = Callable[..., "Finding | None"]


@dataclass(frozen=True)
class RuleSpec:
    name: str
    severity: str
    requires: tuple[str, ...]
    after: tuple[str, ...]
    fn: RuleFn
    doc: str

    def finding(
        self, data: Mapping[str, Any] | None = None, evidence: Sequence[SourceRef] = (), **kw: Any
    ) -> Finding:
        """A finding of this rule (``severity=`` to override the rule's)."""
        severity = kw.pop("severity", self.severity)
        if kw:
            raise TypeError(f"unknown arguments {sorted(kw)}")
        return Finding(self.name, severity, dict(data or {}), tuple(evidence))


class DuplicateRuleError(ValueError):
    pass


REGISTRY: dict[str, RuleSpec] = {}


def rule(
    name: str, *, severity: str, requires: Sequence[str] = (), after: Sequence[str] = ()
) -> Callable[[RuleFn], RuleFn]:
    """Register a rule: ``fn(facts, found)`` → :class:`Finding` or ``None``."""
    if severity not in SEVERITIES:
        raise ValueError(f"rule {name!r}: severity {severity!r} is not one of {SEVERITIES}")

    def deco(fn: RuleFn) -> RuleFn:
        if name in REGISTRY:
            raise DuplicateRuleError(f"rule {name!r} registered twice")
        REGISTRY[name] = RuleSpec(
            name, severity, tuple(requires), tuple(after), fn, (fn.__doc__ or "").strip()
        )
        return fn

    return deco


_loaded = False


def rules() -> dict[str, RuleSpec]:
    """Every registered rule, in listing order (:data:`RULE_MODULES`)."""
    global _loaded
    if not _loaded:
        _loaded = True
        for module in RULE_MODULES:
            importlib.import_module(f"{__name__}.{module}")
        unknown = sorted({a for sp in REGISTRY.values() for a in sp.after} - set(REGISTRY))
        if unknown:
            raise ValueError(f"rules read findings of unregistered rules: {unknown}")
    # listing order is RULE_MODULES' whatever order the modules were imported in (doctests
    # import them one by one)
    rank = {m: i for i, m in enumerate(RULE_MODULES)}
    return dict(
        sorted(REGISTRY.items(), key=lambda kv: rank.get(kv[1].fn.__module__.rsplit(".", 1)[-1], len(rank)))
    )


def run_order() -> list[str]:
    """The rules in an order where each comes after the rules it reads (listing order otherwise)."""
    specs = rules()
    done: list[str] = []
    visiting: set[str] = set()

    def visit(name: str) -> None:
        if name in done:
            return
        if name in visiting:
            raise ValueError(f"rules read each other's findings in a cycle through {name!r}")
        visiting.add(name)
        for dep in specs[name].after:
            visit(dep)
        visiting.discard(name)
        done.append(name)

    for name in specs:
        visit(name)
    return done


def spec(name: str) -> RuleSpec:
    return rules()[name]


def run(facts: Any, only: Sequence[str] | None = None) -> list[Finding]:
    """Every rule's finding for ``facts`` (in listing order), or those of ``only`` and of the rules
    they read."""
    specs = rules()
    wanted = _with_dependencies(only) if only is not None else None
    found: dict[str, Finding | None] = {}
    for name in run_order():
        if wanted is not None and name not in wanted:
            continue
        sp = specs[name]
        found[name] = sp.fn(facts, {a: found.get(a) for a in sp.after})
    return [f for name in specs if (f := found.get(name)) is not None]


def _with_dependencies(names: Sequence[str]) -> set[str]:
    out: set[str] = set()
    todo = list(names)
    while todo:
        n = todo.pop()
        if n not in out:
            out.add(n)
            todo.extend(spec(n).after)
    return out


def recommend(facts: Any, templates: Sequence[str] = ()) -> list[Recommendation]:
    """The rendered recommendations for ``facts``: highest severity first, each action once."""
    from .words import render_finding

    out: list[Recommendation] = []
    actions: set[str] = set()
    for finding in run(facts):
        rec = render_finding(finding, facts, templates)
        if rec.action in actions:
            rec.action = None  # two findings, one thing to do: listed once
        elif rec.action:
            actions.add(rec.action)
        out.append(rec)
    order = {s: i for i, s in enumerate(SEVERITIES)}
    out.sort(key=lambda r: order.get(r.severity, 9))
    return out


def explain(name: str, facts: Any, templates: Sequence[str] = ()) -> Recommendation | None:
    """One rule's recommendation for ``facts``, rendered (``None``: it found nothing)."""
    from .words import render_finding

    finding = next((f for f in run(facts, only=[name]) if f.rule == name), None)
    return render_finding(finding, facts, templates) if finding is not None else None
