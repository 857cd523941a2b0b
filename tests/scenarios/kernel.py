"""The kernel's OOM-kill record, by kernel generation, and ``dmesg`` in every time format.

Formats follow /work/shared/reference/kernel-and-journal.md §1-2 (printk format strings from
``mm/oom_kill.c``, ``mm/memcontrol.c``, util-linux ``dmesg.c``); values are drawn, never copied.

>>> t = Task(4242, "sglang::schedul", 2_000_000, 1_500_000, 3_000, 0, 4_194_304)
>>> k = kill_line("6.8", "memcg", t, page_kb=64)
>>> k.startswith("Memory cgroup out of memory: Killed process 4242 (sglang::schedul) total-vm:128000000kB, anon-rss:96000000kB")
True
>>> kill_line("4.15", "global", t, page_kb=4)[:40]
'Killed process 4242 (sglang::schedul) to'
>>> from datetime import UTC, datetime, timedelta
>>> boot = datetime(2026, 12, 2, 13, 27, 47, tzinfo=UTC)
>>> recs = [KRec(boot + timedelta(seconds=152.104016), 4, "a"), KRec(boot + timedelta(seconds=152.1041), 6, "b")]
>>> render_dmesg(recs, "raw", boot, "UTC")
['[  152.104016] a', '[  152.104100] b']
>>> render_dmesg(recs, "reltime", boot, "UTC")
['[Dec 2 13:30] a', '[  +0.000084] b']
>>> render_dmesg(recs, "iso", boot, "Europe/Berlin")[0]
'2026-12-02T14:30:19,104016+01:00 a'
>>> render_dmesg(recs, "kmsg", boot, "UTC")[1]
'6,2,152104100,-;b'
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

#: the kernel families whose OOM record formats differ (see the module docstring's reference)
FAMILY = {
    "3.10": "el7",
    "4.15": "pre419",
    "4.18": "rhel8",
    "5.4": "v5",
    "5.10": "v5",
    "5.14": "v5",
    "5.15": "v5",
    "6.8": "v68",
    "6.12": "v68",
    "6.18": "v68",
}
RELEASE = {
    ("3.10", "x86_64"): "3.10.0-1160.119.1.el7.x86_64",
    ("4.15", "x86_64"): "4.15.0-213-generic",
    ("4.18", "x86_64"): "4.18.0-553.16.1.el8_10.x86_64",
    ("5.4", "x86_64"): "5.4.0-200-generic",
    ("5.10", "x86_64"): "5.10.0-33-amd64",
    ("5.14", "x86_64"): "5.14.0-503.15.1.el9_5.x86_64",
    ("5.14", "aarch64"): "5.14.0-503.15.1.el9_5.aarch64+64k",
    ("5.15", "x86_64"): "5.15.0-126-generic",
    ("5.15", "aarch64"): "5.15.0-1072-nvidia-64k",
    ("6.8", "x86_64"): "6.8.0-60-generic",
    ("6.8", "aarch64"): "6.8.0-1028-nvidia-64k",
    ("6.12", "x86_64"): "6.12.38+deb13-amd64",
    ("6.12", "aarch64"): "6.12.38+deb13-arm64",
    ("6.18", "x86_64"): "6.18.4-200.fc43.x86_64",
    ("6.18", "aarch64"): "6.18.4-200.fc43.aarch64",
}
UNLIMITED_KB = 9007199254740988


@dataclass(frozen=True)
class Task:
    """A row of the kernel's task table (memory in pages, page tables in bytes)."""

    pid: int
    comm: str
    total_vm: int
    rss_anon: int
    rss_file: int
    rss_shmem: int
    pgtables_bytes: int
    uid: int = 0
    adj: int = 0

    @property
    def rss(self) -> int:
        return self.rss_anon + self.rss_file + self.rss_shmem


@dataclass(frozen=True)
class KRec:
    """One printk record: its time (UTC wall clock of the printk), level and text (may hold
    newlines: a multi-line record)."""

    ts: datetime
    prio: int
    text: str


def kill_line(kernel: str, scope: str, t: Task, *, page_kb: int) -> str:
    fam = FAMILY[kernel]
    kb = page_kb
    ctx = "Memory cgroup out of memory" if scope == "memcg" else "Out of memory"
    mem = (
        f"total-vm:{t.total_vm * kb}kB, anon-rss:{t.rss_anon * kb}kB, file-rss:{t.rss_file * kb}kB, "
        f"shmem-rss:{t.rss_shmem * kb}kB"
    )
    if fam == "el7":
        return f"Killed process {t.pid} ({t.comm}), UID {t.uid}, {mem}"
    if fam == "pre419":
        return f"Killed process {t.pid} ({t.comm}) {mem}"
    return f"{ctx}: Killed process {t.pid} ({t.comm}) {mem}, UID:{t.uid} pgtables:{t.pgtables_bytes // 1024}kB oom_score_adj:{t.adj}"


def _header(kernel: str, trigger: str, scope: str) -> str:
    fam = FAMILY[kernel]
    gfp = ("0xcc0(GFP_KERNEL)", "0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP)")[scope == "memcg"]
    if fam == "el7":
        return f"{trigger} invoked oom-killer: gfp_mask=0x201da, order=0, oom_score_adj=0"
    if fam == "pre419":
        return f"{trigger} invoked oom-killer: gfp_mask=0x14200ca(GFP_HIGHUSER_MOVABLE), nodemask=(null), order=0, oom_score_adj=0"
    return f"{trigger} invoked oom-killer: gfp_mask={gfp}, order=0, oom_score_adj=0"


def _cpu_line(kernel: str, arch: str, pid: int, comm: str) -> str:
    release = RELEASE.get((kernel, arch)) or RELEASE[(kernel, "x86_64")]
    if kernel in ("6.12", "6.18"):
        return f"CPU: 41 UID: 0 PID: {pid} Comm: {comm} Tainted: P           OE      {release} #1 PREEMPT(voluntary) "
    if FAMILY[kernel] == "el7":
        return f"CPU: 41 PID: {pid} Comm: {comm} Kdump: loaded Tainted: P           OE  ------------ T {release} #1"
    return f"CPU: 41 PID: {pid} Comm: {comm} Tainted: P           OE      {release} #1"


def _stack(kernel: str, arch: str, scope: str) -> list[str]:
    memcg = ["mem_cgroup_out_of_memory+0x13f/0x160", "try_charge_memcg+0x6d6/0x7d0"]
    glob = ["__alloc_pages_slowpath.constprop.0+0xc2d/0xd90", "__alloc_pages+0x2fb/0x320"]
    path = memcg if scope == "memcg" else glob
    if arch == "aarch64":
        frames = [
            "dump_backtrace+0x98/0x118",
            "show_stack+0x20/0x38",
            "dump_stack_lvl+0x48/0x60",
            "dump_header+0x50/0x1f8",
            "oom_kill_process+0x11c/0x320",
            "out_of_memory+0x10c/0x5c0",
            *path,
            "do_anonymous_page+0x19c/0x5e0",
            "handle_mm_fault+0x138/0x2a0",
            "do_page_fault+0x17c/0x480",
            "el0t_64_sync+0x190/0x198",
        ]
        return ["Hardware name: NVIDIA GH200 480GB/P3880, BIOS 02.04.02 20240318", "Call trace:"] + [
            f" {f}" for f in frames
        ]
    frames = [
        "dump_stack_lvl+0x76/0xa0" if kernel >= "5" else "dump_stack+0x6d/0x8b",
        "dump_header+0x4a/0x1f0",
        "oom_kill_process.cold+0xb/0x10",
        "out_of_memory+0x1bd/0x4e0",
        *path,
        "handle_mm_fault+0x18a/0x380",
        "do_user_addr_fault+0x169/0x670",
        "exc_page_fault+0x83/0x1b0",
        "asm_exc_page_fault+0x27/0x30",
    ]
    body = [f" {f}" for f in frames]
    if FAMILY[kernel] == "v68":
        body = [" <TASK>", *body, " </TASK>"]
    return ["Hardware name: Supermicro SYS-821GE-TNHR/X13DEG-OAD, BIOS 2.1 04/12/2024", "Call Trace:", *body]


def _memcg_block(kernel: str, cgroup: str, limit_kb: int, usage_kb: int, cgroup_v2: bool) -> list[str]:
    fam = FAMILY[kernel]
    counters = f"memory: usage {usage_kb}kB, limit {limit_kb}kB, failcnt {limit_kb % 9973}"
    if fam in ("el7", "pre419"):
        return [
            f"Task in {cgroup} killed as a result of limit of {cgroup}",
            counters,
            f"memory+swap: usage {usage_kb}kB, limit {UNLIMITED_KB}kB, failcnt 0",
            f"kmem: usage {usage_kb // 200}kB, limit {UNLIMITED_KB}kB, failcnt 0",
            f"Memory cgroup stats for {cgroup}: cache:{usage_kb // 90}KB rss:{usage_kb - usage_kb // 90}KB "
            "rss_huge:0KB mapped_file:0KB swap:0KB inactive_anon:0KB active_anon:0KB inactive_file:0KB "
            "active_file:0KB unevictable:0KB",
        ]
    anon = (usage_kb - usage_kb // 90) * 1024
    if cgroup_v2:
        lines = [counters, f"swap: usage 0kB, limit {UNLIMITED_KB}kB, failcnt 0"]
        stats = [("anon", anon), ("file", usage_kb // 90 * 1024), ("kernel", 51_118_080), ("shmem", 0)]
    else:
        lines = [
            counters,
            f"memory+swap: usage {usage_kb}kB, limit {UNLIMITED_KB}kB, failcnt 0",
            f"kmem: usage {usage_kb // 200}kB, limit {UNLIMITED_KB}kB, failcnt 0",
        ]
        stats = [("cache", usage_kb // 90 * 1024), ("rss", anon), ("rss_huge", 0), ("shmem", 0)]
    stats += [("pgfault", 88_121_994), ("pgmajfault", 40_112)]
    lines.append(f"Memory cgroup stats for {cgroup}:")
    body = [f"{k} {v}" for k, v in stats]
    if fam == "v68":
        return lines + body  # 6.5+: one record per line
    return [*lines, "\n".join(body)]  # one multi-line record


def _global_block(page_kb: int, total_pages: int) -> list[str]:
    free_kb = 412_000
    return [
        "Mem-Info:",
        f"active_anon:{total_pages // 3} inactive_anon:{total_pages // 2} isolated_anon:0\n"
        " active_file:1024 inactive_file:980 isolated_file:0\n"
        " unevictable:0 dirty:0 writeback:0\n"
        " slab_reclaimable:41210 slab_unreclaimable:88120\n"
        " mapped:2211 shmem:3345 pagetables:91234\n"
        f" free:{free_kb // page_kb} free_pcp:120 free_cma:0",
        f"Node 0 Normal free:{free_kb}kB boost:0kB min:{free_kb + 2048}kB low:{free_kb + 40960}kB "
        f"high:{free_kb + 81920}kB reserved_highatomic:0KB active_anon:0kB inactive_anon:0kB",
        "lowmem_reserve[]: 0 0 0 0",
        "Free swap  = 0kB",
        "Total swap = 0kB",
        f"{total_pages + total_pages // 40} pages RAM",
        "0 pages HighMem/MovableOnly",
        f"{total_pages // 60} pages reserved",
    ]


def _task_table(kernel: str, tasks: list[Task]) -> list[str]:
    fam = FAMILY[kernel]
    out: list[str] = []
    if fam == "el7":
        out.append("[ pid ]   uid  tgid total_vm      rss nr_ptes swapents oom_score_adj name")
        for t in tasks:
            out.append(
                f"[{t.pid:5d}] {t.uid:5d} {t.pid:5d} {t.total_vm:8d} {t.rss:8d} {t.pgtables_bytes // 4096:7d} "
                f"{0:8d}         {t.adj:5d} {t.comm}"
            )
        return out
    if fam == "pre419":
        out.append("[ pid ]   uid  tgid total_vm      rss pgtables_bytes swapents oom_score_adj name")
        for t in tasks:
            out.append(
                f"[{t.pid:5d}] {t.uid:5d} {t.pid:5d} {t.total_vm:8d} {t.rss:8d} {t.pgtables_bytes:8d} "
                f"{0:8d}         {t.adj:5d} {t.comm}"
            )
        return out
    out.append("Tasks state (memory values in pages):")
    if fam == "v68":
        out.append(
            "[  pid  ]   uid  tgid total_vm      rss rss_anon rss_file rss_shmem pgtables_bytes swapents "
            "oom_score_adj name"
        )
        for t in tasks:
            out.append(
                f"[{t.pid:7d}] {t.uid:5d} {t.pid:5d} {t.total_vm:8d} {t.rss:8d} {t.rss_anon:8d} {t.rss_file:8d} "
                f"{t.rss_shmem:9d} {t.pgtables_bytes:8d} {0:8d}         {t.adj:5d} {t.comm}"
            )
        return out
    out.append("[  pid  ]   uid  tgid total_vm      rss pgtables_bytes swapents oom_score_adj name")
    for t in tasks:
        out.append(
            f"[{t.pid:7d}] {t.uid:5d} {t.pid:5d} {t.total_vm:8d} {t.rss:8d} {t.pgtables_bytes:8d} "
            f"{0:8d}         {t.adj:5d} {t.comm}"
        )
    return out


def oom_record(
    *,
    kernel: str,
    arch: str,
    page_kb: int,
    scope: str,
    cgroup: str,
    tasks: list[Task],
    chosen: Task,
    group: list[Task] | None,
    limit_kb: int,
    cgroup_v2: bool,
    kill_ts: datetime,
) -> list[KRec]:
    """The records of one OOM kill, the chosen victim's kill line at exactly ``kill_ts``.

    ``group``: the tasks of a ``memory.oom.group`` cgroup, killed after the victim — the kernel
    prints the chosen victim's kill line a second time among them."""
    fam = FAMILY[kernel]
    usage_kb = sum(t.rss for t in tasks) * page_kb
    before: list[tuple[int, str]] = [(4, _header(kernel, chosen.comm, scope))]
    if fam in ("el7", "pre419"):
        before.append((4, f"{chosen.comm} cpuset=/ mems_allowed=0-1"))
    before.append((4, _cpu_line(kernel, arch, chosen.pid, chosen.comm)))
    before += [(4, s) for s in _stack(kernel, arch, scope)]
    if scope == "memcg":
        before += [(6, s) for s in _memcg_block(kernel, cgroup, limit_kb, min(usage_kb, limit_kb), cgroup_v2)]
    else:
        before += [(4, s) for s in _global_block(page_kb, sum(t.rss for t in tasks) * 5 // 4)]
    before += [(6, s) for s in _task_table(kernel, tasks)]
    if fam in ("rhel8", "v5", "v68"):
        oom_ctx = f"oom_memcg={cgroup}" if scope == "memcg" else "global_oom"
        constraint = "CONSTRAINT_MEMCG" if scope == "memcg" else "CONSTRAINT_NONE"
        before.append(
            (
                6,
                f"oom-kill:constraint={constraint},nodemask=(null),cpuset=/,mems_allowed=0-1,{oom_ctx},"
                f"task_memcg={cgroup},task={chosen.comm},pid={chosen.pid},uid={chosen.uid}",
            )
        )
    if fam in ("el7", "pre419"):
        ctx = "Memory cgroup out of memory" if scope == "memcg" else "Out of memory"
        before.append((3, f"{ctx}: Kill process {chosen.pid} ({chosen.comm}) score 912 or sacrifice child"))
    out: list[KRec] = []
    t = kill_ts - timedelta(microseconds=9 * len(before) + 40)
    for prio, text in before:
        out.append(KRec(t, prio, text))
        t += timedelta(microseconds=9)
    out.append(KRec(kill_ts, 3, kill_line(kernel, scope, chosen, page_kb=page_kb)))
    t = kill_ts
    if group:
        t += timedelta(microseconds=31)
        out.append(KRec(t, 6, f"Tasks in {cgroup} are going to be killed due to memory.oom.group set"))
        for member in group:  # the chosen victim again among them
            t += timedelta(microseconds=11)
            out.append(KRec(t, 3, kill_line(kernel, scope, member, page_kb=page_kb)))
    if fam != "el7":
        reaped = [chosen, *[m for m in group or [] if m.pid != chosen.pid][:2]]
        for i, v in enumerate(reaped):
            out.append(
                KRec(
                    kill_ts + timedelta(seconds=2, microseconds=51_113 + 733 * i),
                    6,
                    f"oom_reaper: reaped process {v.pid} ({v.comm}), now anon-rss:0kB, file-rss:0kB, shmem-rss:0kB",
                )
            )
    return out


# ----------------------------------------------------------------------------- dmesg renderings

_LEVELS = ("emerg", "alert", "crit", "err", "warn", "notice", "info", "debug")


def _mono(rec: KRec, boot: datetime) -> tuple[int, int]:
    us = round((rec.ts - boot) / timedelta(microseconds=1))
    return us // 1_000_000, us % 1_000_000


def render_dmesg(recs: list[KRec], fmt: str, boot: datetime, zone: str) -> list[str]:
    """``recs`` as ``dmesg`` prints them with a time format: ``raw`` (the default), ``prio``
    (``-r``), ``decode`` (``-x``), ``ctime`` (``-T``), ``iso`` (``--time-format iso``),
    ``reltime`` (``-H``/``-e``: the minute at each change, else the delta) or ``kmsg``
    (``/dev/kmsg`` records). Continuation lines of a multi-line record are indented by the
    prefix's width (kmsg escapes the newline)."""
    tz = ZoneInfo(zone)
    out: list[str] = []
    last_minute: tuple[int, int, int] | None = None
    last: datetime | None = None
    for seq, rec in enumerate(recs, start=1):
        sec, usec = _mono(rec, boot)
        local = (boot + timedelta(seconds=sec, microseconds=usec)).astimezone(tz)
        if fmt == "kmsg":
            text = rec.text.replace("\\", "\\x5c").replace("\n", "\\x0a")
            out.append(f"{rec.prio},{seq},{sec * 1_000_000 + usec},-;{text}")
            continue
        stamp = f"[{sec:5d}.{usec:06d}] "
        if fmt == "prio":
            prefix = f"<{rec.prio}>{stamp}"
        elif fmt == "decode":
            prefix = f"{'kern':<6}:{_LEVELS[rec.prio]:<6}: {stamp}"
        elif fmt == "ctime":
            prefix = f"[{local.strftime('%a %b')} {local.day:2d} {local.strftime('%H:%M:%S %Y')}] "
        elif fmt == "iso":
            off = local.strftime("%z")
            prefix = f"{local.strftime('%Y-%m-%dT%H:%M:%S')},{local.microsecond:06d}{off[:3]}:{off[3:]} "
        elif fmt == "reltime":
            minute = (local.timetuple().tm_yday, local.hour, local.minute)
            delta = 0.0 if last is None else (rec.ts - last).total_seconds()
            if minute != last_minute:
                prefix = f"[{local.strftime('%b')}{local.day:2d} {local.strftime('%H:%M')}] "
            elif delta < 10:
                prefix = f"[  {delta:+8.6f}] "
            else:
                prefix = f"[ {delta:+9.6f}] "
            last_minute, last = minute, rec.ts
        else:
            prefix = stamp
        first, *more = rec.text.split("\n")
        out.append(prefix + first)
        out += [" " * len(prefix) + m for m in more]
    return out
