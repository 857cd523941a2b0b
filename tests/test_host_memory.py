"""Host RAM before a kill, as earlyoom's lines give it, and the one figure of its growth that
every section of the report states (QA: seed 161803 n3, seed 314159 n7)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest

from postmortem.analysis.facts import IncidentFacts, _host_growth, _summarise_timeline, host_samples
from postmortem.analysis.model import Incident
from postmortem.analysis.rules import explain
from postmortem.analysis.summary import summarise
from postmortem.analysis.timeline import Timeline, memory_timeline
from postmortem.report.context.memory import memory_facts
from postmortem.report.context.story import _trigger
from postmortem.store.db import Store
from postmortem.store.parts import native
from postmortem.text.templates import environment

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


def _trigger_text(facts: IncidentFacts) -> str:
    template = environment().get_template("partials/story.md.j2")
    ctx = SimpleNamespace(end="kill", memory_figure=None, cause_words="x", cause=facts.incident.cause)
    rest = {"factors": [], "victim": None, "limit_kb": None, "root_cite": None, "detected_utc": None}
    rest |= {"detected_what": "", "undated_commands": 0, "restart_cite": None}
    rest |= {"restart_utc": None, "recovery_how": None, "fallback_gain_s": None}
    imp = SimpleNamespace(serving=True, stop_utc="—", downtime="—")
    text = template.render(ctx=ctx, st=SimpleNamespace(**_trigger(facts), **rest), imp=imp)
    return " ".join(text.split("## Root cause")[0].split())


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


def test_earlyooms_limit_at_the_kill_is_the_last_host_memory_sample() -> None:
    """The Trigger said host memory "did not grow (it fell by 36 GiB)… falling 26 GiB a minute",
    from a report 2 min before the kill, while earlyoom's own line at the kill put RAM available
    at or below 9.87 %: 158 GiB less. The limit is the last sample (a bound: "at least")."""
    facts = _facts(NIGHT)
    assert facts.host_avail_limit_pct == 9.87
    assert facts.host_avail_end_mib == round(0.0987 * TOTAL_MIB)
    assert facts.host_avail_before_s is None  # at the kill, not 2 min 1 s before it
    assert facts.host_growth_mib == pytest.approx(121.1 * 1024)
    trigger = _trigger_text(facts)
    assert "Host memory in use grew by at least 121 GiB in the 30 minutes before the kill" in trigger
    assert "(to earlyoom's limit, 9.87 % of RAM available), rising at least 14 GiB a minute" in trigger
    assert "did not grow" not in trigger and "falling" not in trigger, trigger
    said = " ".join(memory_facts(facts))
    assert "at most 198.9 of 2015.2 GiB at the kill (earlyoom's limit, 9.87 %)" in said, said
    assert "to 1658.7 GiB (05:30:20 UTC, earlyoom's last reading), -36.5 GiB, then to at least" in said, said
    assert (
        "1816.3 GiB (05:32:21 UTC, earlyoom's limit), at least +157.6 GiB: at least +121.1 GiB over" in said
    )
    assert "before the kill." not in said  # no "at its last sample, 2 min 1 s before the kill"
    assert "grew by at least 121 GiB in the 30 minutes before" in summarise(facts)
    rec = explain("host_ram_not_gpu", facts)
    assert rec is not None and "at most 199 GiB of 2,015 GiB (earlyoom's limit, 9.87 %)" in rec.detail


def test_a_report_beside_the_limit_says_more_than_the_limit() -> None:
    """earlyoom 1.6–1.7 print a report just before the limit at a kill: that reading is the
    sample, not the bound."""
    facts = _facts([*NIGHT[:4], (-0.1, _report(180_000)), (0.0, LOW), (0.0, KILLING)])
    assert facts.host_avail_limit_pct is None
    assert facts.host_avail_end_mib == 180_000
    assert "at least" not in _trigger_text(facts)


def test_a_limit_takes_the_hosts_total_from_earlyooms_start() -> None:
    """No report in the window: the limit alone, sized from earlyoom's ``mem total`` at its start,
    hours before. One sample measures no growth."""
    facts = _facts([(-7200.0, f"mem total: {TOTAL_MIB} MiB, swap total: 0 MiB"), (0.0, LOW)])
    assert (facts.host_avail_end_mib, facts.host_total_mib) == (round(0.0987 * TOTAL_MIB), TOTAL_MIB)
    assert facts.host_growth_mib is None
    assert "no growth measured" in _trigger_text(facts)


def test_a_limit_above_the_last_reading_measures_no_growth() -> None:
    """A limit is a bound: at or above earlyoom's last reading it cannot say memory grew or fell
    after it, so the readings alone are the samples."""
    facts = _facts([(-1621.0, _report(150_000)), (-121.0, _report(200_000)), (0.0, LOW)])
    assert facts.host_avail_limit_pct is None and facts.host_avail_end_mib == 200_000


def test_only_a_sample_over_a_minute_old_is_told_as_old() -> None:
    facts = _facts(NIGHT[:4])
    assert facts.host_avail_age_s == 121.0 and facts.host_avail_before_s == 121.0
    facts.host_avail_age_s = 60.0
    assert facts.host_avail_before_s is None


@pytest.mark.parametrize("drop_gib", [34.47, 34.52])
def test_every_section_states_the_growth_from_one_rounded_figure(drop_gib: float) -> None:
    """Seed 314159 n7: Summary "grew by 35 GiB", Trigger "34 GiB" (rounded to 34.5, then to the
    even 34), Appendix C "+34.5 GiB". One figure, rounded once to a tenth of a GiB; a half
    rounds up where a section gives whole GiB."""
    t0 = KILL - timedelta(minutes=25)
    inc = Incident(1, "gh200", KILL, "a.service", "cgroup_oom", 0.9)
    inc.memcg_usage_kb = inc.memcg_limit_kb = 270_000_000
    tl = Timeline(kill_ts=KILL, start=KILL - timedelta(minutes=30), end=KILL, bucket_s=30)
    start = 135_680.0
    tl.host_points = [
        (t0, start, float(TOTAL_MIB)),
        (KILL - timedelta(seconds=82), start - drop_gib * 1024, TOTAL_MIB),
    ]
    facts: Any = IncidentFacts(incident=inc, timeline=tl, offsets=[])
    _summarise_timeline(facts)
    assert facts.host_growth_mib == 34.5 * 1024
    summary = summarise(facts)
    assert "Host memory in use grew by 35 GiB in the 30 minutes before" in summary
    # (the growth ends at that reading, 1 min 22 s before the kill: the Summary said "before the kill")
    assert "(up to the last reading, 1 min 22 s before the kill)" in summary
    trigger = _trigger_text(facts)  # (its last reading 1 min 22 s before the kill: said so)
    assert "Host memory in use grew by 35 GiB from 05:07:21 UTC to earlyoom's last reading" in trigger
    assert "+34.5 GiB" in " ".join(memory_facts(facts))
    rec = explain("host_ram_not_gpu", facts)
    assert rec is not None and "(down 35 GiB over the window)" in rec.detail, rec.detail


def test_a_cgroup_kill_at_earlyooms_limit_is_no_room_to_raise_the_limit() -> None:
    """A cgroup kill in the second earlyoom found RAM at its limit: the host had at most that
    left, so the advice does not offer raising the unit's limit into it."""
    facts = _facts(NIGHT, cause="cgroup_oom")
    facts.incident.memcg_usage_kb = facts.incident.memcg_limit_kb = 270_000_000
    rec = explain("unit_memory_limits", facts)
    assert rec is not None and "could be raised" not in rec.detail, rec.detail
    assert "with at most 199 GiB available (earlyoom's limit at the kill)" in rec.went_well, rec.went_well


def test_a_rate_under_a_gib_a_minute_is_rounded_once_in_mib() -> None:
    """Seed 8128 n7: "307 MiB a minute" where the samples give 315 — the rate was rounded to a
    tenth of a GiB, then shown in MiB (so 256–358 MiB all read 307). Every section says the
    figure its unit rounds once."""
    facts = _facts(
        [(-1530.0, _report(520_000)), (-330.0, _report(500_000)), (-30.0, _report(500_000 - 5 * 315))],
        cause="host_oom",
    )
    assert facts.host_rate_mib_min == pytest.approx(315.0)
    assert "rising 315 MiB a minute over the last ten" in _trigger_text(facts)
    assert "; rising 315 MiB a minute over its last 10 minutes" in " ".join(memory_facts(facts))


def test_the_queue_advice_says_which_way_each_rate_went() -> None:
    """Seed 8128 n0: "fell by 141 GiB before requests began to queue … and grew by 223 GiB after
    (falling 28 GiB a minute, then 11 GiB)" — the second rate, a rise, read as falling too."""
    facts = _facts([(-1500.0, _report(400_000)), (-900.0, _report(500_000)), (-30.0, _report(300_000))])
    facts.queue_max, facts.queue_start_ts = 40, KILL - timedelta(minutes=15)
    _host_growth(facts, host_samples(facts.timeline))
    rec = explain("bound_queue", facts)
    assert rec is not None and "(falling 9.8 GiB a minute, then rising 13 GiB)" in rec.detail, rec.detail


#: seed 496 n17: reports every 5 min, RAM available 190 GiB at the window's first and 216 GiB
#: at its last, 4 min 23 s before the kill; then earlyoom's limit, at most 199 GiB: above the
#: first reading (the window's growth is unknown), below the last (in use grew after it)
NIGHT_17 = [
    (-1763.0, _report(194_593)),
    (-1463.0, _report(370_327)),
    (-1163.0, _report(388_796)),
    (-863.0, _report(97_669)),
    (-563.0, _report(302_165)),
    (-263.0, _report(221_191)),
    (0.0, LOW),
    (0.0, KILLING),
]


def test_a_limit_below_the_last_reading_is_growth_after_it() -> None:
    """Seed 496 n17 (and 8128 n31, 496 n53): the Trigger said host memory "did not grow (it fell
    by 26 GiB) … falling 12 GiB a minute over the last ten", while earlyoom's own line at the
    kill put RAM available at or below 9.87 %: in use rose by at least 17 GiB after its last
    reading. The limit was dropped for being above the window's first reading, and the ten
    minutes were counted back from that reading, 4 min 23 s before the kill."""
    facts = _facts(NIGHT_17)
    assert facts.host_avail_limit_pct == 9.87
    assert facts.host_growth_mib is None  # at least −8.9 GiB: neither grew nor fell over the window
    assert facts.host_reading_growth_mib == pytest.approx(-26.0 * 1024)
    assert facts.host_end_growth_mib == pytest.approx(17.1 * 1024)
    assert facts.host_rate_from == KILL - timedelta(seconds=563)
    trigger = _trigger_text(facts)
    assert (
        "Host memory in use fell by 26 GiB from 05:02:58 UTC to earlyoom's last reading at 05:27:58 UTC, "
        "4 min 23 s before the kill, then grew by at least 17 GiB up to the kill (to earlyoom's limit, "
        "9.87 % of RAM available), rising at least 10 GiB a minute over the last ten." in trigger
    ), trigger
    assert "did not grow" not in trigger and "falling" not in trigger
    said = " ".join(memory_facts(facts))
    assert "(05:27:58 UTC, earlyoom's last reading), -26.0 GiB, then to at least 1816.3 GiB" in said, said
    assert "(05:32:21 UTC, earlyoom's limit), at least +17.1 GiB; rising at least 10 GiB a minute" in said
    assert "over the window" not in said
    summary = summarise(facts)
    assert "did not grow" not in summary and "fell" not in summary, summary


def test_a_rate_that_ends_at_an_old_reading_says_where_it_ends() -> None:
    """Seed 8128 n0: "grew by 82 GiB in the 30 minutes before the kill, falling 3.1 GiB a minute
    over the last ten", a rate from 22:12:09 to earlyoom's last reading at 22:22:09 while the
    kill was at 22:24:52. The Trigger says when that reading was, and where the rate ends."""
    facts = _facts(
        [(-1663.0, _report(300_000)), (-763.0, _report(100_000)), (-163.0, _report(250_000))],
        cause="host_oom",
    )
    assert facts.host_rate_from == KILL - timedelta(seconds=763)
    assert facts.host_rate_mib_min == pytest.approx(-150_000 / 10)
    trigger = _trigger_text(facts)
    assert (
        "Host memory in use grew by 49 GiB from 05:04:38 UTC to earlyoom's last reading at 05:29:38 UTC, "
        "2 min 43 s before the kill, falling 15 GiB a minute from 05:19:38 UTC to that reading." in trigger
    ), trigger
    assert "over the last ten" not in trigger
    said = " ".join(memory_facts(facts))
    assert "; falling 15 GiB a minute from 05:19:38 to 05:29:38 UTC." in said, said
