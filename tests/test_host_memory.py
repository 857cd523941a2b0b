"""Host RAM before a kill, as earlyoom's lines give it, and the one figure of its growth that
every section of the report states (QA: seed 161803 n3, seed 314159 n7)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from postmortem.analysis.facts import IncidentFacts, _summarise_timeline
from postmortem.analysis.model import Incident
from postmortem.analysis.timeline import memory_timeline
from postmortem.store.db import Store
from postmortem.store.parts import native

KILL = datetime(2026, 1, 8, 5, 32, 21, tzinfo=UTC)
TOTAL_MIB = 2_063_588


def _report(avail_mib: int) -> str:
    return (
        f"mem avail: {avail_mib:7d} of {TOTAL_MIB} MiB ({100 * avail_mib / TOTAL_MIB:5.2f}%), "
        "swap free:    0 of    0 MiB ( 0.00%)"
    )


#: earlyoom prints its configured limits here, not a reading: RAM available was at or below 9.87 %
LOW = "low memory! at or below SIGTERM limits: mem  9.87%, swap 100.00%"
KILLING = 'sending SIGTERM to process 35196 uid 1001 "sglang::schedul": oom_score 1134, VmRSS 54355 MiB'


def _facts(lines: list[tuple[float, str]], cause: str = "earlyoom") -> IncidentFacts:
    """The facts of a kill at :data:`KILL` whose journal holds earlyoom's ``lines`` (seconds
    from the kill, message), as the analysis builds them."""
    store = Store.memory()
    for n, (dt, message) in enumerate(lines, 1):
        store.execute(
            f"INSERT INTO {native(store, 'journal_entries')} (source_id, line_no, ts, host, ident, message) "
            "VALUES (1, ?, ?, 'gh200', 'earlyoom', ?)",
            [n, KILL + timedelta(seconds=dt), message],
        )
    tl = memory_timeline(store, kill_ts=KILL, unit=None, host="gh200")
    store.close()
    inc = Incident(1, "gh200", KILL, "serve-qwen3.service", cause, 0.9, killer="earlyoom")
    facts = IncidentFacts(incident=inc, timeline=tl, offsets=[])
    _summarise_timeline(facts)
    return facts


#: seed 161803 n3: reports every 5 min, the last 2 min 1 s before the kill, rising (RAM
#: available 320 GiB, then 357 GiB); then earlyoom's limit at the kill, 199 GiB
NIGHT = [
    (-1621.0, _report(327_677)),
    (-1321.0, _report(278_937)),
    (-421.0, _report(304_621)),
    (-121.0, _report(365_095)),
    (0.0, LOW),
    (0.0, KILLING),
]


def test_only_a_sample_over_a_minute_old_is_told_as_old() -> None:
    facts = _facts(NIGHT[:4])
    assert facts.host_avail_age_s == 121.0 and facts.host_avail_before_s == 121.0
    facts.host_avail_age_s = 60.0
    assert facts.host_avail_before_s is None
