"""The trust issue's scenario matrix for vLLM servers: engine version × capture × cause, each
night written with its true facts and the build's answers compared with them.

A night: ``vllm-eagle.service`` (vLLM of the version under test) loads and serves; traffic
climbs (running, then queued requests); it dies by the cause under test; the operator starts
``vllm-plain.service``, which is ready some minutes later. The server's lines reach postmortem
the way the capture under test writes them: the unit's stdout in the journal, its own file
(``StandardOutput=append:``), ``docker logs -t``, or a CRI pod log.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from scenarios.vllm import VERSIONS, death_message, envelope_line, stats_message, uvicorn_line

from postmortem.build import BuildOptions, build
from postmortem.ingest import IngestOptions
from postmortem.store.db import Store
from postmortem.timeutil import get_zone

HOST = "gpu-node-9"
T0 = datetime(2026, 6, 2, 9, 0, 0, tzinfo=UTC)

CAPTURES = ("journal", "file", "docker", "cri")
CAUSES = ("cgroup_oom", "host_oom", "gpu_oom", "signal")


@dataclass(frozen=True)
class Truth:
    cause: str
    kill: datetime
    running: int
    queued: int
    ready2: datetime


class Night:
    """One night's lines, built for a version and a capture."""

    def __init__(self, version: str, capture: str) -> None:
        self.version, self.capture = version, capture
        self.v = tuple(int(x) for x in version.split("."))
        self.journal: list[tuple[datetime, str]] = []
        self.server: list[tuple[datetime, str]] = []  # the server's own stream (stdout)
        self.kernel: list[tuple[datetime, str]] = []

    # -- envelopes (the line writers the generated nights use too: tests/scenarios/vllm.py)
    def vline(self, t: datetime, who: str, pid: int, msg: str, level: str = "INFO") -> None:
        self.server.append((t, envelope_line(self.v, t, who, pid, msg, level)))

    def uvicorn(self, t: datetime, pid: int, msg: str) -> None:
        self.server.append((t, uvicorn_line(self.v, pid, msg)))

    def j(self, t: datetime, ident: str, msg: str) -> None:
        self.journal.append((t, f"{t:%Y-%m-%dT%H:%M:%S.%f}"[:-3] + f"+0000 {HOST} {ident}: {msg}"))

    # -- a server's run
    def start(self, t: datetime, unit: str, pid: int, spec: bool, load_s: float) -> datetime:
        self.j(t, "systemd[1]", f"Started {unit} - vLLM server.")
        v = self.v
        self.vline(t + timedelta(seconds=2), "api", pid, f"vLLM API server version {self.version}")
        sc = "{'method': 'eagle3', 'model': '/m/draft', 'num_speculative_tokens': 3}" if spec else "None"
        if v >= (0, 9):
            self.vline(
                t + timedelta(seconds=2), "api", pid,
                "non-default args: {'model': '/m/llama-70b', 'tensor_parallel_size': 8, 'max_num_seqs': 256"
                + (f", 'speculative_config': {sc}" if spec else "") + "}",
            )  # fmt: skip
        else:
            self.vline(
                t + timedelta(seconds=2), "api", pid,
                f"args: Namespace(model='/m/llama-70b', tensor_parallel_size=8, max_num_seqs=256, speculative_config={sc})",
            )  # fmt: skip
        w = t + timedelta(seconds=10)
        if v >= (0, 8):
            self.vline(w, "worker", pid + 200, "Starting to load model /m/llama-70b...")
            self.vline(
                w + timedelta(seconds=load_s * 0.7), "worker", pid + 200,
                f"Model loading took 17.5 GiB and {load_s * 0.7:.2f} seconds",
            )  # fmt: skip
            self.vline(
                w + timedelta(seconds=load_s * 0.8),
                "engine",
                pid + 100,
                "GPU KV cache size: 1,000,000 tokens",
            )
        else:
            self.vline(
                w + timedelta(seconds=load_s * 0.7), "worker", pid + 200, "Loading model weights took 17.5 GB"
            )
            self.vline(
                w + timedelta(seconds=load_s * 0.8),
                "engine",
                pid + 100,
                "# GPU blocks: 60000, # CPU blocks: 4096",
            )
        ready = w + timedelta(seconds=load_s)
        self.vline(
            ready - timedelta(seconds=2),
            "worker",
            pid + 200,
            "Graph capturing finished in 20 secs, took 1.00 GiB",
        )
        self.uvicorn(ready, pid, "Application startup complete.")
        return ready

    def stats(self, t: datetime, pid: int, running: int, queued: int, kv: float) -> None:
        self.vline(t, "api", pid, stats_message(self.v, running, queued, kv))

    def death_line(self, t: datetime, pid: int) -> None:
        """The kill as the server tells it: a V0 worker's (pid and exit code), V1 0.8's worker
        proc's, the engine core's since 0.10.1."""
        role = "worker" if self.v < (0, 10, 1) else "engine"
        said = death_message(self.v, role, pid + 200, -9)
        assert said is not None
        who, msg, level = said
        self.vline(t, who, {"api": pid, "engine": pid + 100, "worker": pid + 200}[who], msg, level)

    def kernel_kill(self, t: datetime, cause: str, pid: int) -> None:
        comm = "VLLM::EngineCor" if self.v >= (0, 10, 1) else "python3"
        cg = "/system.slice/vllm-eagle.service"
        if cause == "cgroup_oom":
            lines = [
                f"{comm} invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0",
                "memory: usage 419430400kB, limit 419430400kB, failcnt 10",
                f"oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0-1,oom_memcg={cg},task_memcg={cg},task={comm},pid={pid},uid=998",
                f"Memory cgroup out of memory: Killed process {pid} ({comm}) total-vm:209715200kB, anon-rss:393000000kB, file-rss:16000kB, shmem-rss:0kB, UID:998 pgtables:786432kB oom_score_adj:0",
            ]
        else:
            lines = [
                f"{comm} invoked oom-killer: gfp_mask=0x140dca(GFP_HIGHUSER_MOVABLE|__GFP_COMP|__GFP_ZERO), order=0, oom_score_adj=0",
                f"oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0-1,global_oom,task_memcg={cg},task={comm},pid={pid},uid=998",
                f"Out of memory: Killed process {pid} ({comm}) total-vm:209715200kB, anon-rss:1993000000kB, file-rss:16000kB, shmem-rss:0kB, UID:998 pgtables:786432kB oom_score_adj:0",
            ]
        for line in lines:
            if self.capture == "journal":
                self.j(t, "kernel", line)
            else:
                self.kernel.append((t, f"[{t:%a %b %d %H:%M:%S %Y}] {line}"))

    # -- output
    def write(self, out: Path) -> None:
        out.mkdir(parents=True, exist_ok=True)
        server = sorted(self.server, key=lambda x: x[0])
        if self.capture == "journal":
            for t, line in server:
                pid = 4100 if t < T0 + timedelta(minutes=21) else 6100
                self.j(t, f"vllm[{pid}]", line)
        elif self.capture == "file":
            (out / "vllm-eagle.log").write_text(
                "\n".join(x for t, x in server if t < T0 + timedelta(minutes=21)) + "\n"
            )
            (out / "vllm-plain.log").write_text(
                "\n".join(x for t, x in server if t >= T0 + timedelta(minutes=21)) + "\n"
            )
        else:
            for name, part in (
                ("vllm-eagle", [x for x in server if x[0] < T0 + timedelta(minutes=21)]),
                ("vllm-plain", [x for x in server if x[0] >= T0 + timedelta(minutes=21)]),
            ):
                wrap = (
                    (lambda t: f"{t:%Y-%m-%dT%H:%M:%S.%f}000Z stdout F ")
                    if self.capture == "cri"
                    else (lambda t: f"{t:%Y-%m-%dT%H:%M:%S.%f}000Z ")
                )
                (out / f"{name}.log").write_text("\n".join(wrap(t) + x for t, x in part) + "\n")
        (out / "journal.txt").write_text(
            "\n".join(x for _, x in sorted(self.journal, key=lambda y: y[0])) + "\n"
        )
        if self.kernel:
            (out / "dmesg.txt").write_text("\n".join(x for _, x in self.kernel) + "\n")


def write_night(version: str, capture: str, cause: str, out: Path) -> Truth:
    n = Night(version, capture)
    ready = n.start(T0, "vllm-eagle.service", 4100, True, 240.0)
    kill = T0 + timedelta(minutes=20)
    t, i = ready + timedelta(minutes=2), 0
    running = queued = 0
    while t < kill - timedelta(seconds=5):
        frac = (t - ready) / (kill - ready)
        running, queued = min(256, int(100 + 200 * frac)), max(0, int(300 * frac - 120))
        n.stats(t, 4100, running, queued, min(99.0, 50 + 55 * frac))
        t += timedelta(seconds=10)
        i += 1
    if cause in ("cgroup_oom", "host_oom"):
        n.kernel_kill(kill, cause, 4200)
        n.death_line(kill + timedelta(seconds=1), 4100)
        if cause == "cgroup_oom":
            n.j(
                kill + timedelta(milliseconds=300),
                "systemd[1]",
                "vllm-eagle.service: A process of this unit has been killed by the OOM killer.",
            )
        n.j(
            kill + timedelta(seconds=3),
            "systemd[1]",
            "vllm-eagle.service: Main process exited, code=exited, status=1/FAILURE",
        )
        result = "oom-kill" if cause == "cgroup_oom" else "exit-code"
        n.j(
            kill + timedelta(seconds=3, milliseconds=5),
            "systemd[1]",
            f"vllm-eagle.service: Failed with result '{result}'.",
        )
    elif cause == "gpu_oom":
        n.vline(kill, "engine", 4200, "EngineCore encountered a fatal error.", "ERROR")
        n.vline(
            kill, "engine", 4200,
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.00 GiB is free. Of the allocated memory 75.00 GiB is allocated by PyTorch, and 1.00 GiB is reserved by PyTorch but unallocated.",
            "ERROR",
        )  # fmt: skip
        n.j(
            kill + timedelta(seconds=3),
            "systemd[1]",
            "vllm-eagle.service: Main process exited, code=exited, status=1/FAILURE",
        )
        n.j(
            kill + timedelta(seconds=3, milliseconds=5),
            "systemd[1]",
            "vllm-eagle.service: Failed with result 'exit-code'.",
        )
    else:  # a SIGKILL nobody logged: an operator's kill -9, a watchdog
        n.j(kill, "systemd[1]", "vllm-eagle.service: Main process exited, code=killed, status=9/KILL")
        n.j(
            kill + timedelta(milliseconds=5), "systemd[1]", "vllm-eagle.service: Failed with result 'signal'."
        )
    op = kill + timedelta(seconds=70)
    n.j(
        op,
        "sudo[5120]",
        "     ops : TTY=pts/2 ; PWD=/home/ops ; USER=root ; COMMAND=/usr/bin/systemctl start vllm-plain.service",
    )
    ready2 = n.start(op + timedelta(seconds=1), "vllm-plain.service", 6100, False, 200.0)
    n.write(out)
    return Truth(cause, kill, running, queued, ready2)


def _nights() -> list[tuple[str, str, str]]:
    """Every version with every cause, each in one capture (the captures rotate): 24 nights."""
    caps = itertools.cycle(CAPTURES)
    return [(v, next(caps), c) for v in VERSIONS for c in CAUSES]


@pytest.mark.parametrize(("version", "capture", "cause"), _nights())
def test_a_vllm_night_comes_out_right(tmp_path: Path, version: str, capture: str, cause: str) -> None:
    truth = write_night(version, capture, cause, tmp_path / "logs")
    zone = get_zone("UTC")
    build(
        BuildOptions(
            db=str(tmp_path / "pm.duckdb"),
            logs=[str(tmp_path / "logs")],
            out=tmp_path / "reports",
            since=T0 - timedelta(hours=1),
            zone=zone,
            ingest=IngestOptions(zone=zone, zone_given=True, strict=True, year=2026),
            now=datetime(2026, 12, 1, tzinfo=UTC),
        )
    )
    store = Store.open_readonly(tmp_path / "pm.duckdb")
    rows = store.fetchall("SELECT unit, cause, ts, recovery_unit, downtime_s FROM incidents ORDER BY ts")
    engines = store.fetchall("SELECT DISTINCT engine FROM server_stats")
    store.close()
    assert engines == [("vllm",)]
    assert len(rows) == 1, rows
    unit, cause_got, ts, recovery, downtime = rows[0]
    assert unit == "vllm-eagle.service"
    assert cause_got == truth.cause
    assert abs((ts - truth.kill).total_seconds()) <= 4
    assert recovery == "vllm-plain.service"
    assert downtime is not None and abs(downtime - (truth.ready2 - truth.kill).total_seconds()) <= 5
    (report,) = (tmp_path / "reports").glob("*vllm-eagle.service.md")
    md = report.read_text()
    assert f"{truth.running} running, {truth.queued} queued" in md
    assert ("crashed" in md.splitlines()[0]) == (truth.cause == "gpu_oom")
