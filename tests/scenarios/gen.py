"""Write a whole night from a :class:`~scenarios.spec.Scenario` and return its
:class:`~scenarios.spec.Truth`.

The story: the server unit (SGLang's or vLLM's, ``tests/scenarios/vllm.py``) was started (its
load is logged), served with a load that grows
towards the kill, and died by the scenario's cause; systemd, the kernel, earlyoom or
systemd-oomd said so in their own words; service came back (or not) by the scenario's recovery;
nvidia-smi sampled the GPUs throughout. Unrelated units start and fail near the kill; a second
server may run on other GPUs. A start-up failure scenario replaces the kill by a restart into a
configuration that never gets ready.

>>> import tempfile
>>> from scenarios.spec import draw
>>> with tempfile.TemporaryDirectory() as d:
...     truth = write_night(draw(7, 3), Path(d))
...     names = sorted(p.name for p in Path(d).iterdir())
>>> truth.real_unit.endswith(".service") and len(names) >= 2
True
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from .journal import JEntry, JournalStyle, render_bytes
from .kernel import FAMILY, RELEASE, KRec, Task, oom_record, render_dmesg
from .nvidia import Gpus, csv_loop, uuids
from .sglang import SglangLog, config_error_traceback, cuda_oom_traceback, envelope, server_args
from .spec import Scenario, Server, Truth, Victim
from .systemd import MESSAGE_ID, Systemd
from .vllm import VllmLog, death_message

IDLE_MIB = 1
#: the modes whose lines carry a wall-clock time
WALL_MODES = {"short", "short-iso", "short-precise", "short-full", "verbose", "export", "json", "syslog"}
#: sources whose stamps carry the year
YEAR_MODES = {"short-iso", "short-full", "verbose", "export", "json"}


def _s(x: float) -> timedelta:
    return timedelta(seconds=x)


@dataclass
class Run:
    """One start of a server unit."""

    server: Server
    start: datetime
    main_pid: int
    sched: list[int]
    detok: int
    marks: dict[str, datetime] = field(default_factory=dict)
    ready: datetime | None = None
    end: datetime | None = None  # its processes died or stopped
    release: datetime | None = None  # its GPU memory was released
    weights_mib: int = 0
    kv_mib: int = 0
    graph_mib: int = 2400


@dataclass
class Last:
    """The server's state at its last batch line and its last line before the kill."""

    running: int | None = None
    queued: int | None = None
    line_ts: datetime | None = None


class Night:
    def __init__(self, s: Scenario) -> None:
        self.s = s
        self.rng = random.Random(s.seed)
        self.sd = Systemd(s.systemd, s.status_format)
        self.entries: list[JEntry] = []
        self.krecs: list[KRec] = []
        self.logs: dict[str, SglangLog | VllmLog] = {}
        self.runs: list[Run] = []
        self.boot = s.kill_utc - _s(s.boot_before_s)
        self._pid = self.rng.randrange(3000, 60000)
        self.last = Last()
        self.gpu_times: list[datetime] = []
        self.cut: datetime | None = None  # where a split journal's second file begins
        #: a unit's memory limit (GiB) once its cgroup OOM record gave it: systemd's "memory
        #: peak" (the cgroup's memory.peak) of its runs is bounded by it
        self.limit_gib: dict[str, float] = {}

    # ------------------------------------------------------------------ small writers

    def pids(self, n: int) -> list[int]:
        out = list(range(self._pid, self._pid + n))
        self._pid += n + self.rng.randrange(3, 40)
        return out

    def sysd(
        self, ts: datetime, msg: str | None, unit: str | None = None, kind: str | None = None, prio: int = 6
    ) -> None:
        if msg is None:
            return
        fields = {"PRIORITY": str(prio)}
        if unit:
            fields["UNIT"] = unit
        if kind in MESSAGE_ID:
            fields["MESSAGE_ID"] = MESSAGE_ID[str(kind)]
        self.entries.append(JEntry(ts, "systemd", 1, msg, fields))

    def tool(
        self, ts: datetime, ident: str, pid: int, msg: str, unit: str | None = None, transport: str = "syslog"
    ) -> None:
        fields = {"PRIORITY": "6"}
        if unit:
            fields.update({"_SYSTEMD_UNIT": unit, "_SYSTEMD_CGROUP": f"/system.slice/{unit}"})
        self.entries.append(JEntry(ts, ident, pid, msg, fields, transport))

    def log(self, server: Server) -> SglangLog:
        log = self.log_any(server)
        assert isinstance(log, SglangLog)
        return log

    def vlog(self, server: Server) -> VllmLog:
        log = self.log_any(server)
        assert isinstance(log, VllmLog)
        return log

    def log_any(self, server: Server) -> SglangLog | VllmLog:
        if server.unit not in self.logs:
            container = self.s.envelope in ("cri", "docker") and server.unit
            zone = "UTC" if container else self.s.zone  # (a container)
            if self.s.engine == "vllm":
                self.logs[server.unit] = VllmLog(self.s.vllm_version, zone, server.tp)
            else:
                self.logs[server.unit] = SglangLog(self.s.sglang_version, zone, server.tp)
        return self.logs[server.unit]

    def operator(self, ts: datetime, command: str) -> None:
        pid = self.pids(1)[0]
        self.tool(
            ts,
            "sudo",
            pid,
            f"     ops : TTY=pts/0 ; PWD=/home/ops ; USER=root ; COMMAND=/usr/bin/systemctl {command}",
        )

    # ------------------------------------------------------------------ a server's life

    def start_run(self, server: Server, t: datetime, *, fail: str | None = None) -> Run:
        s, p = self.s, self.s.load_s
        main, *rest = self.pids(server.tp + 2)
        run = Run(server, t, main, rest[: server.tp], rest[server.tp])
        total = s.gpu_total_mib
        run.weights_mib = int(total * self.rng.uniform(0.35, 0.5))
        run.kv_mib = int(total * self.rng.uniform(0.3, 0.4))
        self.runs.append(run)
        if server.unit:  # (a server started by hand has no unit)
            self.sysd(t, self.sd.starting(server.unit, server.description), server.unit, "starting")
            self.sysd(t + _s(0.038), self.sd.started(server.unit, server.description), server.unit, "started")
        if s.engine == "vllm":
            return self._start_vllm(run, t, fail)
        log = self.log(server)
        log.pid = main
        log.add(t + _s(2.1), server_args(server.model, server.tp, server.port, 0.88))
        run.marks["server_args"] = t + _s(2.1)
        if fail == "config":
            dead = t + _s(3.4)
            for line in config_error_traceback(server.model):
                log.raw(dead, line)
            run.end = run.release = dead + _s(0.05)
            return run
        ranks = range(server.tp)
        for r in ranks:
            log.add(t + _s(p["pre"] * 0.5), "Init torch distributed begin.", r)
        lb = t + _s(p["pre"])
        for r in ranks:
            log.add(lb, f"Load weight begin. avail mem={total / 1024 - 1.2:.2f} GB", r)
        le = lb + _s(p["weights"])
        avail = (total - run.weights_mib) / 1024
        for r in ranks:
            log.add(
                le + _s(0.01 * r), log.load_end(server.arch, p["weights"], avail, run.weights_mib / 1024), r
            )
        run.marks.update(load_begin=lb, load_end=le)
        if fail == "kv_cuda_oom":
            at = le + _s(1.2)
            log.add(at, "Scheduler hit an exception: Traceback (most recent call last):", 0)
            for line in cuda_oom_traceback("kv", self.rng, total / 1024)[1:]:
                log.raw(at, line, 0)
            log.add(at + _s(0.2), log.sigquit(launch=True))
            run.end = at + _s(0.7)
            run.release = run.end + _s(1.0)
            return run
        kv = le + _s(p["kv"])
        tokens = int(run.kv_mib * 9.5)
        for r in ranks:
            log.add(kv, log.kv_alloc(tokens, run.kv_mib / 2048), r)
        avail -= run.kv_mib / 1024
        log.add(kv, f"Memory pool end. avail mem={avail:.2f} GB", 0)
        gb = kv + _s(0.8)
        log.add(gb, log.graph_begin(avail), 0)
        ge = gb + _s(p["graphs"])
        log.add(ge, log.graph_end(p["graphs"], run.graph_mib / 1024, avail - run.graph_mib / 1024), 0)
        log.add(ge + _s(0.4), log.limits(tokens, avail - run.graph_mib / 1024), 0)
        ready = ge + _s(p["post"])
        if log.v >= (0, 5, 17):
            log.add(
                ready - _s(11),
                f"Engine startup timings (s): load_weight={p['weights']:.2f}, kv_cache_allocation={p['kv']:.2f}, "
                f"scheduler_e2e={(ready - t).total_seconds() - 12:.2f}, cuda_graph={{decode={p['graphs']:.2f}}}, "
                "tokenizer_e2e=3.10",
            )
        up = ready - _s(10)
        log.add(up, f"INFO:     Started server process [{main}]")
        log.add(up, "INFO:     Waiting for application startup.")
        log.add(up, "INFO:     Application startup complete.")
        log.add(up, f"INFO:     Uvicorn running on http://0.0.0.0:{server.port} (Press CTRL+C to quit)")
        log.add(up + _s(1), 'INFO:     127.0.0.1:41772 - "GET /get_model_info HTTP/1.1" 200 OK')
        log.add(up + _s(1.5), log.prefill(1, 7, 0, 0.0, 0, 0), 0)
        log.add(ready - _s(0.4), 'INFO:     127.0.0.1:41772 - "POST /generate HTTP/1.1" 200 OK')
        log.add(ready, "The server is fired up and ready to roll!")
        run.marks.update(kv=kv, graph_begin=gb, graph_end=ge, ready=ready)
        run.ready = ready
        return run

    def _start_vllm(self, run: Run, t: datetime, fail: str | None) -> Run:
        """A vLLM server's start-up (§3 of the reference): the same phases as SGLang's, in its
        own lines; vLLM's API server is up a second or two after the engine's last step."""
        s, p, server = self.s, self.s.load_s, run.server
        log = self.vlog(server)
        v = log.v
        if v < (0, 6, 2):  # V0, the engine in the API server: ranks 1… in their own processes
            engine, workers = run.main_pid, run.sched[1:]
        elif v < (0, 8):
            engine, workers = run.detok, run.sched[1:]
        else:  # V1: every rank in its own process when TP > 1, else inside the engine core
            engine, workers = run.detok, run.sched if server.tp > 1 else []
        log.pids(run.main_pid, engine, workers)
        log.version_lines(t + _s(2.1), server.model, server.tp, server.port)
        run.marks["server_args"] = t + _s(2.1)
        if fail == "config":
            dead = t + _s(3.4)
            log.config_error(dead, server.model)
            run.end = run.release = dead + _s(0.05)
            return run
        log.engine_init(t + _s(p["pre"] * 0.5), server.model, server.tp)
        lb = t + _s(p["pre"])
        log.load_begin(lb, server.model)
        le = lb + _s(p["weights"])
        log.load_end(le, p["weights"], run.weights_mib / 1024)
        run.marks.update(load_begin=lb, load_end=le)
        if fail == "kv_cuda_oom":
            at = le + _s(1.2)
            log.startup_cuda_oom(at, self.rng, s.gpu_total_mib / 1024)
            run.end = at + _s(0.7)
            run.release = run.end + _s(1.0)
            return run
        kv = le + _s(p["kv"])
        log.kv(kv, int(run.kv_mib * 9.5), run.kv_mib / 1024)
        gb = kv + _s(0.8)
        log.graph_begin(gb)
        ge = gb + _s(p["graphs"])
        log.graph_end(ge, p["graphs"], run.graph_mib / 1024)
        log.init_engine(ge + _s(0.1), (ge - le).total_seconds())
        ready = ge + _s(0.4 + 0.05 * p["post"])  # (uvicorn starts as soon as the engine is up)
        log.ready(ready, server.port, 0.2)
        run.marks.update(kv=kv, graph_begin=gb, graph_end=ge, ready=ready)
        run.ready = ready
        return run

    def _serve_vllm(self, run: Run, start: datetime, end: datetime, *, ramp: bool) -> Last:
        """Statistics lines (every 10 s from 0.10.1, 5 s before) and access lines."""
        log, rng = self.vlog(run.server), self.rng
        interval = 10.0 if log.v >= (0, 10, 1) else 5.0
        span = max((end - start).total_seconds(), 1.0)
        base = rng.uniform(0.2, 0.45)
        most, queue_most = rng.randint(40, 400), rng.randint(5, 300)
        last = Last()
        t = start
        while t + _s(0.4) < end:
            frac = (t - start).total_seconds() / span
            usage = min(0.99, base + (0.98 - base) * frac**1.4) if ramp else base + 0.05 * rng.random()
            running = int(8 + most * usage)
            queued = int(queue_most * 2.83 * (frac - 0.5) ** 1.5) if ramp and frac > 0.5 else 0
            log.access(
                t + _s(rng.uniform(0.05, 0.3)), f"10.20.4.{rng.randint(10, 250)}:{rng.randint(30000, 65000)}"
            )
            log.stats(t + _s(0.35), running, queued, 100 * usage)
            last.running, last.queued, last.line_ts = running, queued, t + _s(0.35)
            t += _s(interval)
        log.lines.sort(key=lambda x: x.ts)
        return last

    def serve(self, run: Run, start: datetime, end: datetime, *, ramp: bool) -> Last:
        """Batch and access lines in ``[start, end)``; with ``ramp`` the load grows towards a full
        KV pool and a queue. Returns the last batch line's numbers and the last line's time."""
        if self.s.engine == "vllm":
            return self._serve_vllm(run, start, end, ramp=ramp)
        log, rng = self.log(run.server), self.rng
        log.pid = run.main_pid
        interval = rng.uniform(4, 9)
        span = max((end - start).total_seconds(), 1.0)
        base = rng.uniform(0.2, 0.45)
        most, queue_most = rng.randint(40, 400), rng.randint(5, 300)
        last = Last()
        t, step = start, 0
        while t + _s(0.4) < end:
            frac = (t - start).total_seconds() / span
            usage = min(0.99, base + (0.98 - base) * frac**1.4) if ramp else base + 0.05 * rng.random()
            running = int(8 + most * usage)
            queued = int(queue_most * 2.83 * (frac - 0.5) ** 1.5) if ramp and frac > 0.5 else 0
            tokens = int(usage * 900_000)
            if step % 3 == 0:
                log.add(
                    t, log.prefill(rng.randint(1, 4), rng.randint(900, 8000), 0, usage, running, queued), 0
                )
            log.add(t + _s(0.35), log.decode(running, tokens, usage, running * 11.3, queued), 0)
            last.running, last.queued, last.line_ts = running, queued, t + _s(0.35)
            access = t + _s(rng.uniform(0.05, 0.3))
            log.add(
                access,
                f'INFO:     10.20.4.{rng.randint(10, 250)}:{rng.randint(30000, 65000)} - "POST /v1/chat/completions HTTP/1.1" 200 OK',
            )
            t += _s(interval)
            step += 1
        log.lines.sort(key=lambda x: x.ts)
        return last

    def graceful_stop(self, run: Run, t: datetime) -> datetime:
        self.sysd(t, self.sd.stopping(run.server.unit, run.server.description), run.server.unit, "stopping")
        if self.s.engine == "vllm":
            self.vlog(run.server).shutdown(t + _s(0.2))
            return self._stopped(run, t)
        log = self.log(run.server)
        log.pid = run.main_pid
        log.add(
            t + _s(0.2),
            "SIGTERM received. signum=15 frame=<frame at 0x7f3a2c1d8e40, file '/usr/lib/python3.12/selectors.py', "
            "line 468, code select>. Draining requests and shutting down...",
        )
        log.add(
            t + _s(2.0),
            "Gracefully exiting... Remaining number of requests 0. Remaining requests remaining_rids=[].",
        )
        return self._stopped(run, t)

    def _stopped(self, run: Run, t: datetime) -> datetime:
        done = t + _s(2.6)
        self.sysd(done, self.sd.success(run.server.unit), run.server.unit, "success")
        self.sysd(
            done + _s(0.001),
            self.sd.stopped(run.server.unit, run.server.description),
            run.server.unit,
            "stopped",
        )
        run.end, run.release = done, done + _s(1.5)
        return done + _s(0.1)

    # ------------------------------------------------------------------ the kill

    def unit_tasks(self, run: Run) -> list[Task]:
        rng, kb = self.rng, self.s.page_kb
        gib = 1024 * 1024 // kb  # pages in a GiB

        def task(pid: int, comm: str, anon_gib: float, uid: int = 1001) -> Task:
            anon = int(anon_gib * gib)
            return Task(
                pid,
                comm,
                int(anon * 1.6) + 9 * gib,
                anon,
                int(0.4 * gib),
                int(0.05 * gib),
                anon // 400 * 8,
                uid,
            )

        if self.s.engine == "vllm":
            return self._vllm_tasks(run, task)
        tasks = [task(run.main_pid, "python3", rng.uniform(4, 9))]
        per = rng.uniform(18, 70)
        for i, pid in enumerate(run.sched):
            tasks.append(task(pid, "sglang::schedul", per + (1.5 if i == 0 else -0.1 * i)))
        tasks.append(task(run.detok, "sglang::detoken", rng.uniform(1, 3)))
        return tasks

    def _vllm_tasks(self, run: Run, task: Callable[[int, str, float], Task]) -> list[Task]:
        """The unit's processes under vLLM: the API server (``vllm`` when started by ``vllm
        serve``), the engine's process (0.6.2+; ``VLLM::EngineCore`` from 0.10.1), the ranks'
        own processes; the one :func:`vllm_victim` names holds the most memory."""
        log, rng = self.vlog(run.server), self.rng
        v, victim = log.v, vllm_victim(log, run)
        per = rng.uniform(18, 70)
        titled = v >= (0, 10, 1)
        main = "vllm" if self.s.ident == "vllm" else "python3"
        procs = [(run.main_pid, main)]
        if log.engine != run.main_pid:
            procs.append((log.engine, "VLLM::EngineCor" if titled else "python3"))
        procs += [(pid, "VLLM::Worker_TP" if titled else "python3") for pid in log.workers]
        return [
            task(
                pid,
                comm,
                per + 1.5 if pid == victim else rng.uniform(2, 9) if pid == run.main_pid else per - 2 - i,
            )
            for i, (pid, comm) in enumerate(sorted(procs))
        ]

    def kernel_kill(self, run: Run, scope: str) -> tuple[list[Task], Task, int]:
        s = self.s
        unit_tasks = self.unit_tasks(run)
        chosen = max(unit_tasks, key=lambda t: t.rss)
        cgroup = f"/system.slice/{run.server.unit}"
        tasks = list(unit_tasks)
        if scope == "global":
            others = [
                Task(1, "systemd", 43_000, 3_000, 2_000, 0, 200_000),
                Task(712, "systemd-journal", 90_000, 9_000, 30_000, 4_000, 400_000),
            ]
            tasks = sorted(others + tasks, key=lambda t: t.pid)
        limit_kb = -(-sum(t.rss for t in unit_tasks) * s.page_kb // (1024 * 1024)) * 1024 * 1024
        if scope == "memcg":
            self.limit_gib[run.server.unit] = limit_kb / 1024**2
        group = sorted(unit_tasks, key=lambda t: t.pid) if s.oom_group else None
        recs = oom_record(
            kernel=s.kernel,
            arch=s.arch,
            page_kb=s.page_kb,
            scope=scope,
            cgroup=cgroup,
            tasks=tasks,
            chosen=chosen,
            group=group,
            limit_kb=limit_kb,
            cgroup_v2=s.cgroup_v2,
            kill_ts=s.kill_utc,
        )
        self.krecs += recs
        if "journal" in s.kernel_in:
            # journald reads /dev/kmsg a little later, in order
            seen = recs[0].ts
            for r in recs:
                mono = round((r.ts - self.boot) / timedelta(microseconds=1))
                seen = max(seen + _s(0.000001), r.ts + _s(0.0003 + 0.0002 * self.rng.random()))
                self.entries.append(
                    JEntry(seen, "kernel", None, r.text, {"PRIORITY": str(r.prio)}, "kernel", mono)
                )
        consumers_kib = sum(t.rss for t in tasks) * s.page_kb
        return unit_tasks if s.oom_group else [chosen], chosen, consumers_kib

    def die(self, run: Run, at: datetime, *, code: str, status: str, result: str) -> None:
        unit = run.server.unit
        self.sysd(at, self.sd.main_exited(unit, code, status), unit, "exit", 5)
        for i, line in enumerate(self.sd.failed(unit, result)):
            self.sysd(at + _s(0.002 + 0.0001 * i), line, unit, "failed", 4)
        cpu = f"{self.rng.randint(1, 9)}h {self.rng.randint(1, 59)}min {self.rng.uniform(1, 59):.3f}s"
        peak = self.rng.uniform(40, 600)
        if unit in self.limit_gib:  # (killed at its limit: the peak is the limit)
            peak = self.limit_gib[unit] if code == "killed" else min(peak, self.limit_gib[unit])
        self.sysd(
            at + _s(0.003),
            self.sd.consumed(unit, cpu, peak, "1h 12min"),
            unit,
            "resources",
        )
        run.end = at

    def kill(self, run: Run) -> tuple[list[Victim], Victim | None, int | None, int | None]:
        """The scenario's death of ``run`` at the kill time; returns victims, the chosen one, its
        anon-rss (kB) and the task table's total rss (KiB)."""
        s, sd, unit, k = self.s, self.sd, run.server.unit, self.s.kill_utc
        if s.engine == "vllm":
            return self._kill_vllm(run)
        log = self.log(run.server)
        log.pid = run.main_pid
        newer = log.v >= (0, 5, 10)
        victims: list[Victim] = []
        chosen: Victim | None = None
        anon_kb = consumers = None
        if s.cause in ("cgroup_oom", "host_oom"):
            tasks, ch, consumers = self.kernel_kill(run, "memcg" if s.cause == "cgroup_oom" else "global")
            victims = [Victim(t.pid, t.comm) for t in tasks]
            chosen, anon_kb = Victim(ch.pid, ch.comm), ch.rss_anon * s.page_kb
            sentence = sd.oom_sentence(unit) if s.cgroup_v2 else None
            if sentence:
                self.sysd(k + _s(0.0019), sentence, unit, "oom", 5)
                self.sysd(k + _s(0.00196), sd.oom_sentence("system.slice"), "system.slice", "oom", 5)
            if s.oom_group:
                dead = k + _s(0.041)
            else:
                if newer:
                    log.add(
                        k + _s(0.6),
                        f"Subprocess scheduler_0 (pid={ch.pid}) crashed with exit code -9. Triggering SIGQUIT for cleanup...",
                    )
                    log.add(k + _s(0.62), log.sigquit(launch=False))
                dead = k + _s(1.1)
            result = sd.oom_result(False) if s.cgroup_v2 else "signal"
            self.die(run, dead, code="killed", status="9/KILL", result=result)
        elif s.cause == "oomd":
            tasks = self.unit_tasks(run)
            victims = [Victim(t.pid, t.comm) for t in tasks]
            self._oomd(run, len(tasks))
        elif s.cause == "earlyoom":
            ch = max(self.unit_tasks(run), key=lambda t: t.rss)
            chosen = Victim(ch.pid, ch.comm)
            victims = [chosen]
            self._earlyoom(ch, "sglang::scheduler_TP0")
            if newer:
                log.add(
                    k + _s(0.9),
                    f"Subprocess scheduler_0 (pid={ch.pid}) crashed with exit code -15. Triggering SIGQUIT for cleanup...",
                )
                log.add(k + _s(0.92), log.sigquit(launch=False))
            self.die(run, k + _s(1.3), code="killed", status="9/KILL", result="signal")
        elif s.cause == "gpu_oom":
            log.add(k, "Scheduler hit an exception: Traceback (most recent call last):", 0)
            for line in cuda_oom_traceback("forward", self.rng, s.gpu_total_mib / 1024)[1:]:
                log.raw(k, line, 0)
            log.add(k + _s(0.2), log.sigquit(launch=False))
            self.die(run, k + _s(0.6), code="killed", status="9/KILL", result="signal")
        else:
            raise ValueError(s.cause)
        return victims, chosen, anon_kb, consumers

    def _kill_vllm(self, run: Run) -> tuple[list[Victim], Victim | None, int | None, int | None]:
        """A vLLM server's death: the kernel or earlyoom kills the process :func:`vllm_victim`
        names; the server says so as its version does (§7.3: a V0 worker's pid and exit code,
        V1's worker proc or engine core by name, nothing at all from a 0.8 engine core or from
        the API server's own process) and its API server exits 1. (A 0.8 engine core's death is
        really noticed by nobody; here its unit still fails, as ``OOMPolicy=stop`` would make it.)"""
        s, sd, unit, k = self.s, self.sd, run.server.unit, self.s.kill_utc
        log = self.vlog(run.server)
        victims: list[Victim] = []
        chosen: Victim | None = None
        anon_kb = consumers = None
        cgroup_result = sd.oom_result(False) if s.cgroup_v2 else None
        if s.cause == "oomd":  # the whole cgroup at once: nobody is left to say anything
            victims = [Victim(t.pid, t.comm) for t in self.unit_tasks(run)]
            self._oomd(run, len(victims))
            return victims, chosen, anon_kb, consumers
        if s.cause == "gpu_oom":
            log.cuda_oom(k, self.rng, s.gpu_total_mib / 1024)
            log.shutdown(k + _s(0.3))
            self.die(run, k + _s(0.6), code="exited", status="1/FAILURE", result="exit-code")
            return victims, chosen, anon_kb, consumers
        if s.cause == "earlyoom":
            ch = max(self.unit_tasks(run), key=lambda t: t.rss)
            chosen, code = Victim(ch.pid, ch.comm), -15
            victims = [chosen]
            self._earlyoom(
                ch,
                "VLLM::EngineCore"
                if ch.comm.startswith("VLLM::")
                else "python3 -c from multiprocessing.spawn import spawn_main; spawn_main(tracker_fd=5, pipe_handle=7) --multiprocessing-fork",
            )
            said_at, dead = k + _s(0.9), k + _s(1.3)
        else:
            tasks, ch, consumers = self.kernel_kill(run, "memcg" if s.cause == "cgroup_oom" else "global")
            victims = [Victim(t.pid, t.comm) for t in tasks]
            chosen, anon_kb, code = Victim(ch.pid, ch.comm), ch.rss_anon * s.page_kb, -9
            sentence = sd.oom_sentence(unit) if s.cgroup_v2 else None
            if sentence:
                self.sysd(k + _s(0.0019), sentence, unit, "oom", 5)
                self.sysd(k + _s(0.00196), sd.oom_sentence("system.slice"), "system.slice", "oom", 5)
            said_at, dead = k + _s(0.6), k + _s(1.1)
            if s.oom_group or ch.pid == run.main_pid:  # every process, or the API server itself
                self.die(run, k + _s(0.041), code="killed", status="9/KILL", result=cgroup_result or "signal")
                return victims, chosen, anon_kb, consumers
        log.death(said_at, vllm_role(log), ch.pid, code)
        log.shutdown(said_at + _s(0.2))
        self.die(run, dead, code="exited", status="1/FAILURE", result=cgroup_result or "exit-code")
        return victims, chosen, anon_kb, consumers

    def _oomd(self, run: Run, n: int) -> None:
        sd, unit, k = self.sd, run.server.unit, self.s.kill_utc
        self.tool(
            k,
            "systemd-oomd",
            611,
            f"Killed /system.slice/{unit} due to memory pressure for /system.slice being "
            f"{self.rng.uniform(55, 90):.2f}% > 50.00% for > 20s with reclaim activity",
            "systemd-oomd.service",
            "journal",
        )
        self.sysd(k + _s(0.05), sd.oomd_sentence(unit, n), unit, None, 5)
        self.die(run, k + _s(0.3), code="killed", status="9/KILL", result=sd.oom_result(True))

    def _earlyoom(self, ch: Task, cmdline: str) -> None:
        k, rss_mib = self.s.kill_utc, ch.rss * self.s.page_kb // 1024
        self.tool(
            k - _s(0.4),
            "earlyoom",
            1893,
            "low memory! at or below SIGTERM limits: mem  9.87%, swap 100.00%",
            "earlyoom.service",
            "stdout",
        )
        self.tool(
            k,
            "earlyoom",
            1893,
            f'sending SIGTERM to process {ch.pid} uid {ch.uid} "{ch.comm}": oom_score 1134, VmRSS {rss_mib} MiB, '
            f'cmdline "{cmdline}"',
            "earlyoom.service",
            "stdout",
        )
        self.tool(
            k + _s(0.41),
            "earlyoom",
            1893,
            f"process {ch.pid} exited after 0.410 seconds",
            "earlyoom.service",
            "stdout",
        )


def vllm_role(log: VllmLog) -> str:
    """The process of a vLLM server that holds the most host memory, so the one an OOM killer
    picks: the engine's (V1 0.10.1+, with its workers' shared buffers; a single-rank V0 0.6
    engine), a rank's own process (TP > 1 before 0.10.1), or the API server itself (0.4 with one
    rank: engine and model in one process)."""
    v = log.v
    if v >= (0, 10, 1):
        return "engine"
    if log.tp > 1:
        return "worker"
    return "engine" if v >= (0, 6, 2) else "main"


def vllm_victim(log: VllmLog, run: Run) -> int:
    role = vllm_role(log)
    if role == "worker":
        return log.workers[0]
    return log.engine if role == "engine" else run.main_pid


def _since_text(s: Scenario, t: datetime) -> str:
    return t.astimezone(ZoneInfo(s.zone)).strftime("%Y-%m-%d %H:%M:%S")


@dataclass
class Written:
    truth: Truth
    args: list[str]  # the build's options besides --logs/--db/--out
    files: list[Path]


def write_night(s: Scenario, out: Path) -> Truth:
    """Write the night's files into ``out`` and return the truth."""
    return write(s, out).truth


def write(s: Scenario, out: Path) -> Written:  # noqa: C901 - 18 > 15: listed in docs/dev/README.md
    night = Night(s)
    rng, sd, k = night.rng, night.sd, s.kill_utc
    a = s.server
    release_s = min(s.release_s, s.restart_sec + s.load_s["pre"] * 0.5 - 1)
    restart_count = 0
    attempts = 0
    recovery: Run | None = None
    victims: list[Victim] = []
    chosen: Victim | None = None
    anon_kb = consumers = None
    killed_back = False

    if s.startup is None:
        p = s.load_s
        load = p["pre"] + p["weights"] + p["kv"] + 0.8 + p["graphs"] + p["post"]
        start = k - _s(s.serving_s + load)
        run1 = night.start_run(a, start)
        assert run1.ready is not None
        night.last = night.serve(run1, run1.ready + _s(6), k, ramp=True)
        victims, chosen, anon_kb, consumers = night.kill(run1)
        assert run1.end is not None
        dead = run1.end
        run1.release = dead + _s(release_s)
        window_start = start - _s(300)
        if s.recovery == "restart":
            t = dead + _s(s.restart_sec)
            for line in sd.restart(a.unit, s.restart_sec, 1):
                night.sysd(t, line, a.unit, "restart")
            night.sysd(t + _s(0.001), sd.stopped(a.unit, a.description), a.unit, "stopped")
            recovery = night.start_run(a, t + _s(0.002))
            restart_count, killed_back = 1, True
        elif s.recovery in ("operator", "fallback", "manual"):
            t = k + _s(s.react_s)
            login = t - _s(rng.uniform(20, 60))
            night.tool(
                login,
                "sshd",
                night.pids(1)[0],
                "Accepted publickey for ops from 10.20.0.15 port 51822 ssh2: ED25519 SHA256:q3Vt1mJ0kFz8rX2bN6yW4sLc9dPe7uHa5oGiTfKxYwM",
                "ssh.service",
            )
            target = a if s.recovery == "operator" else s.fallback
            assert target is not None
            if target.unit:
                night.operator(t, f"{'restart' if target is a else 'start'} {target.unit}")
            recovery = night.start_run(target, t + _s(0.8))
            killed_back = target is a
        elif s.recovery == "onfailure":
            assert s.fallback is not None
            night.sysd(dead + _s(0.004), sd.on_failure(a.unit), a.unit)
            recovery = night.start_run(s.fallback, dead + _s(0.006))
        end = (recovery.ready + _s(600)) if recovery and recovery.ready else k + _s(2100)
        if recovery and recovery.ready:
            night.serve(recovery, recovery.ready + _s(5), end, ramp=False)
    else:
        # a serving run, restarted by the operator into a configuration that never gets ready
        fail = "kv_cuda_oom" if s.startup == "cuda_oom_loop" else "config"
        p = s.load_s
        to_death = (3.4 + 0.05) if fail == "config" else (p["pre"] + p["weights"] + 1.2 + 0.7)
        t0 = k - _s(to_death + 2.7)
        load = p["pre"] + p["weights"] + p["kv"] + 0.8 + p["graphs"] + p["post"]
        run0 = night.start_run(a, t0 - _s(s.serving_s + load))
        assert run0.ready is not None
        night.serve(run0, run0.ready + _s(6), t0 - _s(1), ramp=False)
        night.operator(t0 - _s(0.5), f"restart {a.unit}")
        t = night.graceful_stop(run0, t0)
        window_start = run0.start - _s(300)
        n = rng.randint(3, 5) if fail == "kv_cuda_oom" else 5
        restart_sec = s.restart_sec if fail == "kv_cuda_oom" else 0.1
        for i in range(n):
            run = night.start_run(a, t, fail=fail)
            assert run.end is not None
            if fail == "config" or s.engine == "vllm":  # (vLLM's API server exits 1 when its engine fails)
                night.die(run, run.end, code="exited", status="1/FAILURE", result="exit-code")
            else:
                night.die(run, run.end, code="killed", status="9/KILL", result="signal")
            attempts += 1
            if i == 0:
                assert abs((run.end - k).total_seconds()) < 0.5, (run.end, k)
            if i < n - 1:
                t = run.end + _s(restart_sec)
                for line in sd.restart(a.unit, restart_sec, i + 1):
                    night.sysd(t, line, a.unit, "restart")
                night.sysd(t + _s(0.001), sd.stopped(a.unit, a.description), a.unit, "stopped")
                t += _s(0.002)
                restart_count += 1
        assert run.end is not None
        if fail == "config":
            # systemd schedules the next restart (its counter one on) and only then finds the
            # start limit hit: that restart never runs
            for line in sd.restart(a.unit, restart_sec, n):
                night.sysd(run.end + _s(restart_sec * 0.5), line, a.unit, "restart")
            night.sysd(run.end + _s(0.099), sd.stopped(a.unit, a.description), a.unit, "stopped")
            night.sysd(run.end + _s(0.1), sd.start_limit(a.unit), a.unit)
            night.sysd(
                run.end + _s(0.1001), sd.failed(a.unit, sd.start_limit_result())[0], a.unit, "failed", 4
            )
            night.sysd(run.end + _s(0.1002), sd.failed_to_start(a.unit, a.description), a.unit, None, 3)
        else:
            stop = run.end + _s(rng.uniform(20, 90))
            night.operator(stop - _s(0.6), f"stop {a.unit}")
            night.sysd(stop, sd.stopped(a.unit, a.description), a.unit, "stopped")
        end = run.end + _s(1500)

    # a second server on other GPUs, serving all night
    if s.other is not None:
        o_start = window_start - _s(120)
        o_run = night.start_run(s.other, o_start)
        assert o_run.ready is not None
        night.serve(o_run, o_run.ready + _s(3), end, ramp=False)

    noise(night, window_start, end)
    night.gpu_times = _gpu_times(night, k - _s(900), min(end, k + _s(1500)))
    if s.journal_split:
        night.cut = window_start + (end - window_start) * rng.uniform(0.2, 0.9)
    truth = _truth(night, victims, chosen, anon_kb, consumers, recovery, restart_count, attempts, killed_back)
    files = _write_files(night, out, window_start, end)
    args = ["--tz", s.zone]
    if s.since_given:
        args += ["--since", _since_text(s, window_start + _s(60))]
    if s.host_given:
        args += ["--host", s.host]
    return Written(truth, args, files)


# ----------------------------------------------------------------------------- noise


def noise(night: Night, lo: datetime, hi: datetime) -> None:
    """Unrelated units near the kill: oneshots that succeed or fail, a timer's service, a
    daemon restarted shortly before the kill, an operator's session."""
    s, sd, rng, k = night.s, night.sd, night.rng, night.s.kill_utc

    def near(a: float, b: float) -> datetime:
        return min(max(k + _s(rng.uniform(a, b)), lo + _s(1)), hi - _s(1))

    if "oneshot" in s.noise:
        t, u, d = near(-300, 300), "logrotate.service", "Rotate log files"
        night.sysd(t, sd.starting(u, d), u, "starting")
        night.sysd(t + _s(0.4), sd.success(u), u, "success")
        night.sysd(t + _s(0.401), sd.finished(u, d), u, "started")
    if "failing-oneshot" in s.noise:
        t, u, d = near(-240, 240), "gpu-healthcheck.service", "GPU health check"
        night.sysd(t, sd.starting(u, d), u, "starting")
        night.sysd(t + _s(1.2), sd.main_exited(u, "exited", "1/FAILURE"), u, "exit", 5)
        for line in sd.failed(u, "exit-code"):
            night.sysd(t + _s(1.201), line, u, "failed", 4)
        night.sysd(t + _s(1.202), sd.failed_to_start(u, d), u, None, 3)
    if "timer" in s.noise:
        # sysstat-collect.timer fires every ten minutes, all night: one of its jobs near the kill
        first, u, d = near(-200, 400), "sysstat-collect.service", "system activity accounting tool"
        while first - _s(600) > lo:
            first -= _s(600)
        t = first
        while t < hi - _s(1):
            night.sysd(t, sd.starting(u, d), u, "starting")
            night.sysd(t + _s(0.2), sd.success(u), u, "success")
            night.sysd(t + _s(0.201), sd.finished(u, d), u, "started")
            t += _s(600)
    if "restarted-daemon" in s.noise:
        t, u, d = near(-240, -30), "dcgm-exporter.service", "NVIDIA DCGM exporter"
        night.sysd(t, sd.stopping(u, d), u, "stopping")
        night.sysd(t + _s(0.3), sd.stopped(u, d), u, "stopped")
        night.sysd(t + _s(0.31), sd.starting(u, d), u, "starting")
        night.sysd(t + _s(0.35), sd.started(u, d), u, "started")
    if "session" in s.noise:
        t = near(30, 400)
        night.tool(
            t, "systemd-logind", 1204, "New session 42 of user ops.", "systemd-logind.service", "journal"
        )
        night.sysd(
            t + _s(0.01),
            sd.started("session-42.scope", "Session 42 of User ops"),
            "session-42.scope",
            "started",
        )
    if s.cause == "earlyoom" or rng.random() < 0.3:
        t = lo + _s(17)
        while t < hi:
            avail = rng.randint(40_000, 400_000)
            night.tool(
                t,
                "earlyoom",
                1893,
                f"mem avail: {avail:7d} of 2063588 MiB ({100 * avail / 2063588:5.2f}%), swap free:    0 of    0 MiB ( 0.00%)",
                "earlyoom.service",
                "stdout",
            )
            t += _s(300)


# ----------------------------------------------------------------------------- truth


def _truth(
    night: Night,
    victims: list[Victim],
    chosen: Victim | None,
    anon_kb: int | None,
    consumers: int | None,
    recovery: Run | None,
    restart_count: int,
    attempts: int,
    killed_back: bool,
) -> Truth:
    s, k = night.s, night.s.kill_utc
    fam = FAMILY[s.kernel]
    kernel_path = bool(s.kernel_in) and (fam in ("rhel8", "v5", "v68") or s.cause == "cgroup_oom")
    # a log file named ``<unit>.log`` (``StandardOutput=append:…/%n.log``) names its unit too
    named_file = s.sglang_in == "file" and s.server.log_name == f"{s.server.unit}.log"
    unit_named = s.journal_mode is not None or kernel_path or named_file
    phases: dict[str, float] = {}
    if recovery is not None and recovery.ready is not None:
        m = recovery.marks
        phases = {
            "weights": (m["load_end"] - m["load_begin"]).total_seconds(),
            "graphs": (m["graph_end"] - m["graph_begin"]).total_seconds(),
            "load": (recovery.ready - recovery.start).total_seconds(),
        }
    gpu_freed, freed_at = _gpu_truth(night)
    wall_journal = s.journal_mode in WALL_MODES
    mono_dmesg = "dmesg" in s.kernel_in and s.dmesg_format in ("raw", "prio", "decode", "kmsg")
    # SGLang 0.5.10+ names the pid of a scheduler the kernel killed alone, with its own time
    # (in its file whatever the envelope: each keeps a line's time)
    pid_said = (
        s.cause in ("cgroup_oom", "host_oom")
        and not s.oom_group
        and s.sglang_version not in ("0.4.6.post1", "0.5.2")
    )
    if s.engine == "vllm":
        pid_said = _vllm_names_victim(s, night.vlog(s.server))
        wall_journal = wall_journal and _vllm_journal_witness(s, night.vlog(s.server))
    datable = (
        wall_journal
        or ("dmesg" in s.kernel_in and s.dmesg_format in ("ctime", "iso"))
        or (mono_dmesg and s.journal_mode in ("export", "json", "verbose"))
        or ("dmesg" in s.kernel_in and pid_said)  # (the server's line dates it, to its second)
        or s.cause == "gpu_oom"
    )
    minute_only = (
        not datable
        and s.cause in ("cgroup_oom", "host_oom")
        and s.kernel_in == ("dmesg",)
        and s.dmesg_format == "reltime"
    )
    year = True  # every SGLang line carries its date (0.3.4+), whatever the journal's mode
    if s.engine == "vllm":  # vLLM's lines carry none: the journal's, the kernel's, a wrapper's, --since
        year = (
            s.since_given
            or s.journal_mode in YEAR_MODES
            or ("dmesg" in s.kernel_in and s.dmesg_format in ("ctime", "iso"))
            or (s.sglang_in == "file" and s.envelope in ("cri", "docker", "supervisor"))
            or s.nvidia is not None  # (nvidia-smi's timestamps and `date` lines carry it)
        )
    return Truth(
        host=s.host,
        cause=s.cause,
        unit=s.server.unit if unit_named else "unknown",
        real_unit=s.server.unit,
        victims=tuple(victims),
        chosen=chosen,
        victim_anon_kb=anon_kb,
        consumers_rss_kib=consumers,
        kill_utc=k,
        startup_failure=s.startup is not None,
        start_attempts=attempts,
        recovery_unit=(recovery.server.unit or "unknown") if recovery is not None else None,
        recovery_aliases=_aliases(s, recovery),
        recovered_utc=recovery.ready if recovery is not None else None,
        downtime_s=(recovery.ready - k).total_seconds() if recovery is not None and recovery.ready else None,
        recovery_load_s=phases.get("load"),
        recovery_phases=phases,
        running_at_kill=night.last.running,
        queued_at_kill=night.last.queued,
        last_activity_utc=_last_line_before(night, k),
        gpu_freed=gpu_freed,
        gpu_freed_utc=freed_at,
        restart_count=restart_count,
        unit_named=unit_named,
        year_evidence=year,
        datable=datable or minute_only,
        minute_only=minute_only,
        killed_unit_back=killed_back,
        death_utc=_death(night),
        other_starts=_other_starts(night),
        journal_cut_utc=night.cut,
        sampled_after_kill=s.nvidia is not None
        and any(k < x <= k + timedelta(seconds=120) for x in night.gpu_times),
        first_sample_after_s=next(((x - k).total_seconds() for x in night.gpu_times if x > k), None),
    )


def _vllm_names_victim(s: Scenario, log: VllmLog) -> bool:
    """A vLLM server's line tells which process the kernel killed, and when: V0's "Worker
    VllmWorkerProcess pid N died, exit code: -9" by its pid; V1's dead engine core or worker by
    name — the kernel's victim, by its process title (``VLLM::EngineCor``, 0.10.1 on) or, before
    titles, by its pid, which the worker's own lines carry (``(VllmWorker rank=0 pid=N)``). No
    line at all from a 0.8 engine core, nor when the kernel killed every process
    (memory.oom.group) or the API server's own process; a V0 engine's "MQLLMEngine is already
    dead" comes when the API server next looks, and names a process whose lines carry no pid."""
    role = vllm_role(log)
    if s.cause not in ("cgroup_oom", "host_oom") or s.oom_group or role == "main":
        return False
    if role == "engine" and log.v < (0, 8):
        return False
    return death_message(log.v, role, 0, -9) is not None


def _vllm_journal_witness(s: Scenario, log: VllmLog) -> bool:
    """The journal holds a line of a vLLM server's kill: the kernel's record, systemd's OOM
    sentence (cgroup v2), systemd-oomd's or earlyoom's, the main process killed by SIGKILL (every
    process, or the API server itself), the crash's own lines; else only the API server's exit
    status 1 a second later, which says nothing of a kill."""
    if s.cause not in ("cgroup_oom", "host_oom") or s.startup is not None:
        return True
    return "journal" in s.kernel_in or s.cgroup_v2 or s.oom_group or vllm_role(log) == "main"


def _other_starts(night: Night) -> tuple[tuple[str, datetime], ...]:
    """Units that are not servers started in the journal: (unit, a Starting/Started line's time),
    each of their lines."""
    servers = {x.unit for x in (night.s.server, night.s.other, night.s.fallback) if x is not None}
    kinds = {MESSAGE_ID["starting"], MESSAGE_ID["started"]}
    seen: list[tuple[str, datetime]] = []
    for e in sorted(night.entries, key=lambda e: e.ts):
        unit = e.fields.get("UNIT")
        starts = e.message.startswith(("Starting", "Started")) and e.fields.get("MESSAGE_ID") in kinds
        if e.ident == "systemd" and starts and unit and unit not in servers:
            seen.append((unit, e.ts))
    return tuple(seen)


def _death(night: Night) -> datetime | None:
    ends = [
        r.end
        for r in night.runs
        if r.server is night.s.server and r.end is not None and r.end >= night.s.kill_utc
    ]
    return min(ends) if ends else None


def _aliases(s: Scenario, recovery: Run | None) -> tuple[str | None, ...]:
    if recovery is None:
        return ()
    if s.journal_mode is None or not recovery.server.unit:
        return (None, "unknown")
    described = s.systemd < 249 or s.status_format == "description"
    if recovery.server is not s.server and described and s.journal_mode not in ("export", "json", "verbose"):
        return (recovery.server.description,)
    return ()


def _last_line_before(night: Night, k: datetime) -> datetime | None:
    if night.s.startup is not None:
        return None
    log = night.logs.get(night.s.server.unit)
    if log is None:
        return None
    # a line the file gives no time (vLLM's uvicorn lines, as written) tells no activity's time
    untimed_ok = night.s.sglang_in == "journal" or night.s.envelope != "plain"
    before = [x.ts for x in log.lines if x.ts < k and (x.timed or untimed_ok)]
    return max(before) if before else None


def _gpu_times(night: Night, lo: datetime, hi: datetime) -> list[datetime]:
    s = night.s
    step = max(10.0, s.nvidia_interval_s) if s.nvidia == "date-lines" else s.nvidia_interval_s
    t = lo.replace(microsecond=123_000)
    out = []
    while t < hi:
        out.append(t)
        t += _s(step + (0.001 if s.nvidia == "date-lines" else 0.0))
    return out


def _used(night: Night, gpu: int, ts: datetime) -> int:
    total = IDLE_MIB
    for run in night.runs:
        if gpu not in run.server.gpus or ts < run.start:
            continue
        if run.release is not None and ts >= run.release:
            continue
        m = run.marks
        if "load_begin" not in m or ts < m["load_begin"]:
            total += 600 if ts >= run.start + _s(night.s.load_s["pre"] * 0.5) else 0
            continue
        if ts < m["load_end"]:
            frac = (ts - m["load_begin"]) / (m["load_end"] - m["load_begin"])
            total += 600 + int(run.weights_mib * frac)
            continue
        total += 600 + run.weights_mib
        if "kv" in m and ts >= m["kv"]:
            total += run.kv_mib
        if "graph_end" in m and ts >= m["graph_end"]:
            total += run.graph_mib
    return total


def _gpu_truth(night: Night) -> tuple[bool | None, datetime | None]:
    s = night.s
    if s.nvidia is None or s.startup is not None:
        return None, None
    killed = next(r for r in night.runs if r.server is s.server and r.end is not None and r.end >= s.kill_utc)
    assert killed.release is not None
    for t in night.gpu_times:
        if t >= killed.release and all(_used(night, g, t) == IDLE_MIB for g in s.server.gpus):
            return True, t
        if t > killed.release + _s(120):
            break
    return None, None


# ----------------------------------------------------------------------------- files


def _unique(out: Path, name: str, taken: set[str]) -> Path:
    stem = name
    i = 1
    while name in taken:
        i += 1
        name = f"{i}-{stem}"
    taken.add(name)
    return out / name


def _write_files(night: Night, out: Path, lo: datetime, hi: datetime) -> list[Path]:
    s = night.s
    out.mkdir(parents=True, exist_ok=True)
    taken: set[str] = set()
    files: list[Path] = []
    servers = [x for x in (s.server, s.other, s.fallback) if x is not None]
    by_hand = [x for x in servers if not x.unit]  # its output goes to its own file, as written
    servers = [x for x in servers if x.unit]
    for srv in by_hand:
        log = night.logs.get(srv.unit)
        if log is not None:
            path = _unique(out, srv.log_name, taken)
            path.write_text(
                "\n".join(x.text for x in sorted(log.lines, key=lambda x: x.ts)) + "\n", encoding="utf-8"
            )
            files.append(path)
    if s.sglang_in == "journal":
        for srv in servers:
            log = night.logs.get(srv.unit)
            for line in log.lines if log else []:
                if lo <= line.ts <= hi:
                    night.entries.append(
                        JEntry(
                            line.ts + _s(0.00015),
                            s.ident,
                            line.pid,
                            line.text,
                            {
                                "PRIORITY": "6",
                                "_COMM": "vllm" if s.ident == "vllm" else "python3",
                                "_SYSTEMD_UNIT": srv.unit,
                                "_SYSTEMD_CGROUP": f"/system.slice/{srv.unit}",
                                "_SYSTEMD_SLICE": "system.slice",
                            },
                            "stdout",
                        )
                    )
    else:
        for srv in servers:
            log = night.logs.get(srv.unit)
            if log is None:
                continue
            path = _unique(out, srv.log_name, taken)
            text = "\n".join(
                envelope(x, s.envelope, s.zone, pid=x.pid) for x in sorted(log.lines, key=lambda x: x.ts)
            )
            path.write_text(text + "\n", encoding="utf-8")
            files.append(path)
    if s.journal_mode is not None:
        style = JournalStyle(
            host=s.host,
            zone=s.zone,
            boot=night.boot,
            systemd=s.systemd,
            syslog={"el7": "el7", "el9": "rfc3339", "debian13": "rfc3339", "fedora43": "rfc3339"}.get(
                s.distro, "rfc3164"
            ),
            kernel_stamp=s.distro in ("ubuntu18", "ubuntu20"),
        )
        entries = [e for e in night.entries if lo <= e.ts <= hi]
        parts = [entries]
        if night.cut is not None:  # rotated (or exported in two runs): the older part is name.1
            parts = [[e for e in entries if e.ts < night.cut], [e for e in entries if e.ts >= night.cut]]
        for i, part in enumerate(parts):
            name = s.journal_name + (".1" if i == 0 and len(parts) == 2 else "")
            path = _unique(out, name, taken)
            path.write_bytes(render_bytes(part, s.journal_mode, style))
            files.append(path)
    if "dmesg" in s.kernel_in:
        release = RELEASE.get((s.kernel, s.arch)) or RELEASE[(s.kernel, "x86_64")]
        boot_recs = [
            KRec(
                night.boot,
                5,
                f"Linux version {release} (buildd@lcy02-amd64-054) (gcc 13.3.0) #1 SMP PREEMPT_DYNAMIC",
            ),
            KRec(
                night.boot + _s(0.000001),
                6,
                f"Command line: BOOT_IMAGE=/vmlinuz-{release} root=UUID=5f0c2e1d ro iommu=pt",
            ),
            KRec(night.boot + _s(9.881233), 4, "nvidia: loading out-of-tree module taints kernel."),
        ]
        lines = render_dmesg(boot_recs + night.krecs, s.dmesg_format, night.boot, s.zone)
        path = _unique(out, s.dmesg_name, taken)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        files.append(path)
    if s.nvidia is not None:
        gpus = Gpus(uuids(s.host, s.gpus), s.gpu_total_mib)
        lines = csv_loop(night.gpu_times, gpus, lambda g, t: _used(night, g, t), s.nvidia, s.zone)
        path = _unique(out, s.nvidia_name, taken)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        files.append(path)
    # collected the next morning: every file's mtime is after the night
    when = (hi + _s(s.mtime_after_s)).timestamp()
    for f in files:
        os.utime(f, (when, when))
    return files
