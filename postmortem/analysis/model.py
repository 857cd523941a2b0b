"""Plain data the analysis passes around: what a kill looks like from each source, the
incidents built from them, and the facts the rules and the report read."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..lazyre import lazy_re
from ..parsers.journal.container import is_container_unit
from ..parsers.kubernetes.names import pod_cgroup


@dataclass(frozen=True)
class SourceRef:
    """Where a fact came from: a source id and a line number (1-based)."""

    source_id: int
    line_no: int


@dataclass
class Evidence:
    """One decisive line: a kill record, a systemd state change, the server's crash words."""

    kind: (
        str  # oom_kill, unit_oom_killed, unit_main_exited, unit_failed, server_* (an engine's), cuda_oom, ...
    )
    ts: datetime | None
    source_id: int
    line_no: int
    detail: str
    host: str | None = None
    unit: str | None = None
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def ref(self) -> SourceRef:
        return SourceRef(self.source_id, self.line_no)


@dataclass
class Victim:
    pid: int | None
    comm: str | None
    ts: datetime | None
    anon_rss_kb: int | None
    source_id: int
    line_no: int
    chosen: bool
    oom_id: int | None = None
    #: earlyoom's VmRSS of the process (its whole resident memory; the kernel prints anon-rss)
    vm_rss_kb: int | None = None


@dataclass
class ClockOffset:
    """``ts_source - offset_s`` puts a source on the reference clock."""

    source_id: int
    reference_source_id: int | None
    offset_s: float
    method: str
    pairs: int
    note: str | None = None
    #: a move by whole years of local time (a year-less file read with the wrong year): applied
    #: to each row's wall time in the source's zone, so that a daylight-saving change that falls
    #: on other dates that year moves the row by its own hour (0: a fixed offset)
    years: int = 0


@dataclass
class Load:
    load_id: int
    host: str | None
    unit: str | None
    start_ts: datetime | None
    ready_ts: datetime | None
    load_s: float | None
    outcome: str
    model_path: str | None
    speculative_algorithm: str | None
    port: int | None
    weight_load_s: float | None = None
    draft_weight_load_s: float | None = None
    kv_alloc_s: float | None = None
    cuda_graph_s: float | None = None
    draft_cuda_graph_s: float | None = None
    health_polls: int | None = None
    tp_size: int | None = None
    pid: int | None = None
    source_id: int | None = None
    start_line_no: int | None = None
    start_source_id: int | None = None  # the source start_line_no is a line of
    ready_line_no: int | None = None
    ready_source_id: int | None = None  # the source ready_line_no is a line of
    start_source: str | None = None
    ready_source: str | None = None
    engine: str | None = None

    @property
    def never_ready(self) -> bool:
        """It died (or the data ends) before it was ready: it served nothing."""
        return self.ready_ts is None and self.outcome != "ready"


#: how a report names each container runtime
RUNTIME_NAMES = {"docker": "Docker", "podman": "Podman", "kubernetes": "Kubernetes"}


@dataclass
class ContainerInfo:
    """The container an incident's unit is (``docker:<name>``), as its log lines named it
    (``containers``): the runtime, its name, its full id and its image; and its cgroup as the
    kernel's OOM record printed it, when one did."""

    runtime: str
    name: str
    container_id: str
    image: str | None = None
    cgroup: str | None = None
    #: a Kubernetes container's pod (``<namespace>/<pod>``)
    pod: str | None = None

    @property
    def short_id(self) -> str:
        return self.container_id[:12]

    @property
    def runtime_name(self) -> str:
        return RUNTIME_NAMES.get(self.runtime, self.runtime)

    def cgroup_units(self) -> tuple[str, ...]:
        """The names the kernel and systemd may give its cgroup (as ``container_units.sql``)."""
        cid = self.container_id
        return (f"docker-{cid}.scope", f"libpod-{cid}.scope", f"/docker/{cid}", cid)

    def words(self) -> str:
        """``container llm-qwen`` (``container inference/vllm-0/vllm``: pod and container, on
        Kubernetes)."""
        return f"container {self.pod}/{self.name}" if self.pod else f"container {self.name}"

    def details(self) -> str:
        """``image registry.example/llm-server:1.4, id 3f2a9c0d1e4b`` (no id when the container
        is known by it: its name is the id)."""
        image = f"image {self.image}" if self.image else ""
        ident = f"id {self.short_id}" if self.short_id != self.name else ""
        return ", ".join(x for x in (image, ident) if x)


@dataclass
class Incident:
    incident_id: int
    host: str | None
    ts: datetime | None
    unit: str | None
    cause: str
    confidence: float
    killer: str | None = None
    scope: str | None = None
    victims: list[Victim] = field(default_factory=list)
    evidence: list[Evidence] = field(default_factory=list)
    oom_id: int | None = None
    anon_rss_kb: int | None = None
    memcg_usage_kb: int | None = None
    memcg_limit_kb: int | None = None
    recovered_ts: datetime | None = None
    downtime_s: float | None = None
    fallback_unit: str | None = None
    recovery_unit: str | None = None
    recovery_load: Load | None = None
    killed_load: Load | None = None
    restart_count: int | None = None
    restart_refs: list[SourceRef] = field(default_factory=list)
    kills_last_hour: int = 0
    #: the recovery was taken to be another unit's server, the first ready on the host after the
    #: kill, as the killed run's model and port are not in the data (its start was not logged)
    recovery_guessed: bool = False
    #: this kill's place among its unit's dated kills on its host, in time order, and how many
    #: there are (``undated.kill_ranks``): a journal with no times holding as many deaths of
    #: the unit holds this one as its own that many-th
    kill_rank: tuple[int, int] | None = None
    #: the same unit's earlier kills on the same host in the week before: (time, cause), latest first
    earlier_week: list[tuple[datetime, str]] = field(default_factory=list)
    running_at_kill: int | None = None
    queued_at_kill: int | None = None
    last_activity_ts: datetime | None = None
    gpu_memory_freed: bool | None = None
    summary: str = ""
    cause_explanation: str = ""
    #: the container the unit is (a ``docker:<name>`` unit whose lines named it), else None
    container: ContainerInfo | None = None
    #: whether the unit served: True when a server's lines are its, False when none is and the
    #: host's servers went on serving after the kill (a neighbour: a batch job, an ETL pod),
    #: None when the data cannot tell (``victim_serving.sql``)
    serving: bool | None = None

    @property
    def server_source(self) -> int | None:
        """The source of the killed server's lines when no unit is named for them (a log file
        nothing ties to a unit): its rows are found by source. None when the unit is known."""
        if self.unit is not None:
            return None
        if self.killed_load is not None and self.killed_load.source_id is not None:
            return self.killed_load.source_id
        return next((e.source_id for e in self.evidence if e.unit is None and e.kind != "oom_kill"), None)

    @property
    def recovery_source(self) -> int | None:
        """The source of the recovery's server lines when no unit is named for them."""
        if self.recovery_unit is not None or self.recovery_load is None:
            return None
        return self.recovery_load.source_id

    @property
    def victim(self) -> Victim | None:
        for v in self.victims:
            if v.chosen:
                return v
        return self.victims[0] if self.victims else None

    @property
    def killed_with(self) -> list[Victim]:
        """The processes killed with the chosen victim, in its record (``memory.oom.group``)."""
        chosen = self.victim
        if chosen is None or chosen.oom_id is None:
            return [v for v in self.victims if v is not chosen and v.oom_id is None]
        return [v for v in self.victims if not v.chosen and v.oom_id == chosen.oom_id]

    @property
    def later_kills(self) -> list[Victim]:
        """Processes of the unit the kernel chose in later records of the same incident (a restart
        killed again within seconds)."""
        chosen = self.victim
        return [v for v in self.victims if v.chosen and v is not chosen]


@dataclass
class Recommendation:
    rule: str
    severity: str  # high, medium, low, info
    title: str
    detail: str
    evidence: list[SourceRef] = field(default_factory=list)
    action: str | None = None  # the checkbox for the action items, when there is something to do
    #: the report body's words: one line with the number that matters, at most three sentences
    headline: str = ""
    summary: str = ""
    #: what kind of action the action item is: mitigate, prevent or detect
    action_type: str = ""
    #: the contributing factor this finding shows (one sentence), if any
    factor: str = ""
    #: what went well, went wrong, or was luck in this incident, as this finding shows it
    went_well: str = ""
    went_wrong: str = ""
    lucky: str = ""


def is_service(unit: str | None) -> bool:
    """Whether ``unit`` is a service, which systemd starts and may restart: a login session's or
    a container's scope, a slice or a bare cgroup path is not.

    >>> is_service("k26.service"), is_service("session-12.scope"), is_service(None)
    (True, False, False)
    """
    return unit is not None and unit.endswith(".service")


def is_container(unit: str | None) -> bool:
    """Whether ``unit`` is a container (``docker:<name>``), which its runtime starts and, under a
    restart policy, restarts.

    >>> is_container("docker:llm-qwen"), is_container("docker-3f2a.scope")
    (True, False)
    """
    return is_container_unit(unit)


def limit_owner(unit: str | None, memcg: str | None, *, boxed: bool = False) -> str:
    """Whose memory limit a cgroup OOM kill hit, as a sentence names it: the ``unit``, the
    ``container``, a Kubernetes ``pod`` (the pod's cgroup, not the container's), or the
    ``kubepods cgroup`` (the limit of all the node's pods). ``boxed``: the incident is a
    container's (a unit's cgroup is then the container's).

    >>> limit_owner("k8s:a/b/c", "/kubepods/burstable/pod8f14e45f-ceea-467f-a0e6-1b1a2c3d4e5f")
    'pod'
    >>> limit_owner("k8s:a/b/c", "/kubepods.slice"), limit_owner("a.service", "/system.slice/a.service")
    ('kubepods cgroup', 'unit')
    """
    pod = pod_cgroup(memcg)
    if pod is not None and pod.level == "pod":
        return "pod"
    if pod is not None and pod.level in ("node", "qos"):
        return "kubepods cgroup"
    return "container" if boxed or is_container(unit) else "unit"


#: process names of GPU inference servers no engine plug-in knows (the OOM record's comm, cut to
#: 15 characters); the registered engines' own are their process_prefixes and name hints
GPU_COMMS = ("vllm", "tritonserver", "text-generation", "ray::")


def restartable(unit: str | None) -> bool:
    """Whether something brings ``unit`` back when it dies: systemd a service, a container
    runtime a container. A login session's scope or a slice is nobody's to restart.

    >>> restartable("a.service"), restartable("docker:llm-qwen"), restartable("session-12.scope")
    (True, True, False)
    """
    return is_service(unit) or is_container(unit)


def unit_words(inc: Incident) -> str:
    """How a sentence names the incident's unit: ``container llm-qwen`` for a container.

    >>> unit_words(Incident(1, "h", None, "a.service", "unknown", 0.3))
    'a.service'
    >>> unit_words(Incident(1, "h", None, None, "gpu_oom", 0.8))
    'the server'
    """
    if inc.container is not None:
        return inc.container.words()
    return inc.unit or "the server"  # (no source names its unit: a log started by hand)


def cgroup_is_units(cgroup_unit: str | None, inc: Incident) -> bool:
    """Whether a cgroup's unit (``unit_of`` a path) is the incident's unit: itself, or the scope
    of the container the unit is."""
    if cgroup_unit is None:
        return False
    return cgroup_unit == inc.unit or (
        inc.container is not None and cgroup_unit in inc.container.cgroup_units()
    )


_KILLED = lazy_re(r"[Kk]illed process (\d+) \(([^)]*)\)")


def killed_process(message: str) -> tuple[int, str] | None:
    """The pid and name of a kernel kill line.

    >>> killed_process("Out of memory: Killed process 90211 (python3) total-vm:64kB, anon-rss:0kB")
    (90211, 'python3')
    """
    m = _KILLED.search(message)
    return (int(m.group(1)), m.group(2)) if m else None


#: causes where the server died of its own error (a CUDA out-of-memory error is one): it
#: "crashed", it was not "killed" (an unknown cause keeps "killed": systemd saw a signal end it)
CRASH_CAUSES = frozenset({"crash", "gpu_oom"})


def death_noun(cause: str, loading: bool = False) -> str:
    """The word a report uses for the moment the process ended: ``the kill``, ``the crash`` (its
    own error), ``the failure`` (a start that failed on its own error).

    >>> death_noun("host_oom"), death_noun("gpu_oom"), death_noun("crash", loading=True)
    ('kill', 'crash', 'failure')
    >>> death_noun("cgroup_oom", loading=True)
    'kill'
    """
    if cause in CRASH_CAUSES:
        return "failure" if loading else "crash"
    return "kill"


def ended_word(noun: str) -> str:
    """The run :func:`death_noun` ended, as an adjective: ``killed``, ``crashed``, ``failed``.

    >>> ended_word("kill"), ended_word("crash"), ended_word("failure")
    ('killed', 'crashed', 'failed')
    """
    return {"crash": "crashed", "failure": "failed"}.get(noun, "killed")


def incident_end(inc: Incident) -> str:
    """:func:`death_noun` of an incident (its killed run's load never ready: it was loading)."""
    load = inc.killed_load
    return death_noun(inc.cause, load is not None and load.never_ready)
