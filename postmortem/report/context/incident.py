"""One incident's report context, from its facts."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timedelta, tzinfo
from typing import Any

from ... import __version__
from ...analysis import Analysis
from ...analysis.attempts import AttemptError, attempt_errors, start_attempts
from ...analysis.facts import IncidentFacts
from ...analysis.load_stats import LoadStats, is_regression
from ...analysis.model import (
    ContainerInfo,
    Incident,
    Load,
    Recommendation,
    death_noun,
    ended_word,
    is_container,
    limit_owner,
    restartable,
)
from ...analysis.rules.words import engine_of
from ...analysis.summary import CAUSE_LABELS, cause_phrase, death_label, death_word, downtime_text
from ...analysis.undated import Undated
from ...engines import get_engine
from ...lazyre import lazy_re
from ...query import run_named_dicts
from ...store.db import Store
from ...text.formats import human
from ...timeutil import ZONE_ASSUMED, zone_name
from ..redact import Redactor
from .common import Sources, gib_kb, local_text, server_file, utc_text
from .memory import memory_facts, memory_rows, memory_rows_note, silent_text
from .story import story
from .timeline import timeline_rows
from .types import (
    ActionItem,
    ConsumerRow,
    ContainerRow,
    GapRow,
    Impact,
    IncidentReport,
    IssueReasonRow,
    LoadRow,
    LoadSummary,
    OffsetRow,
    Quote,
    QuoteError,
    RecommendationRow,
    SourceRow,
    VictimRow,
)

_ASSUMED = lazy_re(re.escape(ZONE_ASSUMED) + r" (\S+), this machine's zone")


def _zones_assumed(sources: Sources, own: list[int]) -> list[str]:
    """The zones the incident's own zone-less sources were read in by default (their notes)."""
    found = {m.group(1) for sid in own if (m := _ASSUMED.search(str(sources.by_id[sid].get("notes") or "")))}
    return sorted(found)


#: the kernel's OOM record's lines a quote shows
_OOM_WORDS = (
    "invoked oom-killer",
    "memory: usage",
    "oom-kill:",
    "Killed process",
    "Mem-Info",
    "Free swap",
    "are going to be killed",
    "Task in ",
)
#: systemd's lines a quote shows in full; more: the first QUOTE_HEAD and the last QUOTE_TAIL
#: (a start limit's lines come last), the rest left to the full timeline
QUOTE_LINES, QUOTE_HEAD, QUOTE_TAIL = 12, 4, 6
#: the server's lines (or distinct errors) a quote shows
QUOTE_SERVER = 6


def _quote_lines(store: Store, facts: IncidentFacts, sources: Sources, clean: Redactor) -> list[Quote]:
    inc = facts.incident
    quotes = _oom_quote(store, facts, sources, clean)
    for e in inc.evidence:
        if e.kind == "xid":  # the GPU fault that made this a gpu_fault incident
            rows = run_named_dicts(
                store, "record_lines", {"source_id": e.source_id, "first": e.line_no, "last": e.line_no}
            )
            if rows:
                text = f"{e.line_no:>6}  {clean(str(rows[0]['message']))}"
                quotes.append(Quote("The NVIDIA driver", sources.cite(e.source_id, e.line_no), text))
    quotes += _systemd_quote(inc, sources, clean)
    quotes += _server_quote(store, facts, sources, clean)
    return quotes


def _oom_quote(store: Store, facts: IncidentFacts, sources: Sources, clean: Redactor) -> list[Quote]:
    oom = facts.oom
    if oom is None:
        return []
    sid = int(oom["source_id"])
    first = int(oom["header_line_no"] or oom["line_no"])
    last = int(oom["line_no"])
    lines = run_named_dicts(store, "record_lines", {"source_id": sid, "first": first, "last": last + 1})
    picked = [r for r in lines if any(k in str(r["message"]) for k in _OOM_WORDS)]
    text = "\n".join(f"{r['line_no']:>6}  {clean(str(r['message']))}" for r in picked[:12])
    return [Quote("The kernel's OOM record", sources.cite(sid, first), text)] if text else []


def _systemd_quote(inc: Incident, sources: Sources, clean: Redactor) -> list[Quote]:
    """systemd's lines from one source (the line numbers are that file's): the source with the
    most of them; the same journal in a second file or rendering adds nothing. Many lines (a
    restart loop's) keep their first and their last: how it began, how systemd gave up."""
    units = [e for e in inc.evidence if e.kind.startswith("unit_")]
    if not units:
        return []
    best = max({e.source_id for e in units}, key=lambda sid: (sum(e.source_id == sid for e in units), -sid))
    sysd = [e for e in units if e.source_id == best]
    left_out = len(sysd) - QUOTE_HEAD - QUOTE_TAIL if len(sysd) > QUOTE_LINES else 0
    shown = [*sysd[:QUOTE_HEAD], None, *sysd[-QUOTE_TAIL:]] if left_out else sysd
    text = "\n".join(f"{e.line_no:>6}  {clean(e.detail)}" if e else f"{'…':>6}" for e in shown)
    return [Quote("systemd", sources.cite(sysd[0].source_id, sysd[0].line_no), text, left_out=left_out)]


def _server_quote(store: Store, facts: IncidentFacts, sources: Sources, clean: Redactor) -> list[Quote]:
    """The server's own error lines; a failed start's several attempts: each distinct error
    once, with the attempts it ended. Else the run's last statistics line."""
    inc = facts.incident
    sg = []
    seen_lines: set[tuple[int, int]] = set()
    for e in inc.evidence:
        # one line can be several kinds of evidence (an exception that is a CUDA OOM)
        if e.kind.startswith(("server_", "cuda_oom")) and (e.source_id, e.line_no) not in seen_lines:
            seen_lines.add((e.source_id, e.line_no))
            sg.append(e)
    if not sg:
        return _last_words(store, facts, sources, clean)
    label, cite = engine_of(facts).label, sources.cite(sg[0].source_id, sg[0].line_no)
    attempts = start_attempts(inc.evidence)
    if attempts < 2:
        return [
            Quote(label, cite, "\n".join(f"{e.line_no:>6}  {clean(e.detail)}" for e in sg[:QUOTE_SERVER]))
        ]
    errors = attempt_errors(inc.evidence, sg)[:QUOTE_SERVER]
    text = "\n".join(f"{x.first.line_no:>6}  {clean(x.first.detail)}" for x in errors)
    said = [QuoteError(x.first.line_no, x.attempts, _same_at(x, sources)) for x in errors]
    return [Quote(label, cite, text, attempts=attempts, errors=said)]


def _last_words(store: Store, facts: IncidentFacts, sources: Sources, clean: Redactor) -> list[Quote]:
    """The run's last statistics line, when none of the server's errors is evidence."""
    lb = facts.last_batch
    if lb is None:
        return []
    where = {"source_id": lb["source_id"], "first": lb["line_no"], "last": lb["line_no"]}
    rows = run_named_dicts(store, "record_lines", where)
    if not rows:
        return []
    label = engine_of(facts).label
    cite = sources.cite(lb["source_id"], lb["line_no"])
    return [Quote(f"{label}'s last words", cite, clean(str(rows[0]["message"])))]


def _same_at(error: AttemptError, sources: Sources) -> list[str]:
    """An error's other lines: their numbers in the first one's file, else their citations."""
    sid = error.first.source_id
    return [
        str(e.line_no) if e.source_id == sid else sources.cite(e.source_id, e.line_no)
        for e in error.lines[1:]
    ]


def _load_row(ld: Load, role: str, stats: LoadStats | None, sources: Sources) -> LoadRow:
    return LoadRow(
        unit=ld.unit,
        start_utc=utc_text(ld.start_ts),
        ready_utc=utc_text(ld.ready_ts),
        load_s=ld.load_s,
        weights_s=ld.weight_load_s,
        draft_weights_s=ld.draft_weight_load_s,
        kv_s=ld.kv_alloc_s,
        graphs_s=ld.cuda_graph_s,
        draft_graphs_s=ld.draft_cuda_graph_s,
        outcome=ld.outcome,
        polls=ld.health_polls,
        speculative=ld.speculative_algorithm or "—",
        role=role,
        regression=bool(stats and is_regression(ld, stats)),
        cite=sources.cite(ld.start_source_id or ld.source_id, ld.start_line_no),
    )


def _load_summary(st: LoadStats) -> LoadSummary:
    p = st.phases
    return LoadSummary(
        unit=st.unit,
        model=st.model_path,
        speculative=st.speculative_algorithm or "—",
        count=st.count,
        min_s=p["load_s"].min if "load_s" in p else None,
        median_s=p["load_s"].median if "load_s" in p else None,
        p90_s=p["load_s"].p90 if "load_s" in p else None,
        max_s=p["load_s"].max if "load_s" in p else None,
        weights_median_s=p["weight_load_s"].median if "weight_load_s" in p else None,
        graphs_median_s=p["cuda_graph_s"].median if "cuda_graph_s" in p else None,
    )


_CONFIG_KEYS = (
    "model_path",
    "tp_size",
    "mem_fraction_static",
    "speculative_algorithm",
    "speculative_draft_model_path",
    "speculative_num_steps",
    "speculative_eagle_topk",
    "speculative_num_draft_tokens",
    "cuda_graph_max_bs",
    "max_running_requests",
    "context_length",
    "chunked_prefill_size",
    "port",
)


def _config_rows(cfg: dict[str, Any] | None, clean: Redactor) -> dict[str, str]:
    """The settings a report shows of a run's ``server_configs`` row, under the names its engine
    prints them by (the columns keep one engine's names: a vLLM run's ``gpu_memory_utilization`` was shown
    as ``mem_fraction_static``)."""
    cfg = cfg or {}
    engine = get_engine(cfg.get("engine"))
    names = {st.column: st.arg for st in engine.settings.values() if st.column and st.arg}
    rows = {names.get(k, k): clean(str(cfg[k])) for k in _CONFIG_KEYS if cfg.get(k) is not None}
    rows.update({k: clean(v) for k, v in _hicache_args(cfg.get("raw"), cfg.get("engine")).items()})
    return rows


def _hicache_args(raw: str | None, engine: str | None) -> dict[str, str]:
    """The hierarchical KV cache's settings, when the run had it on (its host pools are host
    memory the other settings do not show)."""
    parsed = get_engine(engine).parse_args(raw) if raw else None
    args = parsed[0] if parsed else {}
    if str(args.get("enable_hierarchical_cache", "")).strip("'") != "True":
        return {}
    keys = ("enable_hierarchical_cache", "hicache_ratio", "hicache_size", "hicache_storage_backend")
    return {k: str(args[k]).strip("'") for k in keys if args.get(k) not in (None, "None", "0")}


#: a file covers a kill it has a line near (within the report's window before it, up to this
#: after it: the same instant stamped by another clock, a microsecond apart) and that its span
#: reaches (its last line at most COVER_TAIL before the kill)
COVER_AFTER = timedelta(seconds=1)


COVER_TAIL = timedelta(minutes=10)


def source_rows(
    sources: Sources,
    kill: datetime | None,
    clean: Redactor,
    *,
    ids: Sequence[int] | None = None,
    near: set[int] | None = None,
    window_s: float = 0.0,
    ended: str = "kill",
    undated: Undated | None = None,
) -> list[SourceRow]:
    """Rows for the sources ``ids`` (default: every source). ``near``: the sources with a line
    from ``window_s`` before the ``kill`` to just after it (:func:`sources_near`); a file whose
    span includes the kill across a gap (its service not running then) does not cover it.
    ``ended``: the report's word for that moment (kill, crash, failure). ``undated``: the files
    with no times whose lines were placed around it (they cover it: they hold its own lines),
    or could not be."""
    placed = {p.source_id: p.kill_lines for p in undated.placed} if undated else {}
    unplaced = {u.source_id for u in undated.unplaced} if undated else set()
    out = []
    for sid in sorted(sources.by_id) if ids is None else ids:
        r = sources.by_id[sid]
        first, last = r["first_ts"], r["last_ts"]
        spans = bool(kill and first and last and first <= kill <= last + COVER_TAIL)
        said: list[str] = []
        if sources.host_unknown(sid):
            said.append("no host named: its lines may be another host's (ingest it with --host)")
        if spans and near is not None and sid not in near:
            said.append(f"no line in the {human(window_s)} before the {ended}")
        if r["notes"]:
            # (a store ingested by an earlier build words the `journalctl -o cat` note in database terms)
            said.append(clean(str(r["notes"]).replace(": entries are stored with ts NULL", "")))
        if sid in placed:
            a, b = placed[sid]
            lines = f"lines {a}–{b}" if b > a else f"line {a}"
            said.append(f"placed by line order around the {ended}'s own {lines.split()[0]} ({lines})")
        elif sid in unplaced:
            said.append(f"its lines cannot be placed before or after the {ended}")
        out.append(
            SourceRow(
                file=clean(sources.names[sid]),
                format=str(r["format"]),
                lines=int(r["lines"]),
                parsed=int(r["parsed_lines"]),
                ignored=int(r["ignored_lines"]),
                parse_issues=int(r["parse_issues"]),
                first_utc=utc_text(first),
                last_utc=utc_text(last),
                covers_kill=(spans and (near is None or sid in near)) or sid in placed,
                notes="; ".join(said),
            )
        )
    return out


def sources_near(store: Store, kill: datetime | None, window_s: float) -> set[int]:
    """The sources with a line from ``window_s`` before the kill to just after it."""
    if kill is None:
        return set()
    rows = run_named_dicts(
        store,
        "source_records_between",
        {"from": kill - timedelta(seconds=window_s), "to": kill + COVER_AFTER},
    )
    return {int(r["source_id"]) for r in rows}


#: a finding's severity → its action item's priority
PRIORITY = {"high": "P1", "medium": "P2", "low": "P3", "info": "P3"}


def _stand_in(inc: Incident) -> str | None:
    """Another unit that serves in the killed one's place: the recovery is another unit's
    server, matched to the killed one by its model or port (not the first server ready on the
    host, taken for want of both)."""
    rec = inc.recovery_unit
    if rec is None or inc.unit is None or rec == inc.unit or inc.recovery_guessed:
        return None
    return rec


def action_items(inc: Incident, recs: Sequence[Recommendation], clean: Redactor) -> list[ActionItem]:
    """The rules' action items (each once), then the postmortem's own: moving traffic back from
    a fallback (or another unit standing in), and confirming the timeline; in order of priority.

    >>> from datetime import UTC, datetime
    >>> inc = Incident(1, "h", datetime(2025, 1, 1, tzinfo=UTC), "vllm-main.service", "host_oom", 0.9)
    >>> inc.recovery_unit = "vllm-backup.service"
    >>> [i.action for i in action_items(inc, [], str)][0]
    'Decide when to move traffic back from vllm-backup.service to vllm-main.service'
    >>> low = Recommendation("r", "low", "t", "d", [], "Run a check")
    >>> [i.priority for i in action_items(inc, [low], str)]
    ['P2', 'P3', 'P3']
    >>> inc.recovery_unit = "vllm-main.service"
    >>> len(action_items(inc, [], str))
    1
    """
    items = [
        ActionItem(clean(r.action), r.action_type or "mitigate", PRIORITY.get(r.severity, "P3"))
        for r in recs
        if r.action
    ]
    stand_in = inc.fallback_unit or _stand_in(inc)
    if stand_in:
        items.append(
            ActionItem(
                clean(f"Decide when to move traffic back from {stand_in} to {inc.unit}"),
                "mitigate",
                "P2",
            )
        )
    items.append(
        ActionItem(
            "Confirm the timeline with the operator on duty and attach this report to the ticket",
            "process",
            "P3",
        )
    )
    # by priority, each priority's items in the order above (a P2 of the postmortem's own came
    # after the rules' P3 items)
    return sorted(items, key=lambda i: i.priority)


def _death(inc: Incident, host: str, clean: Redactor) -> dict[str, str]:
    """The title and the words for how the process ended (a run that never became ready
    failed to start, or was killed while loading)."""
    loading = inc.killed_load is not None and inc.killed_load.never_ready
    died = death_word(inc.cause, loading)
    return {
        "title": f"{clean(inc.unit or 'process')} {died} on {host} at {utc_text(inc.ts)} UTC",
        "died": died,
        "died_at": death_label(inc.cause, loading),
        "end": death_noun(inc.cause, loading),
    }


def severity(inc: Incident) -> str:
    """``SEV-1``: not restored, down 30 minutes or more, or 1,000 requests or more running and
    queued at the kill; ``SEV-2``: 5 minutes or 100 requests; else ``SEV-3`` (also a unit that
    ran no server while the host's servers went on: :attr:`Incident.serving` False).

    >>> from datetime import UTC, datetime
    >>> inc = Incident(1, "h", datetime(2025, 1, 1, tzinfo=UTC), "a.service", "cgroup_oom", 0.9)
    >>> inc.downtime_s, inc.running_at_kill, inc.queued_at_kill = 732.0, 216, 122
    >>> severity(inc)
    'SEV-2'
    """
    affected = (inc.running_at_kill or 0) + (inc.queued_at_kill or 0)
    down = inc.downtime_s
    if inc.serving is False and down is None:
        return "SEV-3"  # (a neighbour that ran no server: no outage of serving)
    if (down is None and restartable(inc.unit)) or (down or 0) >= 1800 or affected >= 1000:
        return "SEV-1"
    if (down or 0) >= 300 or affected >= 100:
        return "SEV-2"
    return "SEV-3"


def _recommendation_rows(
    found: list[Recommendation], sources: Sources, clean: Redactor
) -> list[RecommendationRow]:
    return [
        RecommendationRow(
            r.severity,
            clean(r.title),
            clean(r.detail),
            [clean(sources.cite(e.source_id, e.line_no)) for e in r.evidence],
            clean(r.action) if r.action else None,
            clean(r.headline or r.title),
            clean(r.summary),
            r.rule,
        )
        for r in found
    ]


def _throughput_before(inc: Incident, facts: IncidentFacts) -> float | None:
    """The killed run's own generation throughput before the kill (a run that died loading
    served nothing; the run before it is another outage's)."""
    run = inc.killed_load.start_ts if inc.killed_load is not None else None
    before = [
        b.gen_throughput
        for b in facts.timeline.before_kill()[-10:]
        if b.gen_throughput and (run is None or b.ts >= run)
    ]
    return sum(before) / len(before) if before else None


def _impact(inc: Incident, facts: IncidentFacts, recovery_file: str = "") -> Impact:
    last = inc.last_activity_ts
    tput = _throughput_before(inc, facts)
    impact = Impact(
        downtime_s=inc.downtime_s,
        downtime=downtime_text(inc.downtime_s, inc.unit, "not restored in the data", inc.serving),
        serving=inc.serving,
        kill_utc=utc_text(inc.ts),
        recovered_utc=utc_text(inc.recovered_ts),
        recovery_unit=inc.recovery_unit
        or (
            f"a server of no known unit, writing {recovery_file}"
            if recovery_file and inc.recovered_ts
            else "—"
        ),
        recovery_named=bool(inc.recovery_unit),
        fallback_unit=inc.fallback_unit or "—",
        running_at_kill=inc.running_at_kill,
        queued_at_kill=inc.queued_at_kill,
        last_activity_utc=utc_text(last),
        silent_before_kill_s=(inc.ts - last).total_seconds() if inc.ts and last else None,
        silent_before_kill=silent_text((inc.ts - last).total_seconds()) if inc.ts and last else "—",
        same_second=bool(inc.ts and last and inc.ts.replace(microsecond=0) == last.replace(microsecond=0)),
        gen_throughput_before=round(tput, 1) if tput else None,
        # two significant figures: an estimate, not a count
        tokens_not_served=float(f"{tput * inc.downtime_s:.2g}") if tput and inc.downtime_s else None,
        restart_count=inc.restart_count,
        kills_last_hour=inc.kills_last_hour,
    )
    _recovery_impact(impact, inc, facts)
    if inc.earlier_week:
        impact.earlier_week = (
            f"{len(inc.earlier_week)} — "
            + "; ".join(
                f"{utc_text(ts)[:16]} UTC ({CAUSE_LABELS.get(cause, cause)})"
                for ts, cause in inc.earlier_week[:5]
            )
            + ("; …" if len(inc.earlier_week) > 5 else "")
        )
    _reboot_impact(impact, inc, facts)
    if facts.stop_ts is not None and inc.recovered_ts is not None:
        impact.out_of_service_s = (inc.recovered_ts - facts.stop_ts).total_seconds()
        impact.out_of_service = human(impact.out_of_service_s)
        impact.stop_utc = utc_text(facts.stop_ts)
        impact.stop_restarted = facts.stop_restarted
    return impact


def _recovery_impact(impact: Impact, inc: Incident, facts: IncidentFacts) -> None:
    """How long until the start that came back, and its load; who restarted a container."""
    rl = inc.recovery_load
    if rl is not None and rl.start_ts is not None and inc.ts is not None and rl.start_ts >= inc.ts:
        impact.until_start_s = (rl.start_ts - inc.ts).total_seconds()
        impact.until_start = human(impact.until_start_s)
        earlier = [
            r["ts"]
            for r in facts.restarts
            if r["ts"] is not None and r["ts"] < rl.start_ts - timedelta(seconds=5)
        ]
        if rl.unit == inc.unit and earlier:
            # the start that came back was not the first: the ones before it failed
            n = len(earlier)
            impact.until_start += (
                f" (the start that came back; {n} restart{'s' if n > 1 else ''} failed before it, the first "
                f"scheduled {human((min(earlier) - inc.ts).total_seconds())} after the kill)"
            )
        if rl.load_s is not None:
            impact.recovery_load_s = rl.load_s
            impact.recovery_load = human(rl.load_s)
    box = inc.container
    if box is not None and box.pod and inc.cause == "eviction" and inc.recovery_unit == inc.unit:
        impact.recovered_by = "a new pod in place of the evicted one"
    elif box is not None and inc.recovery_unit == inc.unit and inc.restart_count:
        impact.recovered_by = (
            "kubelet, by the pod's restartPolicy" if box.pod else f"{box.runtime_name}'s restart policy"
        )


def _reboot_impact(impact: Impact, inc: Incident, facts: IncidentFacts) -> None:
    rb = facts.reboot
    if rb is None or inc.ts is None:
        return
    impact.rebooted_utc = utc_text(rb.up_ts)
    impact.rebooted = (
        f"{'began' if rb.exact else 'its first line'} {human((rb.up_ts - inc.ts).total_seconds())} after the kill"
        + (f"; the previous boot's last line at {utc_text(rb.last_old_ts)} UTC" if rb.last_old_ts else "")
    )
    rl = inc.recovery_load
    if rl is not None and rl.start_ts is not None and rl.start_ts >= rb.up_ts and not impact.recovered_by:
        impact.recovered_by = "started after the reboot"


def _load_tag(inc: Incident, facts: IncidentFacts, ld: Load) -> str:
    """What a load of the killed or the recovery unit was to this incident."""
    end = facts.timeline.ended
    if inc.killed_load is not None and ld.load_id == inc.killed_load.load_id:
        return f"{ended_word(end)} instance"
    if inc.recovery_load is not None and ld.load_id == inc.recovery_load.load_id:
        tag = "fallback load" if inc.fallback_unit else "recovery load"
        if facts.reboot is not None and ld.start_ts is not None and ld.start_ts >= facts.reboot.up_ts:
            tag += " (after the reboot: a cold start)"
        return tag
    if inc.ts is not None and ld.start_ts is not None and ld.start_ts > inc.ts:
        # a start between the kill and the recovery (or within the hour, when it never came
        # back) is an attempt at this incident; a later one is a later run
        back = inc.recovered_ts or inc.ts + timedelta(hours=1)
        if ld.start_ts > back:
            return "later"
        return "restart attempt" if ld.unit == inc.unit else f"after the {end}"
    return "history"


def _load_rows(
    inc: Incident, facts: IncidentFacts, sources: Sources
) -> tuple[list[LoadRow], list[LoadSummary]]:
    """The killed run's loads and the recovery's (each group once: a unit restarted, or one log
    a server was started by hand into twice, is one group)."""
    loads: list[LoadRow] = []
    sums: list[LoadSummary] = []
    listed: set[int] = set()
    for st in (facts.unit_loads, facts.recovery_loads):
        if st is None or all(ld.load_id in listed for ld in st.loads):
            continue
        sums.append(_load_summary(st))
        loads.extend(_load_row(ld, _load_tag(inc, facts, ld), st, sources) for ld in st.loads)
        listed.update(ld.load_id for ld in st.loads)
    return loads, sums


def _configs(facts: IncidentFacts, clean: Redactor) -> tuple[dict[str, str], dict[str, str]]:
    """The killed server's configuration, and the recovery's beside it when it differs."""
    config = _config_rows(facts.config, clean)
    then = _config_rows(facts.recovery_config, clean)
    recovery_config: dict[str, str] = {}
    if facts.recovery_config is not None and then != config:
        recovery_config = {k: then.get(k, "—") for k in [*config, *(k for k in then if k not in config)]}
        config = {k: config.get(k, "—") for k in recovery_config}
    return config, recovery_config


def _own_sources(sources: Sources, inc: Incident) -> tuple[list[int], list[str]]:
    """The incident's host's files (in a store of several hosts) that can hold its evidence,
    and the zones its zone-less ones were read in when none was named."""
    own = sources.of_host(inc.host)
    if inc.ts is None:
        return own, _zones_assumed(sources, own)
    # a file that began after the incident was over is none of its evidence (and a report
    # written today reads the same after later nights are ingested)
    over = inc.recovered_ts or inc.ts + timedelta(hours=1)
    # a file read in the wrong zone may seem to begin up to 14 hours later (the widest offset):
    # its zone warning stays, though its lines are not the incident's
    assumed = _zones_assumed(
        sources,
        [sid for sid in own if (sources.by_id[sid]["first_ts"] or over) <= over + timedelta(hours=14)],
    )
    return [sid for sid in own if (sources.by_id[sid]["first_ts"] or over) <= over], assumed


def _noun(inc: Incident, facts: IncidentFacts) -> str:
    """Who hit the limit, in the cause's phrase: a unit, a container, a pod."""
    if inc.cause == "cgroup_oom":
        return limit_owner(inc.unit, (facts.oom or {}).get("oom_memcg"), boxed=inc.container is not None)
    return "container" if is_container(inc.unit) else "unit"


def _container_row(box: ContainerInfo | None, clean: Redactor) -> ContainerRow | None:
    if box is None:
        return None
    return ContainerRow(
        box.runtime_name,
        clean(box.name),
        clean(box.image or ""),
        box.container_id,
        box.short_id,
        box.cgroup or "",
        clean(box.pod or ""),
    )


def _offset_rows(facts: IncidentFacts, sources: Sources, clean: Redactor, mine: set[int]) -> list[OffsetRow]:
    return [
        OffsetRow(
            clean(sources.names.get(o.source_id, str(o.source_id))),
            clean(sources.names.get(o.reference_source_id or -1, "—")),
            round(o.offset_s, 6),
            o.method,
            o.pairs,
            o.note or "",
        )
        for o in facts.offsets
        if o.source_id in mine
    ]


def _issue_rows(sources: Sources, clean: Redactor, mine: set[int]) -> list[IssueReasonRow]:
    return [
        IssueReasonRow(
            clean(sources.names.get(int(r["source_id"]), "?")), clean(str(r["reason"])), int(r["n"])
        )
        for r in sources.issue_reasons
        if int(r["source_id"]) in mine
    ]


def incident_report(
    store: Store,
    analysis: Analysis,
    inc: Incident,
    *,
    sources: Sources,
    zone: tzinfo,
    clean: Redactor,
    window_s: float,
    generated_at: datetime,
    figure: str | None,
    loads_figure: str | None,
    file_stem: str,
) -> IncidentReport:
    facts = analysis.facts[inc.incident_id]
    found = analysis.recommendations.get(inc.incident_id, [])
    loads, sums = _load_rows(inc, facts, sources)
    config, recovery_config = _configs(facts, clean)
    host = clean.host(inc.host) or "unknown-host"
    own, assumed = _own_sources(sources, inc)
    mine = set(own)
    return IncidentReport(
        generated_at=utc_text(generated_at) + " UTC",
        tool_version=__version__,
        **_death(inc, host, clean),
        file_stem=file_stem,
        incident_id=inc.incident_id,
        host=host,
        unit=clean(inc.unit or "unknown"),
        unit_unknown_file=server_file(sources, inc.server_source, clean),
        zone=zone_name(zone),
        kill_utc=utc_text(inc.ts),
        kill_local=local_text(inc.ts, zone, dated=True),
        kill_minute_only=any(
            e.kind == "oom_kill" and e.raw.get("ts_inferred") == "minute" and e.ts == inc.ts
            for e in inc.evidence
        ),
        cause=inc.cause,
        cause_label=CAUSE_LABELS.get(inc.cause, inc.cause),
        cause_words=cause_phrase(inc.cause, _noun(inc, facts)),
        confidence=round(inc.confidence, 2),
        summary=clean(inc.summary),
        cause_explanation=clean(inc.cause_explanation),
        impact=_impact(inc, facts, server_file(sources, inc.recovery_source, clean)),
        timeline=timeline_rows(facts, sources, zone, clean),
        victims=[
            VictimRow(
                v.pid,
                clean(v.comm or "?"),
                gib_kb(v.anon_rss_kb),
                v.chosen,
                sources.cite(v.source_id, v.line_no),
                v.anon_rss_kb,
                v.vm_rss_kb,
            )
            for v in inc.victims
        ],
        consumers=[
            ConsumerRow(
                clean(c.name),
                c.processes,
                round(c.rss_kb / 1024 / 1024, 1),
                round(100 * c.share, 1),
                c.rss_kb,
            )
            for c in facts.consumers
        ],
        memory_facts=[clean(x) for x in memory_facts(facts)],
        quotes=_quote_lines(store, facts, sources, clean),
        memory_figure=figure,
        memory_rows=memory_rows(facts),
        memory_rows_note=memory_rows_note(facts),
        window_s=window_s,
        loads=loads,
        load_summaries=sums,
        loads_figure=loads_figure,
        config=config,
        config_source=f"{engine_of(facts).label} {engine_of(facts).config_name}",
        recovery_config=recovery_config,
        recovery_config_unit=clean(inc.recovery_unit or "") if recovery_config else "",
        container=_container_row(inc.container, clean),
        zone_assumed=assumed,
        recommendations=_recommendation_rows(found, sources, clean),
        action_items=action_items(inc, found, clean),
        severity=severity(inc),
        story=story(store, facts, found, sources, clean),
        sources=source_rows(
            sources,
            inc.ts,
            clean,
            ids=own,
            near=sources_near(store, inc.ts, window_s),
            window_s=window_s,
            ended=facts.timeline.ended,
            undated=facts.undated,
        ),
        gaps=[GapRow(g.series, g.detail) for g in facts.timeline.gaps],
        offsets=_offset_rows(facts, sources, clean, mine),
        parse_issue_reasons=_issue_rows(sources, clean, mine),
    )
