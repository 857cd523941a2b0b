"""Everything known about one incident, gathered once for the rules and the report."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from ..lazyre import lazy_re
from ..parsers.journal.systemd import left_process, sigkilled_process
from ..parsers.kernel.oom import unit_of
from ..query import run_named_dicts
from ..store.db import Store
from .kubernetes import K8sFacts, k8s_facts
from .load_stats import LoadStats, stats_of, up_to
from .model import GPU_COMMS, ClockOffset, Incident, cgroup_is_units, incident_end
from .release_stop import stop_before_release
from .timeline import Bucket, Timeline, TimelineEvent, memory_timeline, seconds_after
from .undated import Undated, place

GPU_FREED_MIB = 1024  # a GPU at or below this after a kill counts as released
GPU_GRACE_S = 60.0


@dataclass
class Consumer:
    name: str
    processes: int
    rss_kb: int
    share: float  # of the task table's total RSS


@dataclass
class GpuRelease:
    gpu: str
    before_mib: int | None
    min_after_mib: int | None
    freed_after_s: float | None  # seconds from the kill to the first sample at the minimum
    freed: bool | None
    #: the sample that showed it freed (source_id, line_no)
    freed_at: tuple[int, int] | None = None


def gpu_label_text(labels: list[str] | tuple[str, ...]) -> str:
    """``GPUs 0–3``, ``GPU 2``, ``GPUs 0, 2, 5`` from labels ``GPU n``; bus ids or UUIDs as
    they are.

    >>> gpu_label_text([f"GPU {i}" for i in range(4)]), gpu_label_text(["GPU 2"]), gpu_label_text(["GPU 5", "GPU 0"])
    ('GPUs 0–3', 'GPU 2', 'GPUs 0, 5')
    >>> gpu_label_text(["00000000:07:00.0", "GPU 1"])
    '00000000:07:00.0, GPU 1'
    """
    nums = [int(x[4:]) for x in labels if x.startswith("GPU ") and x[4:].isdigit()]
    if len(nums) != len(labels):
        return ", ".join(labels)
    if len(nums) == 1:
        return f"GPU {nums[0]}"
    nums.sort()
    if len(nums) > 2 and nums == list(range(nums[0], nums[-1] + 1)):
        return f"GPUs {nums[0]}–{nums[-1]}"
    return "GPUs " + ", ".join(map(str, nums))


@dataclass(frozen=True)
class Reboot:
    """The host booted again after the kill (before the service was back, or within the hour):
    ``up_ts`` the first sign of the new boot (its start where a journal gave it, else its first
    journal line or kernel banner), ``last_old_ts`` the last journal line of the old boot after
    the kill, and the unit's first start in the new boot."""

    up_ts: datetime
    exact: bool  # up_ts is the boot's own start (monotonic zero), not its first line
    at: tuple[int, int]  # the first line of the new boot (source_id, line_no)
    boot_id: str | None
    last_old_ts: datetime | None
    unit_started_ts: datetime | None

    @property
    def boot_words(self) -> str:
        return f"boot {self.boot_id[:8]}" if self.boot_id else "a new boot"


@dataclass(frozen=True)
class LateRelease:
    """GPU memory a kill left behind, freed later: when the last of the GPUs that held it fell
    to the freed level, that sample (source_id, line_no), the GPUs, and the operator's command
    (a ``kill``, a GPU reset) just before, when one is in the journal."""

    ts: datetime
    at: tuple[int, int] | None
    gpus: tuple[str, ...]
    command: TimelineEvent | None = None

    @property
    def text(self) -> str:
        return gpu_label_text(self.gpus)


@dataclass
class GpuHolder:
    pid: int
    gib: float
    name: str | None = None
    gpus: int | None = None
    first_ts: datetime | None = None
    at: tuple[int, int] | None = None  # the first nvidia-smi row listing it (source_id, line_no)


_HOLDER = lazy_re(r"Process (\d+) has ([\d.]+) (GiB|MiB|KiB) memory in use")


def gpu_holders(messages: list[str]) -> list[GpuHolder]:
    """Other processes a PyTorch OOM message says held memory on the GPU, the largest share
    each pid was named with.

    >>> gpu_holders(["CUDA out of memory. GPU 0 has … Process 88001 has 118.20 GiB memory in use. "
    ...              "Including non-PyTorch memory, this process has 20.57 GiB memory in use."])
    [GpuHolder(pid=88001, gib=118.2, name=None, gpus=None, first_ts=None, at=None)]
    """
    scale = {"GiB": 1.0, "MiB": 1 / 1024, "KiB": 1 / 1024**2}
    found: dict[int, float] = {}
    for text in messages:
        for m in _HOLDER.finditer(text):
            gib = float(m.group(2)) * scale[m.group(3)]
            found[int(m.group(1))] = max(found.get(int(m.group(1)), 0.0), gib)
    return [GpuHolder(pid, round(gib, 2)) for pid, gib in sorted(found.items())]


@dataclass(frozen=True)
class Systemd:
    """A host's systemd version as its journal tells it (``host_systemd.sql``): ``low`` and
    ``high`` bound it (both the version when a boot line names it; None: no bound). The
    settings the advice may name depend on it: ``MemoryMax=`` came in v231 (``MemoryLimit=``
    before), ``OOMPolicy=`` in v243.

    >>> Systemd(219, 219).memory_max, Systemd(None, 219).oom_policy, Systemd().oom_policy
    ('MemoryLimit=', 'no', 'unknown')
    >>> Systemd(245, 245).memory_max, Systemd(243, None).oom_policy, Systemd(None, 238).oom_policy
    ('MemoryMax=', 'yes', 'no')
    >>> Systemd(None, 238).memory_max
    'MemoryMax= (MemoryLimit= before systemd 231)'
    """

    low: int | None = None
    high: int | None = None

    @property
    def memory_max(self) -> str:
        """The unit setting that caps its memory on this host, as the advice names it."""
        if self.high is not None and self.high < 231:
            return "MemoryLimit="
        if self.high is None or (self.low is not None and self.low >= 231):
            return "MemoryMax="
        return "MemoryMax= (MemoryLimit= before systemd 231)"

    @property
    def oom_policy(self) -> str:
        """Whether the host's systemd has ``OOMPolicy=``: ``yes``, ``no`` or ``unknown``."""
        if self.low is not None and self.low >= 243:
            return "yes"
        if self.high is not None and self.high < 243:
            return "no"
        return "unknown"


def host_systemd(store: Store) -> dict[str | None, Systemd]:
    """Each host's :class:`Systemd` (once a build: the boot line is looked for in every
    journal entry)."""
    return {
        r["host"]: Systemd(r["version"], r["version"])
        if r["version"] is not None
        else Systemd(r["low"], r["high"])
        for r in run_named_dicts(store, "host_systemd")
    }


@dataclass
class IncidentFacts:
    incident: Incident
    timeline: Timeline
    oom: dict[str, Any] | None = None
    tasks: list[dict[str, Any]] = field(default_factory=list)
    consumers: list[Consumer] = field(default_factory=list)
    config: dict[str, Any] | None = None
    #: the killed server's GPUs when the host has others and they can be told (else None: all)
    unit_gpus: UnitGpus | None = None
    #: the limits the killed run settled on at startup (``limits_of.sql``: max_running_requests, …)
    limits: dict[str, Any] | None = None
    #: a gpu_fault's GPU that nvidia-smi stopped listing: (its last row, the others' last row)
    fault_gpu_gone: tuple[datetime, datetime] | None = None
    #: the CUDA OOM of a gpu_oom incident (``cuda_oom_of.sql``: ranks, gpu, tried_mib, free_mib, phase)
    cuda_oom: dict[str, Any] | None = None
    #: systemd's account of the killed run when it ended (``unit_consumed_after.sql``)
    consumed: dict[str, Any] | None = None
    #: systemd-oomd's top candidates before its kill: (cgroup, memory in use as it printed it)
    oomd_candidates: list[tuple[str, str]] = field(default_factory=list)
    recovery_config: dict[str, Any] | None = None
    unit_loads: LoadStats | None = None
    recovery_loads: LoadStats | None = None
    gpu_release: list[GpuRelease] = field(default_factory=list)
    #: the unit's stop (systemd's Stopping/Stopped of it, an operator's systemctl stop or
    #: restart) after the last samples that showed its released GPUs' memory held, before the
    #: death: that release was the stop's, not the death's (``release_stop.py``)
    gpu_freed_by_stop: TimelineEvent | None = None
    gpu_procs_after: list[dict[str, Any]] = field(default_factory=list)
    #: memory left behind after the kill (GPUs still holding it past the grace), freed later:
    #: the sample at which the last of those GPUs fell to the freed level, before the recovery
    #: load began
    gpu_freed_late: LateRelease | None = None
    #: the host booted again after the kill, before the service was back (or within the hour)
    reboot: Reboot | None = None
    #: the host's systemd (the settings advice may name depend on its version)
    systemd: Systemd = field(default_factory=Systemd)
    #: a kill no OOM record dates (cause ``signal``): the kernel's OOM kills of the same unit
    #: whose time could not be told (``undated_kills.sql``) — most likely this one
    undated_kills: list[dict[str, Any]] = field(default_factory=list)
    #: other processes a CUDA OOM named as holding GPU memory (``Process 88001 has 118.20 GiB
    #: memory in use``): pid, GiB, and what nvidia-smi showed of them (name, GPUs, first seen)
    gpu_holders: list[GpuHolder] = field(default_factory=list)
    #: the killed run's HiCache host-memory pools (rows of hicache_allocs_before.sql)
    hicache: list[dict[str, Any]] = field(default_factory=list)
    #: the host's servers that went on serving after the kill of a unit that ran none
    #: (:attr:`Incident.serving` False)
    served_on: list[str] = field(default_factory=list)
    #: a stop timeout: when systemd began stopping the unit (SIGTERM; the server stopped taking
    #: requests then) and that line (source_id, line_no)
    stop_ts: datetime | None = None
    stop_at: tuple[int, int] | None = None
    #: the stop was of the serving run, to start the run that was killed (not the killed one's)
    stop_restarted: bool = False
    polls: list[dict[str, Any]] = field(default_factory=list)
    restarts: list[dict[str, Any]] = field(default_factory=list)
    #: a start that never became ready: the operator's command that began it (``ts``,
    #: ``command``, ``source_id``, ``line_no``) and, when the run before was still serving, its
    #: last statistics line (``serving``: ``ts``, ``running_req``) — the outage began there
    started_by: dict[str, Any] | None = None
    #: the first operator command after the kill, until the service was back or an hour on
    #: (``operator_after.sql``: ts, message, source_id, line_no)
    first_operator: dict[str, Any] | None = None
    offsets: list[ClockOffset] = field(default_factory=list)
    last_batch: dict[str, Any] | None = None
    gpu_used_start_mib: float | None = None
    #: the bucket of that first GPU figure (nvidia-smi may start sampling well into the window)
    gpu_used_start_ts: datetime | None = None
    gpu_used_end_mib: float | None = None
    gpu_total_mib: float | None = None
    host_avail_start_mib: float | None = None
    host_avail_end_mib: float | None = None
    #: how long before the kill that last host-memory sample was (earlyoom prints every few
    #: minutes: its last figure is not the memory at the kill); say it with
    #: :attr:`host_avail_before_s`
    host_avail_age_s: float | None = None
    #: the last host-memory sample is earlyoom's limit at the kill (this % of RAM available), not
    #: a reading: RAM available was at most ``host_avail_end_mib``, and in use grew by at least
    #: :attr:`host_growth_mib` (and its rate)
    host_avail_limit_pct: float | None = None
    host_total_mib: float | None = None
    token_usage_max: float | None = None
    queue_max: int | None = None
    #: when requests began to wait in the queue before the kill (the first batch line with
    #: #queue-req > 0 after the last with an empty queue in the window) and that line
    queue_start_ts: datetime | None = None
    queue_start_at: tuple[int, int] | None = None
    #: running requests at the first and the last batch line of the window
    running_first: int | None = None
    running_last: int | None = None
    #: host RAM in use (total − available) before and after the queue started: MiB grown and
    #: minutes, before then after
    host_queue_split: tuple[float, float, float, float] | None = None
    #: host RAM in use grew at this rate (MiB per minute) over the last ten minutes up to the last
    #: sample (at the kill, or an old reading: :attr:`host_avail_before_s`); not rounded: every
    #: section says it with ``size_mib``, which rounds it once in the unit it shows (a tenth of a
    #: GiB times 1024 read "307 MiB" for 256–358 MiB a minute)
    host_rate_mib_min: float | None = None
    #: the first sample of that rate's span (it ends at the last sample)
    host_rate_from: datetime | None = None
    #: host RAM in use (total − available, MiB) at each sample up to the kill
    host_used: list[tuple[datetime, float]] = field(default_factory=list)
    retractions: int = 0
    retracted_reqs: int = 0
    first_retraction: tuple[datetime, int, int] | None = None  # time, source_id, line_no
    #: the operator's systemctl commands naming the unit in the minutes before the killed
    #: instance started (ts, command, source_id, line_no)
    start_commands: list[dict[str, Any]] = field(default_factory=list)
    #: systemd's memory peaks of the unit's earlier runs (ts, memory_peak_bytes, source_id,
    #: line_no), latest first: how close the workload ran to its limit before
    earlier_peaks: list[dict[str, Any]] = field(default_factory=list)
    #: a pod's container: its Pod object's spec and status, its events (``kubernetes.py``)
    k8s: K8sFacts | None = None
    #: the unit's lines in files with no times (``journalctl -o cat``), placed by their order
    #: around the kill's own lines, or not placeable (``undated.py``)
    undated: Undated = field(default_factory=Undated)

    @property
    def gpu_flat(self) -> bool | None:
        """GPU memory did not grow before the kill (within 2 % of the card)."""
        if self.gpu_used_start_mib is None or self.gpu_used_end_mib is None or not self.gpu_total_mib:
            return None
        return abs(self.gpu_used_end_mib - self.gpu_used_start_mib) <= 0.02 * self.gpu_total_mib

    @property
    def host_avail_before_s(self) -> float | None:
        """How long before the kill the last host-memory sample was, when that was more than
        :data:`SAMPLE_AT_KILL_S` (then its figure is not the memory at the kill, and the report
        says when it was); None when it was at the kill, or there is none. The one place that
        decides it."""
        age = self.host_avail_age_s
        return age if age is not None and age > SAMPLE_AT_KILL_S else None

    @property
    def host_growth_mib(self) -> float | None:
        """How much host RAM in use grew (negative: fell) over the window, from its first
        host-memory sample to its last before the kill, rounded once to a tenth of a GiB: every
        sentence that states it (Summary, Trigger, the memory facts, the rules) says this figure,
        not its own rounding of it. None without two samples (one measures no growth).

        When the last sample is earlyoom's limit at the kill, a lower bound: the growth up to its
        last reading (:attr:`host_reading_growth_mib`) plus at least the growth after it
        (:attr:`host_end_growth_mib`), as those two figures say it; None when that bound is not
        above zero (it says neither that memory grew over the window nor that it fell)."""
        if self.host_avail_start_mib is None or self.host_avail_end_mib is None:
            return None
        if len(host_samples(self.timeline)) < 2:
            return None
        if self.host_avail_limit_pct is None:
            return _tenth_gib(self.host_avail_start_mib - self.host_avail_end_mib)
        grew = (self.host_reading_growth_mib or 0.0) + (self.host_end_growth_mib or 0.0)
        return grew if grew > 0 else None

    @property
    def host_reading_growth_mib(self) -> float | None:
        """How much host RAM in use grew (negative: fell) from the window's first earlyoom
        reading to its last (limits left out), rounded once; None without two readings."""
        readings = [p for p in host_samples(self.timeline) if p[0] not in self.timeline.host_limits]
        return _tenth_gib(readings[0][1] - readings[-1][1]) if len(readings) >= 2 else None

    @property
    def host_end_growth_mib(self) -> float | None:
        """How much host RAM in use grew at least from earlyoom's last reading to its limit at
        the kill (above zero: :func:`host_samples` keeps a limit only below that reading),
        rounded once; None when the last sample is no limit after a reading."""
        host = host_samples(self.timeline)
        if self.host_avail_limit_pct is None or len(host) < 2:
            return None
        return _tenth_gib(host[-2][1] - host[-1][1])

    @property
    def host_reading_ts(self) -> datetime | None:
        """When earlyoom's last reading before the kill was (its limit at the kill is none)."""
        readings = [p for p in host_samples(self.timeline) if p[0] not in self.timeline.host_limits]
        return readings[-1][0] if readings else None

    @property
    def host_reading_before_s(self) -> float | None:
        """How long before the kill earlyoom's last reading was, when more than
        :data:`SAMPLE_AT_KILL_S` (as :attr:`host_avail_before_s`, but of that reading, also when
        its limit at the kill follows it); None when it was at the kill, or there is none."""
        ts = self.host_reading_ts
        age = (self.timeline.kill_ts - ts).total_seconds() if ts is not None else None
        return age if age is not None and age > SAMPLE_AT_KILL_S else None


def _tenth_gib(mib: float) -> float:
    """``mib`` rounded once to a tenth of a GiB, in MiB."""
    return round(mib / 1024, 1) * 1024


def top_consumers(tasks: list[dict[str, Any]], page_kb: int = 4) -> list[Consumer]:
    """The task table grouped by process name, biggest RSS first.

    >>> rows = [{"name": "llm::scheduler", "rss_pages": 100}, {"name": "llm::scheduler", "rss_pages": 100},
    ...         {"name": "python3", "rss_pages": 50}]
    >>> [(c.name, c.processes, c.rss_kb, round(c.share, 2)) for c in top_consumers(rows)]
    [('llm::scheduler', 2, 800, 0.8), ('python3', 1, 200, 0.2)]
    """
    groups: dict[str, list[int]] = {}
    for t in tasks:
        rss = t.get("rss_pages")
        if rss is None:
            continue
        groups.setdefault(str(t.get("name")), []).append(int(rss) * page_kb)
    total = sum(sum(v) for v in groups.values()) or 1
    out = [Consumer(name, len(v), sum(v), sum(v) / total) for name, v in groups.items()]
    out.sort(key=lambda c: -c.rss_kb)
    return out


#: the page sizes kernels run with (x86_64 4 KiB; arm64 4, 16 or 64 KiB; ppc64le 64 KiB)
PAGE_SIZES_KB = (4, 16, 64)


def page_kb_of(oom: dict[str, Any] | None, tasks: list[dict[str, Any]]) -> int:
    """The host's page size, learnt from the kill: the kill line gives the victim's RSS in kB,
    the task table the same process's RSS in pages (4 KiB when they do not meet).

    >>> kill = {"victim_pid": 7, "anon_rss_kb": 6400, "file_rss_kb": 0, "shmem_rss_kb": 0}
    >>> page_kb_of(kill, [{"pid": 7, "rss_pages": 100, "rss_anon_pages": 100}])
    64
    >>> page_kb_of(kill, [{"pid": 8, "rss_pages": 100}]), page_kb_of(None, [])
    (4, 4)
    """
    if not oom or oom.get("victim_pid") is None:
        return 4
    task = next((t for t in tasks if t.get("pid") == oom["victim_pid"]), None)
    if task is None:
        return 4
    if task.get("rss_anon_pages") and oom.get("anon_rss_kb"):
        kb, pages = int(oom["anon_rss_kb"]), int(task["rss_anon_pages"])
    elif task.get("rss_pages") and oom.get("anon_rss_kb") is not None:
        kb = sum(int(oom.get(k) or 0) for k in ("anon_rss_kb", "file_rss_kb", "shmem_rss_kb"))
        pages = int(task["rss_pages"])
    else:
        return 4
    if pages < 16 or kb <= 0:
        return 4  # too small a process to tell the ratio from rounding
    ratio = kb / pages
    best = min(PAGE_SIZES_KB, key=lambda size: abs(ratio - size) / size)
    return best if abs(ratio - best) / best < 0.2 else 4


def kill_second_end(kill: datetime) -> datetime:
    """The last instant the kill may have been: a kill stamped in whole seconds (syslog, short
    journal modes) happened somewhere in that second, after any line stamped finer in it.

    >>> from datetime import UTC
    >>> kill_second_end(datetime(2026, 6, 1, 20, 46, 12, tzinfo=UTC)).microsecond
    999999
    >>> kill_second_end(datetime(2026, 6, 1, 20, 46, 12, 5, tzinfo=UTC)).microsecond
    5
    """
    return kill + timedelta(microseconds=999_999) if kill.microsecond == 0 else kill


def kill_bound(incident: Incident, kill: datetime) -> datetime:
    """The last instant the kill may have been, from every record of it: a kill dated through a
    boot anchor (half a second on from whole-second stamps) that another source stamps in whole
    seconds happened somewhere in that second.

    >>> from datetime import UTC
    >>> from .model import Evidence
    >>> t = datetime(2026, 9, 24, 20, 34, 23, tzinfo=UTC)
    >>> inc = Incident(1, "h", t + timedelta(microseconds=500049), "a.service", "host_oom", 0.9)
    >>> inc.evidence = [Evidence("oom_kill", t, 1, 39, "k", "h"), Evidence("oom_kill", inc.ts, 3, 42, "k", "h")]
    >>> kill_bound(inc, inc.ts).isoformat()
    '2026-09-24T20:34:23.999999+00:00'
    """
    ends = [
        kill_second_end(e.ts)
        for e in incident.evidence
        if e.kind == "oom_kill" and e.ts is not None and abs((e.ts - kill).total_seconds()) < 1
    ]
    if any(
        e.kind == "oom_kill" and e.ts == kill and e.raw.get("ts_inferred") == "minute"
        for e in incident.evidence
    ):
        # a kill known to its minute only (dmesg -e/-H), placed at the minute's start: it came
        # somewhere in that minute, and the server's lines of it are from before its death
        ends.append(kill.replace(second=0, microsecond=0) + timedelta(minutes=1, microseconds=-1))
    return max([kill_second_end(kill), *ends])


def _last_batch(store: Store, incident: Incident, kill: datetime) -> dict[str, Any] | None:
    """The killed run's last statistics line up to the kill."""
    run_start = incident.killed_load.start_ts if incident.killed_load is not None else None
    p = {
        "unit": incident.unit,
        "source": incident.server_source,
        "before": kill_bound(incident, kill),
        "host": incident.host,
        "since": run_start,
    }
    batch = run_named_dicts(store, "last_batch_before", p)
    return batch[0] if batch else None


def _config_of(store: Store, incident: Incident, kill: datetime) -> dict[str, Any] | None:
    """The killed unit's server configuration before the kill."""
    if not incident.unit and incident.server_source is None:
        return None
    cfg = run_named_dicts(
        store,
        "server_config_of",
        {"unit": incident.unit, "source": incident.server_source, "before": kill, "host": incident.host},
    )
    return cfg[0] if cfg else None


def gather(
    store: Store,
    incident: Incident,
    *,
    window_s: float,
    all_loads: list[LoadStats],
    offsets: list[ClockOffset],
    one_host: bool = True,
    systemd: dict[str | None, Systemd] | None = None,
) -> IncidentFacts:
    """Everything the rules and the report need of one incident, read from the store.
    ``one_host``: the store names one host at most (its host-less rows are that host's);
    ``systemd``: :func:`host_systemd` (read once a build; None: read here)."""
    kill = incident.ts
    assert kill is not None
    after = seconds_after(kill, incident.recovered_ts)
    config = _config_of(store, incident, kill)
    reboot = _reboot_after(store, incident)
    released = _gpus_after_kill(store, incident, _next_load(incident, all_loads))
    gpus = unit_gpus(store, incident, config, released)
    tl = memory_timeline(
        store,
        kill_ts=kill,
        unit=incident.unit,
        host=incident.host,
        window_s=window_s,
        after_s=after,
        gpus=gpus.keys if gpus else None,
        ended=incident_end(incident),
        source=incident.server_source,
    )
    facts = IncidentFacts(
        incident=incident, timeline=tl, offsets=offsets, config=config, unit_gpus=gpus, reboot=reboot
    )
    known = host_systemd(store) if systemd is None else systemd
    facts.systemd = known.get(incident.host) or (known.get(None) if one_host else None) or Systemd()
    if incident.oom_id is not None:
        rows = run_named_dicts(store, "oom_kill_detail", {"oom_id": incident.oom_id})
        facts.oom = rows[0] if rows else None
        facts.tasks = run_named_dicts(store, "oom_tasks_of", {"oom_id": incident.oom_id})
        facts.consumers = top_consumers(facts.tasks, page_kb_of(facts.oom, facts.tasks))
    if incident.unit or incident.server_source is not None:
        _unit_facts(store, facts, kill)
    _undated_facts(store, facts)
    _restarts(facts)
    # the history up to this incident (its recovery, or an hour on when none came): a report
    # written today reads the same after later nights are ingested
    until = incident.recovered_ts or kill + timedelta(hours=1)
    facts.unit_loads = up_to(stats_of(incident.killed_load, incident.unit, all_loads, incident.host), until)
    if incident.recovery_unit or incident.recovery_load is not None:
        # (a recovery no unit is named for, a server started by hand, has its log's loads)
        rec = stats_of(incident.recovery_load, incident.recovery_unit, all_loads, incident.host)
        facts.recovery_loads = up_to(rec, until)
    facts.k8s = k8s_facts(store, incident, until)
    acts = run_named_dicts(store, "operator_after", {"after": kill, "until": until, "host": incident.host})
    facts.first_operator = acts[0] if acts else None
    if incident.recovery_unit:
        _recovery_facts(store, facts)
    _gpu_release(store, facts, released)
    incident.serving, facts.served_on = _serving(store, facts, kill, one_host)
    _cause_facts(store, facts, kill)
    _summarise_timeline(facts)
    return facts


#: process names of a PyTorch server's processes that no engine's prefix names (vLLM's worker
#: threads and torchrun's ranks show as its main thread)
_TORCH_COMMS = ("pt_main_thread", "pt_elastic", "torchrun")


def _server_named(incident: Incident) -> bool:
    """A victim, or the unit itself, named like an inference server's process or unit."""
    from ..engines import engines

    names = [v.comm.lower() for v in incident.victims if v.comm] + [(incident.unit or "").lower()]
    return any(
        n.startswith(GPU_COMMS + _TORCH_COMMS)
        or any(e.owns_process(n) or e.names(n) for e in engines().values())
        for n in names
    )


def _serving(
    store: Store, facts: IncidentFacts, kill: datetime, one_host: bool
) -> tuple[bool | None, list[str]]:
    """Whether the killed unit served (:attr:`Incident.serving`): its own server lines say it
    did; none of them, while the host's other servers went on serving after the kill and no
    server run there is left without a unit, says it did not (a neighbour a node OOM took) —
    unless it or a victim is named like a server (a server whose logs were not given), GPU
    memory fell at the kill, or another unit's start was taken as its recovery. And those
    servers, when it did not."""
    incident = facts.incident
    if incident.killed_load is not None or incident.server_source is not None:
        return True, []
    if incident.unit is None:
        return None, []
    params = {"unit": incident.unit, "host": incident.host, "kill": kill, "one_host": one_host}
    (r,) = run_named_dicts(store, "victim_serving", params)
    if r["own"]:
        return True, []
    others = [str(u) for u in r["others_after"] or []]
    gpus_freed = any(g.freed and held_before(g) for g in facts.gpu_release)
    if not others or r["unlinked"] or gpus_freed or incident.recovery_guessed or _server_named(incident):
        return None, []
    return False, others


def held_before(g: GpuRelease) -> bool:
    """Whether a GPU held memory before the kill (unknown counts as held): an idle GPU — one the
    killed server never used, as with a container given some of the host's GPUs — released
    nothing when it died."""
    return g.before_mib is None or g.before_mib > GPU_FREED_MIB


def _unit_facts(store: Store, facts: IncidentFacts, kill: datetime) -> None:
    """What the killed unit's own lines say before and around the kill."""
    incident, tl = facts.incident, facts.timeline
    unit, host = incident.unit, incident.host
    facts.last_batch = _last_batch(store, incident, kill)
    run_start = incident.killed_load.start_ts if incident.killed_load is not None else None
    window = {
        "unit": unit,
        "source": incident.server_source,
        "since": run_start,
        "before": kill,
        "host": host,
    }
    limits = run_named_dicts(store, "limits_of", window)
    facts.limits = limits[0] if limits else None
    facts.hicache = run_named_dicts(store, "hicache_allocs_before", window)
    queued = run_named_dicts(store, "queue_start_before", {**window, "since": tl.start})
    if queued:
        facts.queue_start_ts = queued[0]["ts"]
        facts.queue_start_at = (int(queued[0]["source_id"]), int(queued[0]["line_no"]))
    incident.last_activity_ts = _last_activity(
        store, (unit, incident.server_source), kill, host, kill_bound(incident, kill)
    )
    if facts.last_batch:
        incident.running_at_kill = facts.last_batch["running_req"]
        incident.queued_at_kill = facts.last_batch["queue_req"]
    if unit is None:
        return  # (systemd's and the kernel's lines about a unit: none is named)
    until = incident.recovered_ts or kill + timedelta(hours=1)
    facts.restarts = run_named_dicts(
        store, "unit_restarts", {"unit": unit, "since": kill, "until": until, "host": host}
    )
    facts.earlier_peaks = run_named_dicts(
        store, "unit_memory_peaks", {"unit": unit, "before": kill, "host": host}
    )
    killed = incident.killed_load
    if killed is not None and killed.start_ts is not None and killed.start_ts < tl.start:
        facts.start_commands = run_named_dicts(
            store, "operator_before", {"unit": unit, "before": killed.start_ts, "host": host}
        )
    if killed is not None and killed.start_ts is not None and killed.never_ready:
        facts.started_by = _started_by(store, unit, killed.start_ts, host)


#: a run's last statistics line this close before the command that restarted it: it was serving
SERVING_BEFORE = timedelta(minutes=5)


def _started_by(store: Store, unit: str, start: datetime, host: str | None) -> dict[str, Any] | None:
    """The operator's command that began a start that failed (the last one naming the unit in
    the five minutes before it), and the run it stopped if that one was serving."""
    cmds = run_named_dicts(
        store, "operator_before", {"unit": unit, "before": start + timedelta(seconds=1), "host": host}
    )
    if not cmds:
        return None
    cmd = dict(cmds[-1])
    p = {"unit": unit, "source": None, "before": cmd["ts"], "host": host, "since": None}
    last = run_named_dicts(store, "last_batch_before", p)
    served = last[0] if last and cmd["ts"] - last[0]["ts"] <= SERVING_BEFORE else None
    cmd["serving"] = {"ts": served["ts"], "running_req": served["running_req"]} if served else None
    return cmd


def _undated_facts(store: Store, facts: IncidentFacts) -> None:
    """The unit's lines in files with no times, placed around the kill (``undated.py``); the
    restart jobs among those after it count as its restarts (with no time: ``ts`` None)."""
    inc = facts.incident
    if inc.unit is None:
        return
    rows = run_named_dicts(store, "undated_lines", {"unit": inc.unit, "host": inc.host})
    facts.undated = place(rows, inc.kill_rank)
    if facts.restarts:
        return  # (a dated journal tells them, and when)
    facts.restarts = [
        {
            "ts": None,
            "restart_count": ln.restart_count,
            "source_id": ln.source_id,
            "line_no": ln.line_no,
            "message": ln.message,
        }
        for ln in facts.undated.restarts_after()
    ]


def _restarts(facts: IncidentFacts) -> None:
    """The incident's restart count from systemd's restart jobs (one that hit the start limit
    never happened)."""
    incident = facts.incident
    if not facts.restarts:
        return
    counts = [r["restart_count"] for r in facts.restarts if r["restart_count"] is not None]
    incident.restart_count = max(counts) if counts else len(facts.restarts)
    dated = [r["ts"] for r in facts.restarts if r["ts"] is not None]
    if not dated:
        if facts.undated.start_limit_after_restarts():
            incident.restart_count -= 1
        return
    last = max(dated)
    if any(
        ev.origin == "systemd" and ev.unit == incident.unit and ev.kind == "start_limit_hit" and ev.ts >= last
        for ev in facts.timeline.events
    ):
        incident.restart_count -= 1


def _recovery_facts(store: Store, facts: IncidentFacts) -> None:
    """The recovery unit's configuration and the health polls during its load."""
    incident = facts.incident
    rec = incident.recovery_load
    if rec is None or rec.ready_ts is None:
        return
    cfg = run_named_dicts(
        store,
        "server_config_of",
        {
            "unit": incident.recovery_unit,
            "source": incident.recovery_source,
            "before": rec.ready_ts,
            "host": incident.host,
        },
    )
    facts.recovery_config = cfg[0] if cfg else None
    facts.polls = run_named_dicts(
        store,
        "health_polls",
        {
            "unit": incident.recovery_unit,
            "source": incident.recovery_source,
            "from": rec.start_ts or incident.ts,
            "to": rec.ready_ts,
            "host": incident.host,
        },
    )


def _cause_facts(store: Store, facts: IncidentFacts, kill: datetime) -> None:
    """The facts only some causes need."""
    incident = facts.incident
    if incident.cause == "signal" and incident.unit:
        _undated_kills(store, facts)
    if incident.cause == "gpu_fault":
        facts.fault_gpu_gone = _fault_gpu_gone(store, incident)
    if incident.cause in ("oomd", "earlyoom", "host_oom") and incident.unit:
        # the unit's own peak, where no cgroup limit line says what it held
        rows = run_named_dicts(
            store, "unit_consumed_after", {"unit": incident.unit, "kill": kill, "host": incident.host}
        )
        facts.consumed = rows[0] if rows else None
    if incident.cause == "oomd":
        facts.oomd_candidates = oomd_candidates(
            [
                str(r["message"])
                for r in run_named_dicts(store, "oomd_candidates", {"host": incident.host, "kill": kill})
            ]
        )
    if incident.cause == "gpu_oom":
        _gpu_holders(store, facts)
        ev = next((e for e in incident.evidence if e.kind == "cuda_oom"), None)
        if ev is not None:
            rows = run_named_dicts(store, "cuda_oom_of", {"source_id": ev.source_id, "line_no": ev.line_no})
            facts.cuda_oom = rows[0] if rows else None
    if incident.cause == "timeout":
        stops = [
            ev
            for ev in facts.timeline.events
            if ev.origin == "systemd" and ev.unit == incident.unit and ev.kind == "stopping" and ev.ts <= kill
        ]
        if stops:
            facts.stop_ts, facts.stop_at = stops[-1].ts, (stops[-1].source_id, stops[-1].line_no)
    else:
        _stopped_to_start(facts)


def _undated_kills(store: Store, facts: IncidentFacts) -> None:
    """A kill no OOM record dates: the unit's undated kernel OOM kills, most likely this one."""
    incident = facts.incident
    facts.undated_kills = [
        r
        for r in run_named_dicts(store, "undated_kills")
        if r["unit"] == incident.unit
        and (r["host"] is None or incident.host is None or r["host"] == incident.host)
    ]
    if facts.undated_kills and "most likely this kill" not in incident.cause_explanation:
        k = facts.undated_kills[0]
        incident.cause_explanation += (
            f" — but the kernel recorded an OOM kill of pid {k['victim_pid']} in this unit's cgroup whose "
            "time could not be told (its boot is not dated by any journal given): most likely this kill"
        )


def _fault_gpu_gone(store: Store, inc: Incident) -> tuple[datetime, datetime] | None:
    """When the faulted GPU's last nvidia-smi row came, if the host's other GPUs went on being
    listed at least a minute longer (it fell off the bus, or the driver gave up on it)."""
    from ..parsers.kernel.stream import normalise_bus_id

    xid = next((e for e in inc.evidence if e.kind == "xid"), None)
    if xid is None or not xid.raw.get("bus_id") or xid.ts is None or inc.ts is None:
        return None
    bus = normalise_bus_id(str(xid.raw["bus_id"]))
    rows = run_named_dicts(
        store,
        "gpu_last_samples",
        {"host": inc.host, "from": xid.ts - timedelta(minutes=10), "to": inc.ts + timedelta(minutes=30)},
    )
    mine = [r["last_ts"] for r in rows if normalise_bus_id(str(r["bus_id"])) == bus]
    others = [r["last_ts"] for r in rows if normalise_bus_id(str(r["bus_id"])) != bus]
    if not mine or not others:
        return None
    last, rest = max(mine), max(others)
    return (last, rest) if (rest - last).total_seconds() >= 60 else None


def left_processes(facts: IncidentFacts) -> list[tuple[str, str, TimelineEvent]]:
    """The unit's processes systemd named after the kill as left running at a stop or left over
    at a start: ``(pid, name, event)`` for every such line, in time order. ``Processes still
    around after final SIGKILL`` names none: the processes systemd sent SIGKILL in that stop
    (``Killing process N (name) with signal SIGKILL``) are they."""
    inc = facts.incident
    out = []
    sigkilled: list[tuple[str, str]] = []
    for ev in facts.timeline.events:
        if ev.unit != inc.unit or not inc.ts or ev.ts < inc.ts:
            continue
        body = ev.message.partition(": ")[2]
        if ev.kind == "killing":
            sent = sigkilled_process(body)
            sigkilled += [sent] if sent is not None else []
        elif ev.kind in ("left_running", "left_over"):
            proc = left_process(body)
            if proc is not None:
                out.append((*proc, ev))
            elif body.startswith("Processes still around after final SIGKILL"):
                out += [(pid, name, ev) for pid, name in sigkilled]
                sigkilled = []
    return out


def blocked_restarts(facts: IncidentFacts) -> int:
    """How many starts of the unit after the kill found its old processes still in its cgroup
    (systemd's ``Found left-over process``) and never became ready (failed, killed, stopped, or
    lost in a reboot)."""
    inc = facts.incident
    found = [ev.ts for _pid, _name, ev in left_processes(facts) if ev.kind == "left_over"]
    if inc.ts is None or not found or facts.unit_loads is None:
        return 0
    rec = inc.recovery_load
    n = 0
    for ld in facts.unit_loads.loads:
        if ld.start_ts is None or ld.start_ts < inc.ts or not ld.never_ready:
            continue
        if rec is not None and ld.load_id == rec.load_id:
            continue
        if any(abs((t - ld.start_ts).total_seconds()) <= 5 for t in found):
            n += 1
    return n


def killed_in_vain(facts: IncidentFacts) -> bool:
    """Whether systemd tried to end the unit's processes and could not (a final SIGKILL they
    outlived: stuck in the kernel), as opposed to leaving them running (KillMode=process/none)."""
    inc = facts.incident
    return any(
        ev.unit == inc.unit
        and inc.ts is not None
        and ev.ts >= inc.ts
        and (
            ev.message.partition(": ")[2].startswith("Processes still around after final SIGKILL")
            or "'final-sigkill' timed out" in ev.message
        )
        for ev in facts.timeline.events
    )


def oomd_candidates(lines: list[str]) -> list[tuple[str, str]]:
    """The cgroups systemd-oomd listed as its top candidates (its last list), with their memory.

    >>> oomd_candidates(["Considered 7 cgroups for killing, top candidates were:",
    ...     "Path: /system.slice/a.service", "Memory Pressure Limit: 0.00%", "Current Memory Usage: 402.7G",
    ...     "Path: /system.slice/b.service", "Current Memory Usage: 96.1G", "Killed /system.slice/a.service …"])
    [('/system.slice/a.service', '402.7G'), ('/system.slice/b.service', '96.1G')]
    """
    out: list[tuple[str, str]] = []
    path = None
    for line in lines:
        if line.startswith("Considered "):
            out, path = [], None
        elif line.startswith("Path: "):
            path = line[6:].strip()
        elif line.startswith("Current Memory Usage: ") and path is not None:
            out.append((path, line.split(": ", 1)[1].strip()))
            path = None
    return out


def _stopped_to_start(facts: IncidentFacts) -> None:
    """A run killed while loading, started by stopping a serving one (``systemctl restart``, a
    deploy): the service was out from that stop, not from the kill."""
    inc, tl = facts.incident, facts.timeline
    load = inc.killed_load
    if load is None or load.start_ts is None or not load.never_ready:
        return
    start = load.start_ts
    stops = [
        ev
        for ev in tl.events
        if ev.origin == "systemd" and ev.unit == inc.unit and ev.kind == "stopping" and ev.ts <= start
    ]
    if not stops:
        return
    stop = stops[-1]
    died = {"oom_kill", "main_exited", "failed"}
    if any(ev.unit == inc.unit and ev.kind in died and stop.ts < ev.ts < start for ev in tl.events):
        return  # the run before died in between: that death is where this outage began
    facts.stop_ts, facts.stop_at = stop.ts, (stop.source_id, stop.line_no)
    facts.stop_restarted = True


def _gpu_holders(store: Store, facts: IncidentFacts) -> None:
    """The processes the CUDA OOM named as holding GPU memory, with nvidia-smi's view of them
    from an hour before the kill to the end of the window."""
    inc = facts.incident
    assert inc.ts is not None
    messages = [e.detail for e in inc.evidence if e.kind in ("cuda_oom", "server_cuda_oom")]
    holders = gpu_holders(messages)
    if not holders:
        return
    rows = run_named_dicts(
        store,
        "gpu_processes_of",
        {
            "pids": [h.pid for h in holders],
            "from": inc.ts - timedelta(hours=1),
            "to": facts.timeline.end,
            "host": inc.host,
        },
    )
    seen = {int(r["pid"]): r for r in rows}
    for h in holders:
        r = seen.get(h.pid)
        if r is not None:
            h.name, h.gpus, h.first_ts = r["process_name"], int(r["gpus"]), r["first_ts"]
            h.at = (int(r["source_id"]), int(r["line_no"]))
    load = inc.killed_load
    own = {v.pid for v in inc.victims if v.pid is not None}
    if load is not None and load.pid is not None:
        own.add(load.pid)
    facts.gpu_holders = others_on_the_gpu(holders, messages, load.start_ts if load is not None else None, own)


def others_on_the_gpu(
    holders: list[GpuHolder], messages: list[str], load_start: datetime | None, own: set[int]
) -> list[GpuHolder]:
    """The named processes that are not the server itself. PyTorch names the process that ran out
    as ``this process``, and every other one on the GPU as ``Process N`` — but in a container
    (another pid namespace) it does not recognise itself, and the server's own worker is then a
    ``Process N`` too. So a named pid is another process only if it is none of the server's
    known pids, and either the message named the server apart (``this process has``) or
    nvidia-smi listed the pid before the server's load began.

    >>> from datetime import UTC
    >>> t = datetime(2025, 6, 1, 14, 0, tzinfo=UTC)
    >>> h = [GpuHolder(55142, 78.2, first_ts=t + timedelta(minutes=1))]
    >>> others_on_the_gpu(h, ["… Process 55142 has 78.16 GiB memory in use. …"], t, set())
    []
    >>> len(others_on_the_gpu(h, ["… this process has 1.0 GiB memory in use."], t, set()))
    1
    >>> h[0].first_ts = t - timedelta(minutes=1)
    >>> len(others_on_the_gpu(h, ["… Process 55142 has 78.16 GiB …"], t, set())), others_on_the_gpu(h, [], t, {55142})
    (1, [])
    """
    apart = any("this process has" in m for m in messages)
    out = []
    for h in holders:
        if h.pid in own:
            continue
        earlier = h.first_ts is not None and load_start is not None and h.first_ts < load_start
        if apart or earlier:
            out.append(h)
    return out


#: how far before a kill the unit's last server line is looked for first (then, if none, further)
ACTIVITY_LOOK_S = 7200.0
#: how long after a kill (at least) a killed pid still listed by nvidia-smi is memory left behind
PROCESS_LOOK_S = 3600.0


def _last_activity(
    store: Store,
    server: tuple[str | None, int | None],
    kill: datetime,
    host: str | None = None,
    bound: datetime | None = None,
) -> datetime | None:
    """The server's last line before ``kill`` (``server``: its unit, else the source of its
    lines): within the last two hours (a scan of those rows only), else however long before.
    ``bound``: the last instant the kill may have been (:func:`kill_bound`, as for the last
    statistics line), by default the end of its second when it is stamped in whole seconds."""
    unit, source = server
    before = bound or kill_second_end(kill)
    for since in (kill - timedelta(seconds=ACTIVITY_LOOK_S), None):
        rows = run_named_dicts(
            store,
            "last_activity_before",
            {"unit": unit, "source": source, "before": before, "since": since, "host": host},
        )
        if rows and rows[0]["ts"] is not None:
            ts: datetime = rows[0]["ts"]
            return ts
    return None


def _reboot_after(store: Store, inc: Incident) -> Reboot | None:
    """The host's next boot after the kill, up to the service's return (or an hour on): the
    earliest sign of it in any source (``reboot_after.sql``)."""
    if inc.ts is None:
        return None
    to = inc.recovered_ts or inc.ts + timedelta(seconds=PROCESS_LOOK_S)
    rows = run_named_dicts(
        store, "reboot_after", {"host": inc.host, "kill": inc.ts, "to": to, "unit": inc.unit}
    )
    if not rows:
        return None
    first = rows[0]
    exact = next((r["boot_ts"] for r in rows if r["boot_ts"] is not None and r["boot_ts"] > inc.ts), None)
    last_old = max((r["last_old_ts"] for r in rows if r["last_old_ts"] is not None), default=None)
    started = min((r["unit_started_ts"] for r in rows if r["unit_started_ts"] is not None), default=None)
    return Reboot(
        up_ts=exact or first["first_ts"],
        exact=exact is not None,
        at=(int(first["source_id"]), int(first["line_no"])),
        boot_id=next((r["boot_id"] for r in rows if r["boot_id"]), None),
        last_old_ts=last_old,
        unit_started_ts=started,
    )


def _next_load(inc: Incident, all_loads: list[LoadStats]) -> datetime | None:
    """The first load begun on the incident's host after the kill (a restart, a fallback, …)."""
    assert inc.ts is not None
    starts = [
        ld.start_ts
        for st in all_loads
        for ld in st.loads
        if ld.start_ts is not None
        and ld.start_ts > inc.ts
        and (inc.host is None or ld.host in (None, inc.host))
    ]
    return min(starts, default=None)


#: a GPU's memory that fell below this share of what it held at the kill, with a new load begun
#: before the sample, was released: the rest is the new load's (its CUDA context and first weights)
FELL_FOR_A_LOAD = 0.5


def _gpus_after_kill(store: Store, inc: Incident, next_load: datetime | None = None) -> list[dict[str, Any]]:
    """Per GPU of the host: its memory before the kill and how it fell after (``gpu_after_kill``),
    with ``freed`` set: True when it fell to ≤ 1 GiB or 5 % of before — or below half of it once
    ``next_load`` (the next load on the host) had begun, an automatic restart taking the GPUs
    before nvidia-smi's next sample — False when it did not, None with no sample after."""
    assert inc.ts is not None
    # the whole grace period, whenever the next load starts: its memory rises only once its
    # weights load (tens of seconds on), and the lowest sample is what tells the release (cut at
    # the recovery's start, a loop sampling every 30 s had no sample left to see it; F19)
    look = GPU_GRACE_S
    rows = run_named_dicts(
        store,
        "gpu_after_kill",
        {"host": inc.host, "kill": inc.ts, "after_s": look, "freed_mib": GPU_FREED_MIB},
    )
    for r in rows:
        before, after = r["before_mib"], r["min_after_mib"]
        r["freed"] = None if after is None else r["freed_ts"] is not None
        if (
            r["freed"] is False
            and next_load is not None
            and before
            and after <= FELL_FOR_A_LOAD * before
            and r["min_after_ts"] >= next_load
        ):
            r["freed"] = True
            r["freed_ts"], r["freed_source_id"], r["freed_line_no"] = (
                r["min_after_ts"],
                r["min_source_id"],
                r["min_line_no"],
            )
    return rows


@dataclass(frozen=True)
class UnitGpus:
    """The GPUs a killed server ran on, when fewer than the host's: ``indexes`` (nvidia-smi's),
    ``keys`` (every bus id, UUID and index as text that rows may name them by), and ``of`` the
    host's GPUs."""

    indexes: tuple[int, ...]
    keys: list[str]
    of: int  # the host's GPUs
    how: str = ""  # how they are known, for the report

    @property
    def text(self) -> str:
        """``GPUs 4–7`` (a run) or ``GPUs 0, 2, 4``.

        >>> UnitGpus((4, 5, 6, 7), [], 8).text, UnitGpus((0, 2), [], 8).text, UnitGpus((3,), [], 8).text
        ('GPUs 4–7', 'GPUs 0, 2', 'GPU 3')
        """
        return gpu_label_text([f"GPU {i}" for i in self.indexes])


def unit_gpus(
    store: Store, inc: Incident, config: dict[str, Any] | None, released: list[dict[str, Any]]
) -> UnitGpus | None:
    """The GPUs of the killed server when the host has others (another server on them): the
    range its server_args name (``base_gpu_id``, ``gpu_id_step``, ``tp_size`` × ``pp_size`` …), when
    nvidia-smi agrees — the GPUs whose memory fell at the death are in that range. Without that
    agreement it cannot be told (``CUDA_VISIBLE_DEVICES`` renumbers the GPUs a server sees): None,
    and every GPU of the host is read as before."""
    assert inc.ts is not None
    wanted = _arg_gpus(config)
    # the GPUs sampled around the kill: a range that covers them all tells nothing apart (the
    # common case, one server on the host: no more queries)
    seen = {int(r["gpu_index"]) for r in released if r["gpu_index"] is not None}
    if wanted is None or not wanted < seen:
        return None
    host = run_named_dicts(
        store,
        "host_gpus",
        {"host": inc.host, "from": inc.ts - timedelta(hours=1), "to": inc.ts + timedelta(hours=1)},
    )
    by_index = {int(r["gpu_index"]): r for r in host}
    if not wanted < set(by_index):
        return None  # all of them (or GPUs nvidia-smi did not list): nothing to tell apart
    freed = {
        int(r["gpu_index"])
        for r in released
        if r["freed"] and r["gpu_index"] is not None and (r["before_mib"] or 0) > GPU_FREED_MIB
    }
    how = "its arguments, and nvidia-smi saw their memory freed at the death"
    if not freed:
        return None
    if not freed <= wanted:
        if len(freed) != len(wanted) or not freed < set(by_index):
            return None
        # as many GPUs as the server takes fell empty at its death, but not the ones its
        # arguments number: CUDA_VISIBLE_DEVICES (docker --gpus) renumbered them — those are its
        wanted = freed
        how = (
            f"nvidia-smi saw exactly {len(freed)} GPUs' memory freed at the death, as many as its "
            "arguments take (renumbered by CUDA_VISIBLE_DEVICES)"
        )
    keys = []
    for i in sorted(wanted):
        r = by_index[i]
        keys += [str(i), *(r["bus_ids"] or []), *(r["uuids"] or [])]
    return UnitGpus(tuple(sorted(wanted)), keys, len(by_index), how)


def unit_gpu_keys(store: Store, inc: Incident) -> list[str] | None:
    """The killed server's GPUs as :func:`gather` tells them (bus ids, UUIDs, indexes), or None
    for every GPU of the host — for the ``timeline`` command, so it shows what the report shows."""
    if inc.ts is None or not inc.unit:
        return None
    cfg = run_named_dicts(
        store,
        "server_config_of",
        {"unit": inc.unit, "source": inc.server_source, "before": inc.ts, "host": inc.host},
    )
    gpus = unit_gpus(store, inc, cfg[0] if cfg else None, _gpus_after_kill(store, inc))
    return gpus.keys if gpus else None


_ARG_INT = lazy_re(r"\b(base_gpu_id|gpu_id_step|nnodes)=(\d+)")


def _arg_gpus(config: dict[str, Any] | None) -> set[int] | None:
    """The GPU indexes a server's arguments place it on, or None when they do not say."""
    if not config or not config.get("tp_size"):
        return None
    raw = str(config.get("raw") or "")
    ints = {k: int(v) for k, v in _ARG_INT.findall(raw)}
    base, step, nodes = (
        ints.get("base_gpu_id", 0),
        ints.get("gpu_id_step", 1) or 1,
        ints.get("nnodes", 1) or 1,
    )
    n = int(config["tp_size"]) * int(config.get("pp_size") or 1)
    dp = int(config.get("dp_size") or 1)
    if dp > 1 and "enable_dp_attention=True" not in raw:
        n *= dp  # data-parallel replicas, each on tp_size GPUs of their own
    per_node = max(1, n // nodes)
    return {base + i * step for i in range(per_node)}


def _gpu_release(store: Store, facts: IncidentFacts, rows: list[dict[str, Any]]) -> None:
    inc = facts.incident
    assert inc.ts is not None
    mine = facts.unit_gpus
    held: list[datetime] = []  # the last samples that showed the released GPUs' memory held
    for r in rows:
        if mine is not None and r["gpu_index"] not in mine.indexes:
            continue  # another server's GPU
        before, after, freed = r["before_mib"], r["min_after_mib"], r["freed"]
        if freed and r["before_ts"] is not None and before is not None and before > GPU_FREED_MIB:
            held.append(r["before_ts"])
        secs = None
        if freed is not None:
            secs = (r["freed_ts"] - inc.ts).total_seconds() if r["freed_ts"] else None
        label = f"GPU {r['gpu_index']}" if r["gpu_index"] is not None else str(r["gpu"])
        at = (
            (int(r["freed_source_id"]), int(r["freed_line_no"]))
            if r["freed_ts"] and r["freed_source_id"] is not None
            else None
        )
        facts.gpu_release.append(GpuRelease(label, before, after, secs, freed, at))
    facts.gpu_freed_by_stop = stop_before_release(store, inc, facts.timeline.events, held)
    left = {int(pid) for pid, _name, _ev in left_processes(facts)}
    pids = sorted({v.pid for v in inc.victims if v.pid is not None} | set(unit_task_pids(facts)) | left)
    load = inc.killed_load
    if not pids and load is not None and load.start_ts is not None:
        # no kernel record names the server's processes (a CUDA OOM, a signal, a timeout): the
        # GPU processes that appeared with its load are its own
        procs = run_named_dicts(
            store,
            "gpu_pids_of_load",
            {"started": load.start_ts, "kill": inc.ts, "host": inc.host, "gpus": mine.keys if mine else None},
        )
        pids = [int(r["pid"]) for r in procs]
    if pids:
        # sightings until the service is back, and for an hour at least: a pid seen later may
        # have been given to another process since
        until = max(inc.recovered_ts or inc.ts, inc.ts + timedelta(seconds=PROCESS_LOOK_S))
        facts.gpu_procs_after = run_named_dicts(
            store,
            "gpu_processes_after",
            {"pids": pids, "kill": inc.ts, "grace_s": 15.0, "until": until, "host": inc.host},
        )
    facts.gpu_freed_late = _late_release(store, facts, [r for r in rows if r["freed"] is False])
    known = [g.freed for g in facts.gpu_release if g.freed is not None]
    if facts.gpu_procs_after:
        inc.gpu_memory_freed = False
    elif known:
        inc.gpu_memory_freed = all(known)


#: the longest silence of nvidia-smi before the sample that shows left-behind memory freed for
#: that sample to tell when it was freed (after a longer one, only that it was, some time in it)
LATE_GAP_S = 60.0
#: commands after which left-behind GPU memory is freed: a kill, a GPU reset
_FREEING = frozenset({"kill", "pkill", "killall"})


def _late_release(store: Store, facts: IncidentFacts, held: list[dict[str, Any]]) -> LateRelease | None:
    """When GPU memory the kill left behind (``held``: rows of ``gpu_after_kill`` not freed in
    the grace) was freed: every one of those GPUs at the freed level, before the recovery load
    began (it takes memory again) or, with none, within the hour."""
    inc = facts.incident
    mine = facts.unit_gpus
    held = [r for r in held if mine is None or r["gpu_index"] in mine.indexes]
    if inc.ts is None or not held:
        return None
    rec = inc.recovery_load
    until = inc.ts + timedelta(seconds=PROCESS_LOOK_S)
    if rec is not None and rec.start_ts is not None:
        until = min(until, rec.start_ts + timedelta(seconds=10))
    elif inc.recovered_ts is not None:
        until = min(until, inc.recovered_ts)
    if facts.reboot is not None:
        until = min(until, facts.reboot.up_ts)  # a reboot frees everything: no sample tells when
    rows = run_named_dicts(
        store,
        "gpu_freed_later",
        {
            "host": inc.host,
            "from": inc.ts,
            "to": until,
            "freed_mib": GPU_FREED_MIB,
            "gap_s": LATE_GAP_S,
            "gpus": [str(r["gpu"]) for r in held],
        },
    )
    if len(rows) < len(held):
        return None  # one of them still held it
    last = max(rows, key=lambda r: (r["freed_ts"], r["line_no"]))
    ts = last["freed_ts"]
    command = None
    for ev in facts.timeline.events:
        if ev.origin != "operator" or not (inc.ts <= ev.ts <= ts):
            continue
        words = ev.message.split()
        name = words[0].rsplit("/", 1)[-1] if words else ""
        if name in _FREEING or (name == "nvidia-smi" and {"-r", "--gpu-reset"} & set(words)):
            command = ev  # the last one before the memory was freed
    labels = tuple(f"GPU {r['gpu_index']}" if r["gpu_index"] is not None else str(r["gpu"]) for r in rows)
    at = (int(last["source_id"]), int(last["line_no"])) if last["source_id"] is not None else None
    return LateRelease(ts, at, labels, command)


def unit_task_pids(facts: IncidentFacts) -> list[int]:
    """Pids of the kernel's task table when it lists only the killed unit's processes: a
    memory-cgroup OOM of the unit's own cgroup. A global OOM's table lists every process of the
    host, most of them alive and not the unit's."""
    oom, unit = facts.oom, facts.incident.unit
    if not oom or oom.get("scope") != "memcg" or unit is None:
        return []
    if not cgroup_is_units(unit_of(oom.get("oom_memcg") or oom.get("cgroup")), facts.incident):
        return []
    return [int(t["pid"]) for t in facts.tasks if t.get("pid") is not None]


#: the span over which the growth rate at the kill is measured
RATE_SPAN_S = 600.0
#: a host-memory sample at most this long before the kill is the memory at the kill
SAMPLE_AT_KILL_S = 60.0


def host_samples(tl: Timeline) -> list[tuple[datetime, float, float]]:
    """The host-memory samples up to the kill: earlyoom's readings, then its limit at the kill
    when that is the last line — the memory at the kill, where its last reading can be minutes
    old. A limit is a bound (RAM available was at or below it), kept only as the last sample and
    only below the last reading: in use grew after that reading by at least the difference,
    whatever it did before (at or above it, the limit says nothing the reading does not).

    >>> from datetime import UTC
    >>> t = datetime(2026, 1, 8, 5, 30, tzinfo=UTC)
    >>> tl = Timeline(kill_ts=t, start=t - timedelta(minutes=30), end=t, bucket_s=30.0)
    >>> tl.host_points = [(t - timedelta(minutes=25), 327677.0, 2063588.0),
    ...                   (t - timedelta(minutes=2), 365095.0, 2063588.0), (t, 203676.0, 2063588.0)]
    >>> tl.host_limits = {t: 9.87}
    >>> [a for _, a, _ in host_samples(tl)]
    [327677.0, 365095.0, 203676.0]
    >>> tl.host_points[0] = (t - timedelta(minutes=25), 150000.0, 2063588.0)  # above the first: kept
    >>> [a for _, a, _ in host_samples(tl)]
    [150000.0, 365095.0, 203676.0]
    >>> tl.host_points[-1] = (t, 400000.0, 2063588.0)  # above the last reading: no growth measured
    >>> [a for _, a, _ in host_samples(tl)]
    [150000.0, 365095.0]
    """
    host = [p for p in tl.host_points if p[0] <= tl.kill_ts]
    readings = [p for p in host if p[0] not in tl.host_limits]
    if host and host[-1][0] in tl.host_limits and (not readings or host[-1][1] < readings[-1][1]):
        return [*readings, host[-1]]
    return readings


def _host_growth(facts: IncidentFacts, host: list[tuple[datetime, float, float]]) -> None:
    """How host RAM in use grew before the kill: before the queue started, and its rate over the
    last :data:`RATE_SPAN_S` up to the last sample (at least two samples two minutes apart) —
    the kill's, or an old reading: the span begins at :attr:`IncidentFacts.host_rate_from`."""
    used = facts.host_used = [(t, tot - a) for t, a, tot in host if tot]
    if len(used) < 2:
        return
    end_t, end_used = used[-1]
    # (a span as long whether or not the last sample is at the kill, so that rates compare;
    # the report names its end when that is an old reading)
    recent = [(t, u) for t, u in used if (end_t - t).total_seconds() <= RATE_SPAN_S]
    first_t, first_used = recent[0]
    minutes = (end_t - first_t).total_seconds() / 60
    if minutes >= 2 and (facts.host_avail_limit_pct is None or end_used > first_used):
        # (below a limit, a fall is no measure: available RAM was at most that at the kill)
        facts.host_rate_mib_min = (end_used - first_used) / minutes
        facts.host_rate_from = first_t
    q = facts.queue_start_ts
    if q is not None and used[0][0] < q:
        upto = [(t, u) for t, u in used if t <= q][-1]
        start = used[0]
        facts.host_queue_split = (
            upto[1] - start[1],
            (upto[0] - start[0]).total_seconds() / 60,
            end_used - upto[1],
            (end_t - upto[0]).total_seconds() / 60,
        )


def _summarise_serving(facts: IncidentFacts, before: list[Bucket]) -> None:
    """The killed run's serving signals before the end: KV-cache usage, queue and running
    requests of its own buckets (a failed start served nothing: the run before it had the
    requests), the running requests at the end as its last statistics line says (as Impact)."""
    load = facts.incident.killed_load
    if load is not None and load.start_ts is not None:
        before = [b for b in before if b.ts >= load.start_ts]
    usages = [b.token_usage for b in before if b.token_usage is not None]
    facts.token_usage_max = max(usages) if usages else None
    queues = [b.queue_req for b in before if b.queue_req is not None]
    if facts.last_batch and facts.last_batch["queue_req"] is not None:
        # the last line can be in the kill's own second, past the last whole bucket (Impact
        # quotes it: the queue's peak must not be below it)
        queues.append(facts.last_batch["queue_req"])
    facts.queue_max = max(queues) if queues else None
    running = [b.running_req for b in before if b.running_req is not None]
    last = facts.last_batch["running_req"] if facts.last_batch else None
    if running:
        facts.running_first, facts.running_last = running[0], running[-1] if last is None else last
    else:
        facts.running_last = last


def _summarise_timeline(facts: IncidentFacts) -> None:
    before = facts.timeline.before_kill()
    gpu = [b for b in before if b.gpu_used_mib_max is not None]
    if gpu:
        facts.gpu_used_start_mib = gpu[0].gpu_used_mib_max
        facts.gpu_used_start_ts = gpu[0].ts
        facts.gpu_used_end_mib = gpu[-1].gpu_used_mib_max
        totals = [b.gpu_total_mib_sum / b.gpus for b in gpu if b.gpu_total_mib_sum and b.gpus]
        facts.gpu_total_mib = max(totals) if totals else None
    kill = facts.timeline.kill_ts
    host = host_samples(facts.timeline)
    if host:
        facts.host_avail_start_mib = host[0][1]
        facts.host_avail_end_mib = host[-1][1]
        facts.host_avail_age_s = (kill - host[-1][0]).total_seconds()
        facts.host_total_mib = host[-1][2] or None
        facts.host_avail_limit_pct = facts.timeline.host_limits.get(host[-1][0])
    _summarise_serving(facts, before)
    _host_growth(facts, host)
    facts.retractions = sum(b.retractions for b in before)
    facts.retracted_reqs = sum(b.retracted_reqs for b in before)
    facts.first_retraction = next((b.first_retraction for b in before if b.first_retraction), None)
