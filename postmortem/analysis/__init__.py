"""Analysis: pure functions over query results that fill the derived tables.

:func:`rebuild` recomputes ``service_loads``, ``clock_offsets``, ``incidents``,
``incident_victims``, ``incident_evidence`` and ``recommendations`` from the ingested tables.
``build`` calls it after every ingest; it returns the in-memory result the report renders.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Generator, Sequence
from contextlib import closing
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, tzinfo
from typing import Any

from ..engines import engine_formats, engines
from ..errors import PostmortemError
from ..machine import usable_cpus
from ..parsers.kubernetes.names import is_k8s_unit
from ..query import named_sql, run_named, run_named_dicts, sole_host
from ..store.db import Store, ident
from ..store.parts import materialize, native
from ..timeutil import UTC
from .clock import (
    describe_offset,
    is_zone_or_year,
    merge_offsets,
    message_pair_offsets,
    reference_formats,
    same_zone_offsets,
    start_pair_offsets,
    year_offsets,
)
from .facts import IncidentFacts, gather, host_systemd
from .incidents import (
    FAULT_OVERRIDES,
    GPU_FAULT_LOOK_S,
    GPU_FAULT_XIDS,
    attribute_gpu_fault,
    build_incidents,
    evidence_from_rows,
)
from .load_stats import LoadStats, load_statistics
from .loads import derive_service_loads, with_host
from .model import ClockOffset, ContainerInfo, Incident, Load, Recommendation, is_container
from .rules import recommend
from .server_units import link_server_units
from .summary import summarise
from .undated import kill_ranks

DERIVED_TABLES = (
    "clock_offsets",
    "incidents",
    "incident_victims",
    "incident_evidence",
    "recommendations",
)


@dataclass
class Analysis:
    incidents: list[Incident] = field(default_factory=list)
    facts: dict[int, IncidentFacts] = field(default_factory=dict)
    recommendations: dict[int, list[Recommendation]] = field(default_factory=dict)
    offsets: dict[int, ClockOffset] = field(default_factory=dict)
    loads: list[Load] = field(default_factory=list)
    load_stats: list[LoadStats] = field(default_factory=list)
    #: recommendations of incidents outside the window, as the last build stored them
    carried: dict[int, list[tuple[Any, ...]]] = field(default_factory=dict)
    #: each host's zone (see :func:`host_zones`): its local time in its reports
    zones: dict[str, tzinfo] = field(default_factory=dict)

    def zone_of(self, host: str | None, default: tzinfo) -> tzinfo:
        return self.zones.get(host or "", default)


def read_loads(store: Store) -> list[Load]:
    out = []
    for r in run_named_dicts(store, "service_loads_all"):
        out.append(Load(**{k: r[k] for k in Load.__dataclass_fields__ if k in r}))
    return out


def _offsets(store: Store) -> dict[int, ClockOffset]:
    sources = run_named_dicts(store, "source_formats")
    formats = reference_formats(
        {int(r["source_id"]): str(r["format"]) for r in sources},
        run_named_dicts(store, "source_exactness"),
    )
    exact = message_pair_offsets(run_named_dicts(store, "kernel_message_pairs"), formats)
    zones = start_pair_offsets(
        run_named_dicts(store, "unit_start_pairs"),
        formats,
        {o.source_id for o in exact},
        {int(r["source_id"]): r["tz"] for r in sources},
    )
    offsets = merge_offsets(exact, zones)
    years = year_offsets(run_named_dicts(store, "year_spans"), set(offsets))
    offsets = merge_offsets(offsets.values(), years)
    same = _not_contradicted(
        store,
        same_zone_offsets(
            run_named_dicts(store, "zone_sources", {"engine_formats": engine_formats()}), offsets
        ),
    )
    return merge_offsets(offsets.values(), same)


def _not_contradicted(store: Store, offsets: list[ClockOffset]) -> list[ClockOffset]:
    """Offsets given to sources because another one read in the same zone was off, less those
    the data contradicts: nvidia-smi samples whose GPUs emptied at a death as stamped, and not
    once the offset is applied, say the host's nvidia-smi ran in the zone it was read in (an
    a server's container logging in another zone): none of the nvidia-smi files take the offset."""
    if not offsets:
        return offsets
    formats = {int(r["source_id"]): str(r["format"]) for r in run_named_dicts(store, "source_formats")}
    nvidia = [o for o in offsets if formats.get(o.source_id, "").startswith("nvidia")]

    def at_deaths(source_id: int, shift_s: float) -> int:
        rows = run_named_dicts(store, "gpu_drops_at_deaths", {"sources": [source_id], "shift_s": shift_s})
        return int(rows[0]["at_deaths"]) if rows else 0

    for off in nvidia:
        if at_deaths(off.source_id, 0.0) > 0 and at_deaths(off.source_id, off.offset_s) == 0:
            return [o for o in offsets if o not in nvidia]
    return offsets


def apply_shifts(store: Store, shifts: dict[int, ClockOffset]) -> None:
    """Subtract each offset from every ``ts`` of its source and record it in ``sources``."""
    tables = [
        t
        for t in store.table_names()
        if t not in DERIVED_TABLES
        and t != "sources"
        and {"ts", "source_id"} <= {c for c, _ in store.columns(t)}
    ]
    for sid, off in shifts.items():
        micros = round(off.offset_s * 1_000_000)
        materialize(store, [sid])  # rows in Parquet parts are never updated in place
        row = store.execute("SELECT tz FROM sources WHERE source_id = ?", [sid]).fetchone()
        zone = row[0] if row and off.years and row[0] and "/" in str(row[0]) else None
        # a year's move keeps each row's local wall time (its own daylight-saving hour), else a
        # fixed offset
        moved = (
            "timezone($zone, timezone($zone, {c}) + to_years($years))"
            if zone
            else "{c} - to_microseconds($us)"
        )
        args: dict[str, Any] = {
            "sid": sid,
            **({"zone": zone, "years": off.years} if zone else {"us": micros}),
        }
        for table in tables:
            store.execute(
                f"UPDATE {native(store, table)} SET ts = {moved.format(c='ts')} WHERE source_id = $sid AND ts IS NOT NULL",  # noqa: S608
                args,
            )
        note = off.note or describe_offset(off.offset_s) or off.method
        store.execute(
            f"UPDATE sources SET shift_s = coalesce(shift_s, 0) + $off, shift_note = $note, "  # noqa: S608
            f"first_ts = {moved.format(c='first_ts')}, last_ts = {moved.format(c='last_ts')} WHERE source_id = $sid",
            {**args, "off": off.offset_s, "note": f"{off.method}: {note}"},
        )


def dedupe_loads(loads: list[Load], offsets: dict[int, float]) -> tuple[list[Load], list[int]]:
    """One load per real start: the same startup seen by several sources (journald and a log
    file, or renderings of one journal) is kept once, on the reference clock. The copy with the
    most phases (and a systemd start) wins. Returns (kept, dropped load ids)."""
    from datetime import timedelta

    def shifted(ld: Load) -> Load:
        off = offsets.get(ld.source_id or -1, 0.0)
        if not off:
            return ld
        delta = timedelta(seconds=off)
        return Load(
            **{
                **ld.__dict__,
                "start_ts": ld.start_ts - delta if ld.start_ts else None,
                "ready_ts": ld.ready_ts - delta if ld.ready_ts else None,
            }
        )

    def richness(ld: Load) -> tuple[int, int, int]:
        phases = sum(
            getattr(ld, a) is not None
            for a in ("weight_load_s", "kv_alloc_s", "cuda_graph_s", "draft_weight_load_s", "ready_ts")
        )
        return (
            int(ld.start_source == "systemd_starting" or ld.start_source == "systemd"),
            phases,
            -ld.load_id,
        )

    kept: list[Load] = []
    dropped: list[int] = []
    for ld in sorted(
        (shifted(x) for x in loads), key=lambda x: (x.unit or "", x.start_ts is None, x.start_ts)
    ):
        twin = None
        for k in kept:
            if (
                k.unit == ld.unit
                # one source does not log one start twice: two loads of it are two attempts
                # (restarts seconds apart); a fleet's hosts start the same unit apart
                and k.source_id != ld.source_id
                and (k.host is None or ld.host is None or k.host == ld.host)
                and k.start_ts
                and ld.start_ts
                and abs((k.start_ts - ld.start_ts).total_seconds()) <= 60
            ):
                twin = k
                break
        if twin is None:
            kept.append(ld)
        elif richness(ld) > richness(twin):
            kept[kept.index(twin)] = ld
            dropped.append(twin.load_id)
        else:
            dropped.append(ld.load_id)
    kept.sort(key=lambda x: (x.start_ts is None, x.start_ts, x.load_id))
    return kept, sorted(dropped)


def host_zones(store: Store) -> dict[str, tzinfo]:
    """Each host's zone: the one most of its sources were read in (a fleet store holds hosts
    in several zones; a report shows a host's local time in its own). A zone this Python
    does not know is passed over for the host's next most common one (the report's default
    applies when none is left)."""
    from ..timeutil import get_zone

    zones: dict[str, tzinfo] = {}
    for r in run_named_dicts(store, "host_zones"):
        if r["host"] in zones:
            continue
        try:
            zones[r["host"]] = get_zone(r["tz"])
        except PostmortemError:
            continue
    return zones


def _anchor_boots(store: Store, *, journals: bool = True) -> None:
    """Rows in seconds since boot take their wall-clock time: a journal without one from the
    server lines it carries (first: its kernel lines then date a dmesg of the same boot), then
    kernel rows from a boot anchor (scripts of several statements; rows in Parquet parts are
    made native first, as the scripts update them)."""
    pending = [int(r[0]) for r in store.fetchall(named_sql("anchor_journal_pending"))] if journals else []
    if pending:
        materialize(store, pending, tables=("journal_entries", "kernel_messages"))
        store.execute(named_sql("anchor_journal"))
    if store.fetchall(named_sql("anchor_pending")):
        materialize(store, tables=("kernel_messages",))
        store.execute(named_sql("anchor_monotonic"))


def _task_table_units(store: Store) -> None:
    """A kill no cgroup names, of an inference server's process, takes the unit of the one
    server whose own pid the OOM record's task table lists (``task_table_units.sql``)."""
    prefixes = sorted({p.lower() for e in engines().values() for p in e.process_prefixes})
    store.execute(named_sql("task_table_units"), {"prefixes": prefixes})


def _anchor_minutes(store: Store) -> None:
    """dmesg -e/-H rows, dated to the minute, take their seconds from systemd's kill lines."""
    if store.fetchall(named_sql("anchor_minutes_pending")):
        materialize(store, tables=("kernel_messages",))  # (rows in Parquet parts made native)
        store.execute(named_sql("anchor_minutes"))


def rebuild(
    store: Store,
    *,
    window_s: float = 1800.0,
    since: datetime | None = None,
    until: datetime | None = None,
    zone: tzinfo = UTC,
    on_facts: Callable[[Analysis, Incident], None] | None = None,
    templates: Sequence[str] = (),
) -> Analysis:
    """Recompute every derived table; return the store's incidents, those from ``since`` to
    ``until`` with their facts (the others keep the columns and recommendations the last build
    that analysed them stored). ``on_facts`` is
    called with the analysis so far (every incident, the facts gathered yet) and an incident as
    soon as its facts are gathered (``build`` starts drawing its figures then, while the next
    incidents are analysed). ``templates``: the user's template directories (a rule's words,
    stored with its recommendation, come from them first)."""
    # rows no host is known for are the store's only host's, when it names one (a per-host
    # store), as its export files them: the same incidents and loads as in a fleet store (what
    # follows moves times and names units, never a host: looked up once)
    host = sole_host(store)
    with store.transaction():
        _anchor_boots(store)
        # a container's cgroup scope (its start, its OOM kill) is the container its lines name
        store.execute(named_sql("container_units"))
        # … and a pod's container known by its cgroup alone takes its Kubernetes name
        store.execute(named_sql("k8s_units"))
        # a server's log named after its unit takes it (its clock is compared with the unit's)
        link_server_units(store, host, timed=False)
        _anchor_minutes(store)
        offsets = _offsets(store)
        # a source read in the wrong zone or year is put on the journal's clock in the store, so
        # every later query (loads, timeline, GPU release) sees it where it belongs
        shifts = {sid: o for sid, o in offsets.items() if is_zone_or_year(o)}
        if shifts:
            apply_shifts(store, shifts)
            _anchor_minutes(store)  # a dmesg put in the journal's year meets systemd's lines now
            offsets = _offsets(store)
        # every server run takes the unit the evidence names (the clocks compared now), and a
        # systemd kill line of a server unit may date a kill no cgroup names
        # (anchor_monotonic.sql): committed here, for the gathering threads' connections see
        # only what is committed (their queries read the runs' units and the kills' times)
        link_server_units(store, host)
        # … and a kill no cgroup names is the server's whose pid its task table lists
        _task_table_units(store)
        # a kill dated to its minute only moves up to its server's last line in that minute,
        # which the run's unit, linked just now by that very kill, names (anchor_minutes.sql)
        _anchor_minutes(store)
        _anchor_boots(store, journals=False)
    with store.transaction():
        # service_loads is derived (after the shifts) and deduplicated in the same transaction
        derive_service_loads(store, host)
        earlier = _earlier_facts(store)
        for table in DERIVED_TABLES:
            store.execute(f"DELETE FROM {ident(table)}")  # noqa: S608
        for r in run_named_dicts(store, "source_shifts"):
            sid = int(r["source_id"])
            if sid not in offsets:
                offsets[sid] = ClockOffset(
                    sid, None, float(r["shift_s"]), "applied", 0, str(r["shift_note"] or "")
                )
        # offsets still to apply when matching (corrections already in the store are not)
        live = {sid: o.offset_s for sid, o in offsets.items() if o.method != "applied"}
        loads, dropped = dedupe_loads(read_loads(store), live)
        if dropped:
            store.execute("DELETE FROM service_loads WHERE list_contains(?, load_id)", [dropped])
        stats = load_statistics(loads)
        # the incidents of the whole store (the table keeps them all, numbered the same whatever
        # the window); the window's are analysed, the others keep what an earlier build found
        rows = with_host(run_named_dicts(store, "kill_evidence", {"since": None, "until": None}), host)
        evidence = evidence_from_rows(rows)
        incidents = build_incidents(evidence, loads, {sid: off for sid, off in live.items() if abs(off) >= 1})
        _containers(store, incidents)
        _k8s_ready(store, incidents)
        _gpu_faults(store, incidents)
        ranks = kill_ranks(incidents)
        for inc in incidents:
            inc.kill_rank = ranks.get(inc.incident_id)
        result = Analysis(incidents=incidents, offsets=offsets, loads=loads, load_stats=stats)
        result.zones = host_zones(store)
        timed = [
            inc
            for inc in incidents
            if inc.ts is not None and not (since and inc.ts < since) and not (until and inc.ts > until)
        ]
        _carry_over(result, earlier, {inc.incident_id for inc in timed})
        gathering = _gather_all(store, timed, window_s=window_s, stats=stats, offsets=list(offsets.values()))
        # closed on the way out, also on an error: its threads and connections end before the
        # transaction does
        with closing(gathering):
            for inc, facts in zip(timed, gathering, strict=True):
                result.facts[inc.incident_id] = facts
                result.recommendations[inc.incident_id] = recommend(facts, templates)
                inc.summary = summarise(facts, result.zone_of(inc.host, zone), templates)
                if on_facts is not None:
                    on_facts(result, inc)
        _persist(store, result)
    return result


def _containers(store: Store, incidents: list[Incident]) -> None:
    """The container each container unit's incident is: the one whose scope the kernel's record
    names, else the last of that name seen before the kill (a container recreated under the same
    name has another id)."""
    if not any(is_container(inc.unit) for inc in incidents):
        return
    rows = run_named_dicts(store, "containers_list")
    for inc in incidents:
        if not is_container(inc.unit):
            continue
        same = [
            r for r in rows if r["unit"] == inc.unit and (inc.host is None or r["host"] in (None, inc.host))
        ]
        cgroups = [
            str(e.raw["oom_memcg"]) for e in inc.evidence if e.kind == "oom_kill" and e.raw.get("oom_memcg")
        ]
        if not same:
            inc.container = _unnamed_container(str(inc.unit), cgroups)
            continue
        named = [r for r in same if any(r["container_id"] in c for c in cgroups)]
        before = [r for r in same if inc.ts is None or r["ts"] is None or r["ts"] <= inc.ts]
        r = (named or before or same)[-1]
        cgroup = next((c for c in cgroups if r["container_id"] in c), None)
        inc.container = ContainerInfo(
            str(r["runtime"]), str(r["name"]), str(r["container_id"]), r["image"], cgroup
        )
        if is_k8s_unit(inc.unit):  # its name and pod from the unit, its image from its Pod object
            ns_pod = str(inc.unit)[4:].rsplit("/", 1)[0]
            image = next((x["image"] for x in same if x["image"]), None)
            inc.container = replace(inc.container, runtime="kubernetes", image=image, pod=ns_pod)


def _unnamed_container(unit: str, cgroups: list[str]) -> ContainerInfo | None:
    """A container no line names (``docker:<short id>``, from its scope alone), as the kernel's
    record of its cgroup gives its full id.

    >>> cid = "8c1d" + "0" * 60
    >>> _unnamed_container("docker:8c1d00000000", [f"/system.slice/docker-{cid}.scope"]).container_id == cid
    True
    """
    runtime, _, short = unit.partition(":")
    scope = "libpod" if runtime == "podman" else "docker"
    for cgroup in cgroups:
        m = re.search(rf"{scope}-({re.escape(short)}[0-9a-f]{{52}})\.scope", cgroup)
        if m:
            return ContainerInfo(runtime, short, m.group(1), None, cgroup)
    return None


def _k8s_ready(store: Store, incidents: list[Incident]) -> None:
    """A pod's container no server line shows ready again is back when kubelet's readiness
    probe passed after the death (a restart of the same container, or of its replacement)."""
    for inc in incidents:
        if inc.recovered_ts is not None or inc.ts is None or not is_k8s_unit(inc.unit):
            continue
        rows = run_named_dicts(store, "k8s_ready_after", {"unit": inc.unit, "after": inc.ts})
        if rows:
            inc.recovered_ts = rows[0]["ts"]
            inc.downtime_s = (inc.recovered_ts - inc.ts).total_seconds()
            inc.recovery_unit = inc.unit


def _gpu_faults(store: Store, incidents: list[Incident]) -> None:
    """A GPU that failed (an NVIDIA Xid of the hardware, driver or firmware) on the incident's
    host in the minutes before a death no OOM record explains is its cause."""
    for inc in incidents:
        if inc.ts is None or inc.cause not in FAULT_OVERRIDES:
            continue
        rows = run_named_dicts(
            store,
            "gpu_faults_before",
            {
                "host": inc.host,
                "from": inc.ts - timedelta(seconds=GPU_FAULT_LOOK_S),
                "to": inc.ts + timedelta(seconds=5),
                "xids": sorted(GPU_FAULT_XIDS),
            },
        )
        attribute_gpu_fault(inc, rows)


#: incidents analysed at once, each by a thread with its connection (the queries run in DuckDB
#: without the GIL); 1: one after the other
GATHER_THREADS = 4


def _gather_all(
    store: Store,
    incidents: list[Incident],
    *,
    window_s: float,
    stats: list[LoadStats],
    offsets: list[ClockOffset],
) -> Generator[IncidentFacts, None, None]:
    """Each incident's facts, in order, as soon as they are gathered: by threads reading the
    store through connections of their own when there are several incidents and CPUs. Those
    connections see what is committed: the ingested tables, the clock shifts and the server runs'
    units (committed before); not this transaction's ``service_loads`` and derived tables, which
    no query of :func:`gather` reads (its loads come in ``stats``)."""
    workers = min(GATHER_THREADS, usable_cpus(), len(incidents))
    # (whether host-less rows are the store's only host's: once a build, not once an incident)
    one_host = len(run_named(store, "store_hosts").rows) <= 1
    of = functools.partial(
        gather,
        window_s=window_s,
        all_loads=stats,
        offsets=offsets,
        one_host=one_host,
        systemd=host_systemd(store),
    )
    if workers < 2:
        for inc in incidents:
            yield of(store, inc)
        return
    import queue
    from concurrent.futures import ThreadPoolExecutor

    # one connection per thread, opened here (not by the threads, while this one uses the store)
    opened: list[Store] = []
    readers: queue.SimpleQueue[Store] = queue.SimpleQueue()

    def one(inc: Incident) -> IncidentFacts:
        reader = readers.get()
        try:
            return of(reader, inc)
        finally:
            readers.put(reader)

    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="postmortem-gather")
    # each thread's queries on a share of the CPUs: DuckDB's own threads on top of the gathering
    # ones only contend (two threads on two CPUs, each query on one: analysis of the bench
    # store's 17 incidents 1.46-1.48 -> 1.30-1.38 s, 4 rounds interleaved)
    with store.threads(usable_cpus() // workers):
        try:
            for _ in range(workers):
                opened.append(store.reader())
                readers.put(opened[-1])
            futures = [pool.submit(one, inc) for inc in incidents]
            for fut in futures:
                yield fut.result()
        finally:
            try:
                pool.shutdown(wait=True, cancel_futures=True)
            except BaseException:
                # interrupted again while the threads finish their incidents (a second Ctrl-C):
                # stop their queries, so that their connections can be closed, and the store's
                pool.shutdown(wait=False, cancel_futures=True)
                for reader in opened:
                    reader.con.interrupt()
                pool.shutdown(wait=True)
                raise
            finally:
                for reader in opened:
                    reader.close()


#: the incident columns an analysis fills from its facts (the rest come from the evidence)
_FACT_COLUMNS = (
    "restart_count",
    "running_at_kill",
    "queued_at_kill",
    "last_activity_ts",
    "gpu_memory_freed",
    "summary",
    "serving",
)


@dataclass
class _Earlier:
    """An incident as an earlier build stored it: its facts' columns and recommendations."""

    host: str | None
    unit: str | None
    ts: datetime
    columns: dict[str, Any]
    recommendations: list[tuple[Any, ...]]


#: how far an incident's time may have moved since the last build and still be the same kill:
#: the same kernel line read from another copy (dmesg's or the journal's, microseconds apart),
#: a whole-second stamp where the precise one was (under a second). Far below the two minutes
#: (``incidents.MERGE_S``) that part two incidents of one unit, so no two of them are in reach
#: of one earlier incident.
CARRY_TOLERANCE_S = 5.0


def _earlier_facts(store: Store) -> list[_Earlier]:
    """The derived rows of the last build, with the host, unit and time of each incident."""
    found: dict[int, _Earlier] = {}
    for r in run_named_dicts(store, "earlier_incidents"):
        columns = {c: r[c] for c in _FACT_COLUMNS}
        found[int(r["incident_id"])] = _Earlier(r["host"], r["unit"], r["ts"], columns, [])
    for r in run_named_dicts(store, "earlier_recommendations"):
        if int(r["incident_id"]) in found:
            row = tuple(r[c] for c in _DERIVED_COLUMNS["recommendations"][1:])
            found[int(r["incident_id"])].recommendations.append(row)
    return list(found.values())


def _carry_over(result: Analysis, earlier: list[_Earlier], analysed: set[int]) -> None:
    """Incidents outside the window keep what the last build found for them: a build of one
    incident's window leaves the others' rows as they were. An incident is the earlier one of
    its unit and host (or no host known on one side) nearest in time, within
    :data:`CARRY_TOLERANCE_S` (the same kill, read from another copy of its line); each
    earlier incident is carried to one incident at most."""
    pairs: list[tuple[float, int, int]] = []
    for i, inc in enumerate(result.incidents):
        if inc.incident_id in analysed or inc.ts is None:
            continue
        for j, old in enumerate(earlier):
            if old.unit != inc.unit or not (old.host is None or inc.host is None or old.host == inc.host):
                continue
            gap = abs((inc.ts - old.ts).total_seconds())
            if gap <= CARRY_TOLERANCE_S:
                pairs.append((gap, i, j))
    taken_inc: set[int] = set()
    taken_old: set[int] = set()
    for _, i, j in sorted(pairs):
        if i in taken_inc or j in taken_old:
            continue
        taken_inc.add(i)
        taken_old.add(j)
        inc, old = result.incidents[i], earlier[j]
        for name, value in old.columns.items():
            setattr(inc, name, value if value is not None or name != "summary" else "")
        result.carried[inc.incident_id] = old.recommendations


def _persist(store: Store, result: Analysis) -> None:
    paths = {int(r["source_id"]): str(r["path"]) for r in run_named_dicts(store, "source_formats")}
    offsets = [
        [off.source_id, off.reference_source_id, off.offset_s, off.method, off.pairs, off.note]
        for off in result.offsets.values()
    ]
    incidents: list[list[Any]] = []
    victims: list[list[Any]] = []
    evidence: list[list[Any]] = []
    recommendations: list[list[Any]] = []
    for inc in result.incidents:
        v = inc.victim
        incidents.append(
            [
                inc.incident_id,
                inc.host,
                inc.ts,
                inc.unit,
                inc.cause,
                inc.confidence,
                inc.killer,
                inc.scope,
                v.pid if v else None,
                v.comm if v else None,
                len(inc.victims),
                inc.anon_rss_kb,
                inc.memcg_usage_kb,
                inc.memcg_limit_kb,
                inc.recovered_ts,
                inc.downtime_s,
                inc.fallback_unit,
                inc.recovery_unit,
                inc.recovery_load.load_s if inc.recovery_load else None,
                inc.restart_count,
                inc.kills_last_hour,
                inc.running_at_kill,
                inc.queued_at_kill,
                inc.last_activity_ts,
                inc.gpu_memory_freed,
                inc.summary or None,
                inc.serving,
            ]
        )
        victims.extend(
            [
                inc.incident_id,
                x.source_id,
                x.line_no,
                x.ts,
                x.pid,
                x.comm,
                x.anon_rss_kb,
                x.chosen,
                x.vm_rss_kb,
            ]
            for x in inc.victims
        )
        evidence.extend(
            [inc.incident_id, e.source_id, e.line_no, e.ts, e.kind, e.detail[:2000]] for e in inc.evidence
        )
        recommendations.extend(
            [
                inc.incident_id,
                r.rule,
                r.severity,
                r.title,
                r.detail,
                "; ".join(f"{paths.get(e.source_id, e.source_id)}:{e.line_no}" for e in r.evidence) or None,
                r.headline or None,
                r.summary or None,
                r.action,
                r.action_type or None,
            ]
            for r in result.recommendations.get(inc.incident_id, [])
        )
        recommendations.extend([inc.incident_id, *row] for row in result.carried.get(inc.incident_id, []))
    store.insert_rows("clock_offsets", _DERIVED_COLUMNS["clock_offsets"], offsets)
    store.insert_rows("incidents", _DERIVED_COLUMNS["incidents"], incidents)
    store.insert_rows("incident_victims", _DERIVED_COLUMNS["incident_victims"], victims)
    store.insert_rows("incident_evidence", _DERIVED_COLUMNS["incident_evidence"], evidence)
    store.insert_rows("recommendations", _DERIVED_COLUMNS["recommendations"], recommendations)


#: the columns of the derived tables, in the order :func:`_persist` gives the values
_DERIVED_COLUMNS = {
    "clock_offsets": ("source_id", "reference_source_id", "offset_s", "method", "pairs", "note"),
    "incidents": (
        "incident_id",
        "host",
        "ts",
        "unit",
        "cause",
        "confidence",
        "killer",
        "scope",
        "victim_pid",
        "victim_comm",
        "victims",
        "anon_rss_kb",
        "memcg_usage_kb",
        "memcg_limit_kb",
        "recovered_ts",
        "downtime_s",
        "fallback_unit",
        "recovery_unit",
        "recovery_load_s",
        "restart_count",
        "kills_last_hour",
        "running_at_kill",
        "queued_at_kill",
        "last_activity_ts",
        "gpu_memory_freed",
        "summary",
        "serving",
    ),
    "incident_victims": (
        "incident_id",
        "source_id",
        "line_no",
        "ts",
        "pid",
        "comm",
        "anon_rss_kb",
        "chosen",
        "vm_rss_kb",
    ),
    "incident_evidence": ("incident_id", "source_id", "line_no", "ts", "kind", "detail"),
    "recommendations": (
        "incident_id",
        "rule",
        "severity",
        "title",
        "detail",
        "evidence",
        "headline",
        "summary",
        "action",
        "action_type",
    ),
}
