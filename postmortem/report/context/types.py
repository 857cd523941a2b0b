"""The report contexts' types: what the templates see (documented field by field in ``docs/report-context.md``; a test checks the two agree)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass


@dataclass
class TimelineRow:
    utc: str
    local: str
    origin: str
    event: str
    cite: str
    #: the moment of the outage this row is: ``impact start``, ``detected``, ``mitigated``,
    #: ``recovered`` (or empty)
    mark: str = ""
    #: the row belongs in the report's short timeline (else only in the appendix's full one)
    key: bool = True
    #: the row belongs in the appendix's full timeline (False: a short timeline's row that
    #: counts the rows it stands for, which the full timeline lists)
    full: bool = True


@dataclass
class QuoteError:
    line_no: int
    attempts: int
    same_at: list[str] = dataclasses.field(default_factory=list)


@dataclass
class Quote:
    title: str
    cite: str
    text: str
    left_out: int = 0
    attempts: int = 0
    errors: list[QuoteError] = dataclasses.field(default_factory=list)


@dataclass
class VictimRow:
    pid: int | None
    comm: str
    anon_rss_gib: float | None
    chosen: bool
    cite: str
    #: the same in kB, as the kernel gave it (the table prints it with ``size_kb``)
    anon_rss_kb: int | None = None
    #: earlyoom's VmRSS of it in kB (the whole resident memory; earlyoom prints no anon-rss)
    vm_rss_kb: int | None = None


@dataclass
class ConsumerRow:
    name: str
    processes: int
    rss_gib: float
    share_pct: float
    #: the same in kB (the table prints it with ``size_kb``: a small process is not "0.0 GiB")
    rss_kb: int = 0


@dataclass
class MemoryRow:
    utc: str
    host_avail_gib: float | None
    gpu_used_gib: float | None
    gpu_total_gib: float | None
    token_usage: float | None
    running: int | None
    queued: int | None
    retractions: int


@dataclass
class LoadRow:
    unit: str | None  # None: no source names the server's unit
    start_utc: str
    ready_utc: str
    load_s: float | None
    weights_s: float | None
    draft_weights_s: float | None
    kv_s: float | None
    graphs_s: float | None
    draft_graphs_s: float | None
    outcome: str
    polls: int | None
    speculative: str
    role: str
    regression: bool
    cite: str


@dataclass
class LoadSummary:
    unit: str | None
    model: str | None  # None: no line of its loads names the model
    speculative: str
    count: int
    min_s: float | None
    median_s: float | None
    p90_s: float | None
    max_s: float | None
    weights_median_s: float | None
    graphs_median_s: float | None


@dataclass
class RecommendationRow:
    severity: str
    title: str
    detail: str
    evidence: list[str]
    action: str | None
    #: the body's words: one line with the number that matters, at most three sentences
    headline: str = ""
    summary: str = ""
    rule: str = ""


@dataclass
class ActionItem:
    action: str
    #: ``mitigate``, ``prevent``, ``detect`` or ``process``
    type: str
    #: ``P1`` (from a high-severity finding), ``P2`` (medium), ``P3`` (low, and the process items)
    priority: str


@dataclass
class SourceRow:
    file: str
    format: str
    lines: int
    parsed: int
    ignored: int
    parse_issues: int
    first_utc: str
    last_utc: str
    covers_kill: bool
    notes: str


@dataclass
class GapRow:
    series: str
    detail: str


@dataclass
class OffsetRow:
    file: str
    reference: str
    offset_s: float
    method: str
    pairs: int
    note: str


@dataclass
class IssueReasonRow:
    file: str
    reason: str
    count: int


@dataclass
class ContainerRow:
    """The container the killed unit is (a ``docker:<name>`` unit)."""

    runtime: str
    name: str
    image: str
    container_id: str
    short_id: str
    cgroup: str
    #: a Kubernetes container's pod (``<namespace>/<pod>``), else ""
    pod: str = ""


@dataclass
class Impact:
    downtime_s: float | None
    downtime: str
    kill_utc: str
    recovered_utc: str
    recovery_unit: str
    recovery_named: bool
    fallback_unit: str
    running_at_kill: int | None
    queued_at_kill: int | None
    last_activity_utc: str
    silent_before_kill_s: float | None
    silent_before_kill: str
    #: that line was stamped in the kill's own second (a gap under a second is then no figure)
    same_second: bool
    gen_throughput_before: float | None
    tokens_not_served: float | None
    restart_count: int | None
    kills_last_hour: int
    #: the unit served (Incident.serving): False for a neighbour that ran no server
    serving: bool | None = None
    #: the downtime in two parts: kill → the start that brought service back, then its load
    until_start_s: float | None = None
    until_start: str = "—"
    recovery_load_s: float | None = None
    recovery_load: str = "—"
    #: out of service from a stop to ready again: a stop timeout's SIGTERM (the drain), or the
    #: stop of a serving run to start the one killed while loading
    out_of_service_s: float | None = None
    out_of_service: str = "—"
    stop_utc: str = "—"
    #: that stop was of the serving run, to start the one that was killed (not its own drain)
    stop_restarted: bool = False
    #: who brought a container back, when its runtime's restart policy did
    recovered_by: str = ""
    #: the host booted again after the kill: when (UTC) and what is known of it, else empty
    rebooted_utc: str = ""
    rebooted: str = ""
    #: the same unit's earlier kills on this host in the week before: their number, then each
    #: one's time (UTC) and cause, latest first; empty with none
    earlier_week: str = ""


@dataclass
class Factor:
    text: str
    cite: str


@dataclass
class OutageStatus:
    status: int
    path: str
    count: int


@dataclass
class Story:
    """The postmortem's sections between the Impact and the Timeline, as data (the words are
    ``templates/partials/story.md.j2``'s)."""

    #: what set the kill off: ``growth`` (memory grew with the load), ``loading`` (the run died
    #: loading), ``gpu_oom``, ``crash``, ``gpu_fault``, ``timeout``, ``signal`` or ``unknown``
    trigger: str
    window_min: int
    growth_mib: float | None
    rate_mib_min: float | None
    host_limit_pct: float | None
    first_utc: str
    reading_utc: str
    reading_before_s: float | None
    reading_growth_mib: float | None
    end_growth_mib: float | None
    rate_from_utc: str
    running_first: int | None
    running_last: int | None
    queue_max: int | None
    retractions: int
    retracted: int
    oom_phase: str | None
    oom_asked_gib: float | None
    oom_free_gib: float | None
    #: the root cause: what killed what, and the evidence line
    victim: str
    killer: str
    victim_pid: int | None
    victim_rss_gib: float | None
    victim_rss_kb: int | None
    killed_with: int
    limit_gib: float | None
    limit_kb: int | None
    usage_gib: float | None
    limit_owner: str
    root_cite: str
    #: the contributing factors the recommendation rules found, each with its evidence
    factors: list[Factor]
    #: detection: the first operator action after the kill, and systemd's restart
    detected_utc: str
    detected_after_s: float | None
    detected_what: str
    detected_cite: str
    #: that action has no time (a journal printed without times): the kill's own lines in its
    #: file (``26–30``), which it comes after; empty when it is dated or there is none
    detected_kill_lines: str
    #: no such action: operators' commands in files with no times that cannot be placed before
    #: or after the kill (the file holds none of the kill's own lines), and those files
    undated_commands: int
    undated_files: list[str]
    restart_utc: str
    restart_after_s: float | None
    #: systemd's restart job in a journal with no times, after the kill's own lines there
    #: (``file:line``; ``restart_utc`` is empty then)
    restart_cite: str
    #: who restarts the unit: ``systemd``, or a container's runtime (``Docker``, ``Kubernetes``)
    restarter: str
    #: resolution: ``fallback``, ``restart``, ``other`` (another unit), ``reboot``, or empty
    recovery_how: str
    recovery_unit: str
    recovery_started_utc: str
    recovery_started_after_s: float | None
    recovery_ready_utc: str
    recovery_load_s: float | None
    #: an operator's command started what brought service back
    operator_started: bool
    #: systemd started it, as one of the unit's OnFailure= units ("Triggering OnFailure=
    #: dependencies."), and no operator's command did
    on_failure_started: bool
    #: left alone, when the automatic restart would have been ready (the unit's median load),
    #: and how much sooner than that the fallback was (negative: later); None when not weighed
    restart_expected_utc: str
    fallback_gain_s: float | None
    #: the lessons the rules found
    went_well: list[str]
    went_wrong: list[str]
    lucky: list[str]
    #: the errors the access log shows between the kill and the recovery, by status and path
    outage_errors: list[OutageStatus]


@dataclass
class IncidentReport:
    generated_at: str
    tool_version: str
    title: str
    file_stem: str
    incident_id: int
    host: str
    unit: str
    #: the file of a server no source names a unit for (its unit is ``unknown``), else ""
    unit_unknown_file: str
    zone: str
    kill_utc: str
    kill_local: str
    #: the kill is known to the minute only (dmesg -e/-H stamps nothing else dated)
    kill_minute_only: bool
    cause: str
    cause_label: str
    cause_words: str
    #: how the process ended: ``killed``, or ``crashed`` (its own error; a CUDA OOM is one)
    died: str
    #: the header row's label of the moment it ended: ``Killed at``, ``Crashed at``, ``Failed at``
    died_at: str
    #: the report's word for that moment: ``kill``, ``crash`` or ``failure`` ("after the kill")
    end: str
    confidence: float
    summary: str
    cause_explanation: str
    impact: Impact
    timeline: list[TimelineRow]
    victims: list[VictimRow]
    consumers: list[ConsumerRow]
    memory_facts: list[str]
    quotes: list[Quote]
    memory_figure: str | None
    memory_rows: list[MemoryRow]
    memory_rows_note: str
    window_s: float
    loads: list[LoadRow]
    load_summaries: list[LoadSummary]
    loads_figure: str | None
    config: dict[str, str]
    recommendations: list[RecommendationRow]
    action_items: list[ActionItem]
    sources: list[SourceRow]
    gaps: list[GapRow]
    offsets: list[OffsetRow]
    parse_issue_reasons: list[IssueReasonRow]
    #: the run that brought service back, when its settings differ from the killed run's: the
    #: value of each setting ``config`` shows (``—``: not set), and its unit
    recovery_config: dict[str, str] = dataclasses.field(default_factory=dict)
    recovery_config_unit: str = ""
    #: where ``config`` comes from: the engine and what it calls its printed configuration
    config_source: str = ""
    #: the container the unit is, when it is one
    container: ContainerRow | None = None
    #: the postmortem's severity, derived from the downtime and the requests at the kill:
    #: ``SEV-1`` (not restored, ≥ 30 min down or ≥ 1,000 requests), ``SEV-2`` (≥ 5 min or ≥ 100
    #: requests), else ``SEV-3``
    severity: str = "SEV-3"
    #: the postmortem's status: ``draft`` until people sign it
    status: str = "draft"
    #: trigger, root cause and factors, detection, resolution, lessons (None for an incident
    #: whose facts were not gathered)
    story: Story | None = None
    #: the zones the host's zone-less stamps were read in when nobody named one (no --tz, no
    #: configured zone): every such time is off by the host's own offset from it
    zone_assumed: list[str] = dataclasses.field(default_factory=list)


@dataclass
class IndexRow:
    report: str
    kill_utc: str
    host: str
    unit: str
    cause: str
    downtime: str
    recovery: str


@dataclass
class UndatedKillRow:
    """An OOM kill whose time could not be told: in no report."""

    cite: str
    host: str
    killer: str
    victim: str
    cgroup: str
    anon_rss: str  # the victim's anonymous RSS in words (`195 MiB`, `1.5 GiB`), or `—`
    uptime_s: float | None  # seconds since boot, when the line printed them


@dataclass
class XidRow:
    """An NVIDIA Xid event in the window (or with no time)."""

    utc: str
    host: str
    bus_id: str
    xid: int
    process: str
    message: str
    cite: str


@dataclass
class IndexReport:
    generated_at: str
    tool_version: str
    window: str
    incidents: list[IndexRow]
    sources: list[SourceRow]
    no_incident_reason: str
    undated_kills: list[UndatedKillRow] = dataclasses.field(default_factory=list)
    xids: list[XidRow] = dataclasses.field(default_factory=list)
    slow_loads: list[SlowLoadRow] = dataclasses.field(default_factory=list)


@dataclass
class SlowLoadRow:
    """A load in the window far slower than its unit's loads before it, incident or not."""

    started_utc: str
    host: str
    unit: str
    load: str  # its load time in words
    load_s: float
    median_before: str  # the median of the unit's loads before it, in words
    loads_before: int
    cite: str
