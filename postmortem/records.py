"""Flat, typed, frozen records: one class per stored table.

Parsers yield these; the store appends them to the table named by ``TABLE``. Every record
carries the ``line_no`` it came from (1-based physical line of the source file); the store adds
``source_id``. Times are UTC-aware ``datetime`` values, with the text as printed in ``ts_raw``
and ``ts_inferred`` saying what had to be assumed (see :class:`postmortem.timeutil.Inferred`).

A test checks that each class's fields equal its table's columns (minus ``source_id``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime
from typing import ClassVar


@dataclass(frozen=True, slots=True)
class Record:
    TABLE: ClassVar[str] = ""


@dataclass(frozen=True, slots=True)
class JournalEntry(Record):
    TABLE: ClassVar[str] = "journal_entries"
    line_no: int
    ts: datetime | None
    ts_raw: str | None
    ts_inferred: str | None
    monotonic_s: float | None
    host: str | None
    ident: str | None
    pid: int | None
    unit: str | None
    priority: int | None
    transport: str | None
    boot_id: str | None
    message: str


@dataclass(frozen=True, slots=True)
class KernelMessage(Record):
    TABLE: ClassVar[str] = "kernel_messages"
    line_no: int
    ts: datetime | None
    ts_raw: str | None
    ts_inferred: str | None
    monotonic_s: float | None
    host: str | None
    boot_id: str | None
    level: int | None
    seq: int | None
    message: str


@dataclass(frozen=True, slots=True)
class Boot(Record):
    TABLE: ClassVar[str] = "boots"
    line_no: int
    boot_id: str
    host: str | None
    boot_ts: datetime
    method: str


@dataclass(frozen=True, slots=True)
class JournalHeader(Record):
    """A text journal's ``-- Journal begins at …, ends at … --`` (``-- Logs begin at …, end at
    … --``, systemd before 250): the wall-clock times, to the second, of the first and last
    entries of the whole journal journalctl read (not only of those it printed)."""

    TABLE: ClassVar[str] = "journal_headers"
    line_no: int
    begins_ts: datetime
    ends_ts: datetime | None
    ts_inferred: str | None


@dataclass(frozen=True, slots=True)
class UnitEvent(Record):
    TABLE: ClassVar[str] = "unit_events"
    line_no: int
    ts: datetime | None
    ts_raw: str | None
    ts_inferred: str | None
    host: str | None
    unit: str
    action: str
    code: str | None
    status: str | None
    result: str | None
    restart_count: int | None
    cpu_s: float | None
    memory_peak_bytes: int | None
    wall_s: float | None
    message: str
    description: str | None = None


@dataclass(frozen=True, slots=True)
class OomKill(Record):
    TABLE: ClassVar[str] = "oom_kills"
    line_no: int
    oom_id: int
    ts: datetime | None
    ts_raw: str | None
    ts_inferred: str | None
    monotonic_s: float | None
    host: str | None
    killer: str
    scope: str | None
    victim_pid: int | None
    victim_comm: str | None
    victim_uid: int | None
    unit: str | None
    cgroup: str | None
    oom_memcg: str | None
    total_vm_kb: int | None
    anon_rss_kb: int | None
    file_rss_kb: int | None
    shmem_rss_kb: int | None
    pgtables_kb: int | None
    oom_score_adj: int | None
    memcg_usage_kb: int | None
    memcg_limit_kb: int | None
    swap_usage_kb: int | None
    swap_limit_kb: int | None
    invoker_comm: str | None
    invoker_pid: int | None
    gfp_mask: str | None
    alloc_order: int | None
    kernel_release: str | None
    free_kb: int | None
    free_swap_kb: int | None
    total_swap_kb: int | None
    ram_pages: int | None
    header_line_no: int | None
    message: str
    cpuset: str | None = None
    memsw_usage_kb: int | None = None
    memsw_limit_kb: int | None = None
    free_pages: int | None = None
    vm_rss_kb: int | None = None  # earlyoom's VmRSS of its victim (the kernel splits its RSS)


@dataclass(frozen=True, slots=True)
class OomTask(Record):
    TABLE: ClassVar[str] = "oom_tasks"
    line_no: int
    oom_id: int
    pid: int
    uid: int | None
    tgid: int | None
    total_vm_pages: int | None
    rss_pages: int | None
    rss_anon_pages: int | None
    rss_file_pages: int | None
    rss_shmem_pages: int | None
    pgtables_bytes: int | None
    nr_ptes: int | None
    swapents: int | None
    oom_score_adj: int | None
    name: str
    nr_pmds: int | None = None
    cpu: int | None = None
    oom_adj: int | None = None


@dataclass(frozen=True, slots=True)
class ServerConfig(Record):
    TABLE: ClassVar[str] = "server_configs"
    line_no: int
    ts: datetime | None
    ts_raw: str | None
    ts_inferred: str | None
    host: str | None
    unit: str | None
    pid: int | None
    model_path: str | None
    served_model_name: str | None
    tp_size: int | None
    dp_size: int | None
    ep_size: int | None
    mem_fraction_static: float | None
    speculative_algorithm: str | None
    speculative_draft_model_path: str | None
    speculative_num_steps: int | None
    speculative_eagle_topk: int | None
    speculative_num_draft_tokens: int | None
    cuda_graph_max_bs: int | None
    max_running_requests: int | None
    context_length: int | None
    chunked_prefill_size: int | None
    port: int | None
    raw: str
    pp_size: int | None = None
    max_total_tokens: int | None = None
    quantization: str | None = None
    kv_cache_dtype: str | None = None
    disable_cuda_graph: bool | None = None
    watchdog_timeout: float | None = None
    args_format: str | None = None
    engine: str | None = None
    engine_version: str | None = None


@dataclass(frozen=True, slots=True)
class ServerEvent(Record):
    """An inference server's startup phase, readiness, error, signal or death."""

    TABLE: ClassVar[str] = "server_events"
    line_no: int
    ts: datetime | None
    ts_raw: str | None
    ts_inferred: str | None
    host: str | None
    unit: str | None
    pid: int | None
    ranks: str | None
    kind: str
    role: str | None
    phase: str | None
    avail_mem_gb: float | None
    mem_usage_gb: float | None
    elapsed_s: float | None
    num_tokens: int | None
    exit_code: int | None
    message: str
    detail: str | None = None
    engine: str | None = None


@dataclass(frozen=True, slots=True)
class ServerStats(Record):
    """One periodic statistics line of an inference server's scheduler."""

    TABLE: ClassVar[str] = "server_stats"
    line_no: int
    ts: datetime | None
    ts_raw: str | None
    host: str | None
    unit: str | None
    pid: int | None
    ranks: str | None
    phase: str
    running_req: int | None
    queue_req: int | None
    num_tokens: int | None
    token_usage: float | None
    gen_throughput: float | None
    input_throughput: float | None
    accept_len: float | None
    accept_rate: float | None
    new_seq: int | None
    new_token: int | None
    cached_token: int | None
    cuda_graph: bool | None
    extra: str | None
    ts_inferred: str | None = None
    iteration: int | None = None
    swa_token_usage: float | None = None
    mamba_usage: float | None = None
    pending_token: int | None = None
    engine: str | None = None
    swapped_req: int | None = None
    preemptions: int | None = None
    cpu_kv_usage: float | None = None
    prefix_cache_hit_rate: float | None = None


@dataclass(frozen=True, slots=True)
class HttpRequest(Record):
    TABLE: ClassVar[str] = "http_requests"
    line_no: int
    ts: datetime | None
    ts_raw: str | None
    host: str | None
    unit: str | None
    pid: int | None
    client: str | None
    method: str
    path: str
    http_version: str | None
    status: int
    ts_inferred: str | None = None
    engine: str | None = None


@dataclass(frozen=True, slots=True)
class CudaOom(Record):
    TABLE: ClassVar[str] = "cuda_ooms"
    line_no: int
    ts: datetime | None
    ts_raw: str | None
    host: str | None
    unit: str | None
    pid: int | None
    ranks: str | None
    gpu: int | None
    tried_mib: float | None
    total_mib: float | None
    free_mib: float | None
    allocated_mib: float | None
    reserved_mib: float | None
    phase: str | None
    message: str
    ts_inferred: str | None = None
    private_pool_mib: float | None = None
    process_mib: float | None = None
    device: str | None = None
    engine: str | None = None


@dataclass(frozen=True, slots=True)
class GpuSample(Record):
    TABLE: ClassVar[str] = "gpu_samples"
    line_no: int
    ts: datetime | None
    ts_raw: str | None
    ts_inferred: str | None
    host: str | None
    gpu_index: int | None
    gpu_uuid: str | None
    bus_id: str | None
    name: str | None
    mem_used_mib: int | None
    mem_total_mib: int | None
    mem_free_mib: int | None
    mem_reserved_mib: int | None
    util_gpu_pct: float | None
    util_mem_pct: float | None
    temp_c: float | None
    power_w: float | None
    pstate: str | None
    driver_version: str | None


@dataclass(frozen=True, slots=True)
class GpuProcess(Record):
    TABLE: ClassVar[str] = "gpu_processes"
    line_no: int
    ts: datetime | None
    ts_raw: str | None
    ts_inferred: str | None
    host: str | None
    gpu_index: int | None
    gpu_uuid: str | None
    bus_id: str | None
    pid: int | None
    process_name: str | None
    used_mib: int | None
    truncated: bool
    process_type: str | None = None


@dataclass(frozen=True, slots=True)
class GpuXid(Record):
    TABLE: ClassVar[str] = "gpu_xids"
    line_no: int
    ts: datetime | None
    ts_raw: str | None
    ts_inferred: str | None
    monotonic_s: float | None
    host: str | None
    bus_id: str | None
    xid: int
    pid: int | None
    process_name: str | None
    message: str


@dataclass(frozen=True, slots=True)
class GpuEvent(Record):
    TABLE: ClassVar[str] = "gpu_events"
    line_no: int
    ts: datetime | None
    ts_raw: str | None
    ts_inferred: str | None
    host: str | None
    bus_id: str | None
    kind: str
    message: str


@dataclass(frozen=True, slots=True)
class Container(Record):
    """A container whose output the journal carries (Docker's journald log driver, podman's
    conmon): one row per container id, name and image first seen in a source."""

    TABLE: ClassVar[str] = "containers"
    line_no: int
    ts: datetime | None
    host: str | None
    runtime: str
    container_id: str
    name: str
    image: str | None
    unit: str


@dataclass(frozen=True, slots=True)
class K8sContainer(Record):
    """A container of a Kubernetes pod as its Pod object (``kubectl get pod -o json|yaml``) or
    ``kubectl describe pod`` showed it: identity, spec (limits, probes, /dev/shm) and status
    (state, the previous termination, restarts). One row per container per object read."""

    TABLE: ClassVar[str] = "k8s_containers"
    line_no: int
    ts: datetime | None
    host: str | None
    namespace: str
    pod: str
    pod_uid: str | None
    container: str
    container_id: str | None
    unit: str
    owner: str | None
    qos_class: str | None
    phase: str | None
    pod_reason: str | None
    restart_count: int | None
    ready: bool | None
    state: str | None
    state_reason: str | None
    state_started: datetime | None
    last_reason: str | None
    last_exit_code: int | None
    last_started: datetime | None
    last_finished: datetime | None
    last_container_id: str | None
    last_message: str | None
    limit_memory_bytes: int | None
    request_memory_bytes: int | None
    gpus: int | None
    startup_probe: str | None
    liveness_probe: str | None
    readiness_probe: str | None
    shm_medium_memory: bool | None
    shm_size_bytes: int | None


@dataclass(frozen=True, slots=True)
class K8sEvent(Record):
    """Something Kubernetes said about a pod, a container or a node: an Event (core/v1 or
    events.k8s.io/v1, or a row of ``describe``'s table), a kubelet or container-runtime journal
    line, or a termination from a Pod object's status. ``kind`` is the normalised meaning
    (``docs/inputs.md``: Kubernetes); ``reason`` and ``message`` are as printed."""

    TABLE: ClassVar[str] = "k8s_events"
    line_no: int
    ts: datetime | None
    ts_raw: str | None
    first_ts: datetime | None
    host: str | None
    origin: str
    kind: str
    namespace: str | None
    pod: str | None
    pod_uid: str | None
    container: str | None
    container_id: str | None
    unit: str | None
    reason: str | None
    probe: str | None
    exit_code: int | None
    count: int | None
    message: str


RECORD_TYPES: tuple[type[Record], ...] = (
    JournalEntry,
    KernelMessage,
    Boot,
    JournalHeader,
    UnitEvent,
    OomKill,
    OomTask,
    ServerConfig,
    ServerEvent,
    ServerStats,
    HttpRequest,
    CudaOom,
    GpuSample,
    GpuProcess,
    GpuXid,
    GpuEvent,
    Container,
    K8sContainer,
    K8sEvent,
)

RECORD_BY_TABLE: dict[str, type[Record]] = {r.TABLE: r for r in RECORD_TYPES}


def field_names(record_type: type[Record]) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(record_type))


def as_dict(record: Record) -> dict[str, object]:
    return {name: getattr(record, name) for name in field_names(type(record))}
