"""Assembly of kernel OOM-killer records (2.6.32 … 6.x) into ``oom_kills`` and ``oom_tasks``.

An OOM event is a burst of printk records: header, cpuset line, stack dump, ``Mem-Info:`` or
memcg counters, task table, ``oom-kill:`` summary (5.0+), the victim-choice line (≤ 5.2) and the
``Killed process`` line, then ``oom_reaper:``. Any part but the kill line may be missing
(ratelimited dumps, ``vm.oom_dump_tasks=0``, truncated copies), so an event opens at a header
*or* at any OOM-specific line, and every kill line gives one ``oom_kills`` row.

:class:`OomAssembler` sees one line of kernel text at a time (prefixes already removed) and
yields :class:`~postmortem.records.OomTask` rows as the task table is read and
:class:`~postmortem.records.OomKill` rows when a kill line arrives (or, for an event that never
shows one, when the event ends). State is bounded: one event, plus ``pid → (uid,
oom_score_adj)`` of its task table.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime

from ...lazyre import lazy_re
from ...records import OomKill, OomTask
from ..base import Output, ParseContext
from ..kubernetes.names import pod_cgroup

KILLER = "kernel"

#: an event without a kill line is closed when a line arrives this many seconds after its start
EVENT_WINDOW_S = 60.0

#: memcg limits at or above this many kB are PAGE_COUNTER_MAX / RESOURCE_MAX: no limit
UNLIMITED_KB = 1 << 52

_HEADER = lazy_re(
    r"(?P<comm>.*?) invoked oom-killer: gfp_mask=(?P<gfp>0x[0-9a-fA-F]+(?:\([^)]*\))?)"
    r"(?:, nodemask=\S*?)?, order=(?P<order>-?\d+)(?P<rest>.*)$"
)
_HEADER_OSA = lazy_re(r"oom_score_adj=(-?\d+)")
_CPUSET = lazy_re(r"(?P<comm>.*?) cpuset=(?P<cpuset>\S*) mems_allowed=\S*$")
_CPU_LINE = lazy_re(
    r"CPU: \d+ (?:UID: \d+ )?PID: (?P<pid>\d+) Comm: (?P<comm>.*?) (?:Kdump: loaded )?"
    r"(?:Not tainted|Tainted: .*?) +(?P<release>\d+\.\d+\S*)"
)
_PID_LINE = lazy_re(
    r"Pid: (?P<pid>\d+), comm: (?P<comm>.*?) (?:Not tainted|Tainted: \S+) +(?P<release>\d+\.\d+\S*)"
)
_SUMMARY = lazy_re(
    r"oom-kill:constraint=(?P<constraint>\w+),nodemask=.*?"
    r"(?:,cpuset=(?P<cpuset>.*?),mems_allowed=.*?)?"
    r"(?:,oom_memcg=(?P<oom_memcg>.*?)|,global_oom)?"
    r"(?:,task_memcg=(?P<task_memcg>.*?))?"
    r",task=(?P<task>.*),pid=\s*(?P<pid>\d+),uid=\s*(?P<uid>\d+)\s*$"
)
_CHOICE = lazy_re(
    r"(?P<ctx>[^:]*): (?:Kill|kill) process (?P<pid>\d+) \((?P<comm>.*)\) score -?\d+"
    r" (?:or sacrifice child|or a child|and children\.?)\s*$"
)
_KILLED = lazy_re(
    r"(?:(?P<ctx>[^:]*?): )?Killed process (?P<pid>\d+)(?:, UID (?P<uid6>\d+),)? \((?P<comm>.*)\)"
    r"(?:(?:, UID (?P<uid7>\d+),)? (?:total-vm|vsz):(?P<vm>\d+)kB, anon-rss:(?P<anon>\d+)kB,"
    r" file-rss:(?P<file>\d+)kB(?:, shmem-rss:(?P<shmem>\d+)kB)?(?:, UID:(?P<uid>\d+))?"
    r"(?: pgtables:(?P<pgt>\d+)kB)?(?: oom_score_adj:(?P<osa>-?\d+))?|\.)?\s*$"
)
_TASK_IN = lazy_re(r"Task in (?P<cg>\S+) killed as a result of limit of (?P<limit>\S+)\s*$")
_LIMIT_REACHED = lazy_re(r"Memory limit reached of cgroup (?P<limit>\S+)\s*$")
_COUNTER = lazy_re(
    r"(?P<counter>memory|memory\+swap|swap|kmem): usage (?P<usage>\d+)kB, limit (?P<limit>\d+)kB"
)
_TASKS_HEADER = lazy_re(r"\[\s*pid\s*\]\s+uid\s+tgid\s+total_vm\s+rss\s+(?P<cols>.*?)\s*name\s*$")
_GROUP = lazy_re(r"Tasks in (?P<cg>\S+) are going to be killed due to memory\.oom\.group set")
_ZONE_FREE = lazy_re(r"Node \d+ (?:DMA32|DMA|Normal|HighMem|Movable|Device) free:(\d+)kB")
_FREE_PAGES = lazy_re(r"(?:^|\s)free:(\d+)(?=\s|$)")
_FREE_SWAP = lazy_re(r"Free swap\s*=\s*(-?\d+)kB")
_TOTAL_SWAP = lazy_re(r"Total swap\s*=\s*(\d+)kB")
_PAGES_RAM = lazy_re(r"(\d+) pages RAM\s*$")

_SCOPE_BY_CONSTRAINT = {
    "CONSTRAINT_NONE": "global",
    "CONSTRAINT_MEMCG": "memcg",
    "CONSTRAINT_CPUSET": "cpuset",
    "CONSTRAINT_MEMORY_POLICY": "mempolicy",
}

# task-table column (as printed in the header) → OomTask field
_TASK_FIELDS = {
    "uid": "uid",
    "tgid": "tgid",
    "total_vm": "total_vm_pages",
    "rss": "rss_pages",
    "rss_anon": "rss_anon_pages",
    "rss_file": "rss_file_pages",
    "rss_shmem": "rss_shmem_pages",
    "pgtables_bytes": "pgtables_bytes",
    "nr_ptes": "nr_ptes",
    "nr_pmds": "nr_pmds",
    "swapents": "swapents",
    "oom_score_adj": "oom_score_adj",
    "cpu": "cpu",
    "oom_adj": "oom_adj",
}

_UNIT_SUFFIXES = (".service", ".scope", ".slice", ".socket", ".mount", ".swap", ".target", ".device")


def might_open(text: str) -> bool:
    """Cheap test: could ``text`` open (or, after a kill, continue) an OOM event?

    >>> might_open("usb 1-1: new high-speed USB device"), might_open("Killed process 1 (x)")
    (False, True)
    """
    return "oom" in text or "ill" in text or "Task" in text or "emory" in text or "tgid" in text


def scope_of_prefix(prefix: str | None) -> str | None:
    """The OOM scope named by a kill-line / choice-line prefix.

    >>> [scope_of_prefix(p) for p in ("Out of memory", "Memory cgroup out of memory",
    ...  "No available memory (MPOL_BIND)", "No available memory in cpuset", None)]
    ['global', 'memcg', 'mempolicy', 'cpuset', None]
    """
    if not prefix:
        return None
    low = prefix.lower()
    if low.startswith("memory cgroup"):
        return "memcg"
    if "mpol_bind" in low:
        return "mempolicy"
    if "cpuset" in low:
        return "cpuset"
    if low.startswith("out of memory"):
        return "global"
    return None


def unit_of(cgroup: str | None) -> str | None:
    """The unit a cgroup path (or cpuset name) belongs to.

    The deepest path component that is a systemd unit name; a cgroup outside systemd's
    naming (``/docker/<id>`` of cgroupfs-driven docker, a hand-made ``/mem2``, a bare cpuset
    name) is kept as printed; the root cgroup gives ``None``.

    >>> unit_of("/system.slice/llm-demo.service")
    'llm-demo.service'
    >>> unit_of("/user.slice/user-1000.slice/user@1000.service/app.slice/app-x.scope")
    'app-x.scope'
    >>> unit_of("/system.slice/docker-4f2e.scope"), unit_of("/docker/2e08"), unit_of("/")
    ('docker-4f2e.scope', '/docker/2e08', None)

    A pod's container (a kubepods path naming the pod) is the Kubernetes unit its cgroup alone
    gives, ``k8s:pod-<uid>/<container id>``, short forms the analysis replaces by
    ``k8s:<namespace>/<pod>/<container>`` when a Pod object or a runtime line names them:

    >>> unit_of("/kubepods/burstable/pod8f14e45f-ceea-467f-a0e6-1b1a2c3d4e5f/" + "ab" * 32)
    'k8s:pod-8f14e45f/abababababab'
    """
    if not cgroup or cgroup == "/" or cgroup == "(null)":
        return None
    pod = pod_cgroup(cgroup)
    if pod is not None and pod.unit is not None:
        return pod.unit
    parts = [p for p in cgroup.split("/") if p]
    for part in reversed(parts):
        if part.endswith(_UNIT_SUFFIXES):
            return part
    return cgroup


def _limit(value: str) -> int | None:
    kb = int(value)
    return None if kb >= UNLIMITED_KB else kb


@dataclass(slots=True)
class _Stamp:
    """Where and when one line was printed."""

    line_no: int
    ts: datetime | None
    ts_raw: str | None
    ts_inferred: str | None
    monotonic_s: float | None
    host: str | None
    text: str


@dataclass(slots=True)
class _Event:
    oom_id: int
    first: _Stamp
    header: _Stamp | None = None
    invoker_comm: str | None = None
    invoker_pid: int | None = None
    invoker_osa: int | None = None
    gfp_mask: str | None = None
    alloc_order: int | None = None
    kernel_release: str | None = None
    cpuset: str | None = None
    constraint: str | None = None
    scope_hint: str | None = None  # weaker than constraint / kill prefix
    task_cgroup: str | None = None  # Task in … / task_memcg
    oom_memcg: str | None = None
    memcg_usage_kb: int | None = None
    memcg_limit_kb: int | None = None
    swap_usage_kb: int | None = None
    swap_limit_kb: int | None = None
    memsw_usage_kb: int | None = None
    memsw_limit_kb: int | None = None
    in_meminfo: bool = False
    free_pages: int | None = None
    zone_free_kb: int | None = None
    free_swap_kb: int | None = None
    total_swap_kb: int | None = None
    ram_pages: int | None = None
    task_cols: list[str] | None = None
    tasks: dict[int, tuple[int | None, int | None]] = field(default_factory=dict)
    summary: _Stamp | None = None
    summary_pid: int | None = None
    summary_uid: int | None = None
    summary_task: str | None = None
    choice: _Stamp | None = None
    choice_pid: int | None = None
    choice_comm: str | None = None
    choice_prefix: str | None = None
    terminal: _Stamp | None = None  # "Out of memory and no killable processes..."
    kills: int = 0
    group_cgroup: str | None = None
    #: pids this event's kill lines named (memory.oom.group names the chosen victim twice)
    killed: set[int] = field(default_factory=set)


class OomAssembler:
    """Turns kernel lines into OOM kill and task rows (see the module docstring)."""

    def __init__(self, ctx: ParseContext) -> None:
        self.ctx = ctx
        self.event: _Event | None = None

    # ------------------------------------------------------------------ entry points
    def line(
        self,
        line_no: int,
        text: str,
        ts: datetime | None,
        ts_raw: str | None,
        ts_inferred: str | None,
        monotonic_s: float | None,
        host: str | None,
    ) -> Iterator[Output]:
        """Feed one line of kernel text (no transport prefix)."""
        ev = self.event
        if (ev is None or (ev.kills and ev.group_cgroup is None)) and not might_open(text):
            return
        if ev is not None:
            first = ev.first
            if monotonic_s is not None and first.monotonic_s is not None:
                gap: float | None = monotonic_s - first.monotonic_s
            elif ts is not None and first.ts is not None:
                gap = (ts - first.ts).total_seconds()
            else:
                gap = None
            if gap is not None and abs(gap) > EVENT_WINDOW_S:
                yield from self.close()
        stamp = _Stamp(line_no, ts, ts_raw, ts_inferred, monotonic_s, host, text)
        yield from self._classify(stamp, text)

    def close(self) -> Iterator[Output]:
        """End the open event (end of input, or a gap): yield its row if it never had a kill."""
        ev = self.event
        self.event = None
        if ev is not None and ev.kills == 0:
            at = ev.terminal or ev.summary or ev.choice or ev.header or ev.first
            pid = ev.summary_pid if ev.summary_pid is not None else ev.choice_pid
            comm = ev.summary_task if ev.summary_pid is not None else ev.choice_comm
            yield self._kill_row(ev, at, pid=pid, comm=comm, sizes=None, prefix=ev.choice_prefix)

    # ------------------------------------------------------------------ classification
    def _open(self, stamp: _Stamp) -> _Event:
        ev = _Event(self.ctx.make_id(stamp.line_no), stamp)
        self.event = ev
        return ev

    def _current(self, stamp: _Stamp) -> _Event:
        """The building (not yet killed) event, opened at ``stamp`` if there is none."""
        ev = self.event
        if ev is None or ev.kills:
            ev = self._open(stamp)
        return ev

    def _classify(self, st: _Stamp, text: str) -> Iterator[Output]:  # noqa: C901 - 40 > 15: listed in docs/dev/README.md
        s = text.strip()
        ev = self.event

        # ---- lines that may open an event -------------------------------------------------
        if "invoked oom-killer:" in s:
            m = _HEADER.match(s)
            if m is not None:
                yield from self.close()
                ev = self._open(st)
                ev.header = st
                ev.invoker_comm = m.group("comm")
                ev.gfp_mask = m.group("gfp")
                ev.alloc_order = int(m.group("order"))
                osa = _HEADER_OSA.search(m.group("rest"))
                ev.invoker_osa = int(osa.group(1)) if osa else None
                return
            yield self.ctx.issue(st.line_no, "OOM header not understood", s, unparsed=False)
            return
        if "Killed process " in s:
            m = _KILLED.match(s)
            if m is None:
                yield self.ctx.issue(st.line_no, "OOM kill line not understood", s, unparsed=False)
                return
            if ev is not None and ev.kills and ev.group_cgroup is None:
                self.event = None  # a new kill after a finished one: a storm or a new OOM
                ev = None
            if ev is not None and ev.group_cgroup is not None and int(m.group("pid")) in ev.killed:
                # memory.oom.group kills every task of the cgroup, the chosen victim again: one
                # process, one kill (the line stays a kernel message)
                return
            if ev is None:
                ev = self._open(st)
            yield self._kill(ev, st, m)
            return
        if s.startswith("oom-kill:"):
            m = _SUMMARY.match(s)
            if m is None:
                yield self.ctx.issue(st.line_no, "oom-kill summary not understood", s, unparsed=False)
                return
            ev = self._current(st)
            ev.summary = st
            ev.constraint = m.group("constraint")
            if m.group("cpuset") is not None:
                ev.cpuset = m.group("cpuset")
            if m.group("oom_memcg") is not None:
                ev.oom_memcg = m.group("oom_memcg")
            if m.group("task_memcg") is not None:
                ev.task_cgroup = m.group("task_memcg")
            ev.summary_task = m.group("task")
            ev.summary_pid = int(m.group("pid"))
            ev.summary_uid = int(m.group("uid"))
            return
        if " process " in s and " score " in s:
            m = _CHOICE.match(s)
            if m is not None:
                ev = self._current(st)
                ev.choice = st
                ev.choice_pid = int(m.group("pid"))
                ev.choice_comm = m.group("comm")
                ev.choice_prefix = m.group("ctx")
                return
        if s.startswith("Task in "):
            m = _TASK_IN.match(s)
            if m is not None:
                ev = self._current(st)
                ev.task_cgroup = ev.task_cgroup or m.group("cg")
                ev.oom_memcg = ev.oom_memcg or m.group("limit")
                ev.scope_hint = ev.scope_hint or "memcg"
                return
        if s.startswith("Memory limit reached of cgroup "):
            m = _LIMIT_REACHED.match(s)
            if m is not None:
                ev = self._current(st)
                ev.oom_memcg = ev.oom_memcg or m.group("limit")
                ev.scope_hint = ev.scope_hint or "memcg"
                return
        if s.startswith("Out of memory and no killable processes"):
            ev = self._current(st)
            ev.terminal = st
            ev.scope_hint = ev.scope_hint or "global"
            yield from self.close()
            return
        if s.startswith("[") and "tgid" in s and "total_vm" in s:
            m = _TASKS_HEADER.match(s)
            if m is not None:
                ev = self._current(st)
                ev.task_cols = ["uid", "tgid", "total_vm", "rss", *m.group("cols").split()]
                return

        if ev is None:
            return

        # ---- lines inside an event --------------------------------------------------------
        if ev.kills:
            m = _GROUP.match(s) if s.startswith("Tasks in ") else None
            if m is not None:
                ev.group_cgroup = m.group("cg")
            elif ev.group_cgroup is not None:
                self.event = None  # the group's kill lines are consecutive: this one ends them
            return
        if ev.task_cols is not None and s.startswith("["):
            row = self._task_row(ev, st, s)
            if row is not None:
                yield row
            return
        if ev.invoker_pid is None and (s.startswith("CPU: ") or s.startswith("Pid: ")):
            m = (_CPU_LINE if s[0] == "C" else _PID_LINE).match(s)
            if m is not None:
                ev.invoker_pid = int(m.group("pid"))
                if ev.invoker_comm is None:
                    ev.invoker_comm = m.group("comm")
                ev.kernel_release = m.group("release")
            return
        if " cpuset=" in s and " mems_allowed=" in s:
            m = _CPUSET.match(s)
            if m is not None and ev.cpuset is None:
                ev.cpuset = m.group("cpuset")
            return
        if s.startswith(("memory", "swap:", "kmem:")):
            m = _COUNTER.match(s)
            if m is not None:
                counter = m.group("counter")
                usage, limit = int(m.group("usage")), _limit(m.group("limit"))
                if counter == "memory":
                    ev.memcg_usage_kb, ev.memcg_limit_kb = usage, limit
                    ev.scope_hint = ev.scope_hint or "memcg"
                elif counter == "swap":
                    ev.swap_usage_kb, ev.swap_limit_kb = usage, limit
                elif counter == "memory+swap":
                    ev.memsw_usage_kb, ev.memsw_limit_kb = usage, limit
            return
        if s == "Mem-Info:":
            ev.in_meminfo = True
            ev.scope_hint = ev.scope_hint or "global"
            return
        if ev.in_meminfo:
            self._meminfo(ev, s)

    def _meminfo(self, ev: _Event, s: str) -> None:
        if s.startswith("Node "):
            m = _ZONE_FREE.match(s)
            if m is not None:
                ev.zone_free_kb = (ev.zone_free_kb or 0) + int(m.group(1))
            return
        if "free:" in s and ev.free_pages is None:
            m = _FREE_PAGES.search(s)
            if m is not None:
                ev.free_pages = int(m.group(1))
            return
        if s.startswith("Free swap"):
            m = _FREE_SWAP.match(s)
            if m is not None:
                ev.free_swap_kb = int(m.group(1))
            return
        if s.startswith("Total swap"):
            m = _TOTAL_SWAP.match(s)
            if m is not None:
                ev.total_swap_kb = int(m.group(1))
            return
        if s.endswith(" pages RAM"):
            m = _PAGES_RAM.match(s)
            if m is not None and ev.ram_pages is None:
                ev.ram_pages = int(m.group(1))

    def _task_row(self, ev: _Event, st: _Stamp, s: str) -> OomTask | None:
        close = s.find("]")
        pid_text = s[1:close].strip() if close > 0 else ""
        if not pid_text.isdigit():
            return None
        cols = ev.task_cols
        assert cols is not None
        parts = s[close + 1 :].split(None, len(cols))
        if len(parts) < len(cols):
            return None
        values: dict[str, int | None] = {}
        try:
            for col, part in zip(cols, parts, strict=False):
                key = _TASK_FIELDS.get(col)
                if key is not None:
                    values[key] = int(part)
        except ValueError:
            return None
        name = parts[len(cols)] if len(parts) > len(cols) else ""
        pid = int(pid_text)
        ev.tasks[pid] = (values.get("uid"), values.get("oom_score_adj"))
        return OomTask(
            line_no=st.line_no,
            oom_id=ev.oom_id,
            pid=pid,
            uid=values.get("uid"),
            tgid=values.get("tgid"),
            total_vm_pages=values.get("total_vm_pages"),
            rss_pages=values.get("rss_pages"),
            rss_anon_pages=values.get("rss_anon_pages"),
            rss_file_pages=values.get("rss_file_pages"),
            rss_shmem_pages=values.get("rss_shmem_pages"),
            pgtables_bytes=values.get("pgtables_bytes"),
            nr_ptes=values.get("nr_ptes"),
            swapents=values.get("swapents"),
            oom_score_adj=values.get("oom_score_adj"),
            name=name,
            nr_pmds=values.get("nr_pmds"),
            cpu=values.get("cpu"),
            oom_adj=values.get("oom_adj"),
        )

    # ------------------------------------------------------------------ rows
    def _kill(self, ev: _Event, st: _Stamp, m: re.Match[str]) -> OomKill:
        pid = int(m.group("pid"))
        uid_text = m.group("uid") or m.group("uid6") or m.group("uid7")
        sizes = (
            _int(m.group("vm")),
            _int(m.group("anon")),
            _int(m.group("file")),
            _int(m.group("shmem")),
            _int(m.group("pgt")),
            _int(m.group("osa")),
            int(uid_text) if uid_text is not None else None,
        )
        row = self._kill_row(ev, st, pid=pid, comm=m.group("comm"), sizes=sizes, prefix=m.group("ctx"))
        ev.kills += 1
        ev.killed.add(pid)
        return row

    def _kill_row(
        self,
        ev: _Event,
        st: _Stamp,
        *,
        pid: int | None,
        comm: str | None,
        sizes: tuple[int | None, ...] | None,
        prefix: str | None,
    ) -> OomKill:
        vm, anon, file_, shmem, pgt, osa, uid = sizes if sizes is not None else (None,) * 7
        first_kill = ev.kills == 0
        task = ev.tasks.get(pid) if pid is not None else None
        if uid is None and pid is not None:
            if pid == ev.summary_pid:
                uid = ev.summary_uid
            elif task is not None:
                uid = task[0]
        if osa is None and pid is not None:
            if task is not None:
                osa = task[1]
            elif pid == ev.invoker_pid:
                osa = ev.invoker_osa
        cgroup = ev.group_cgroup if (not first_kill and ev.group_cgroup) else ev.task_cgroup
        scope = (
            _SCOPE_BY_CONSTRAINT.get(ev.constraint or "")
            or scope_of_prefix(prefix)
            or scope_of_prefix(ev.choice_prefix)
            or ev.scope_hint
        )
        unit = unit_of(cgroup) or unit_of(ev.oom_memcg) or unit_of(ev.cpuset)
        header = ev.header
        return OomKill(
            line_no=st.line_no,
            oom_id=ev.oom_id,
            ts=st.ts,
            ts_raw=st.ts_raw,
            ts_inferred=st.ts_inferred,
            monotonic_s=st.monotonic_s,
            host=st.host,
            killer=KILLER,
            scope=scope,
            victim_pid=pid,
            victim_comm=comm,
            victim_uid=uid,
            unit=unit,
            cgroup=cgroup,
            oom_memcg=ev.oom_memcg,
            total_vm_kb=vm,
            anon_rss_kb=anon,
            file_rss_kb=file_,
            shmem_rss_kb=shmem,
            pgtables_kb=pgt,
            oom_score_adj=osa,
            memcg_usage_kb=ev.memcg_usage_kb,
            memcg_limit_kb=ev.memcg_limit_kb,
            swap_usage_kb=ev.swap_usage_kb,
            swap_limit_kb=ev.swap_limit_kb,
            invoker_comm=ev.invoker_comm,
            invoker_pid=ev.invoker_pid,
            gfp_mask=ev.gfp_mask,
            alloc_order=ev.alloc_order,
            kernel_release=ev.kernel_release,
            free_kb=ev.zone_free_kb,
            free_swap_kb=ev.free_swap_kb,
            total_swap_kb=ev.total_swap_kb,
            ram_pages=ev.ram_pages,
            header_line_no=header.line_no if header is not None else None,
            message=st.text.strip(),
            cpuset=ev.cpuset,
            memsw_usage_kb=ev.memsw_usage_kb,
            memsw_limit_kb=ev.memsw_limit_kb,
            free_pages=ev.free_pages,
        )


def _int(value: str | None) -> int | None:
    return int(value) if value is not None else None
