#!/usr/bin/env python3
"""``make bench``: generate large realistic inputs, ingest each into a fresh store, build over
the result, and compare with lnav on the same journal file.

Sizes scale with ``BENCH_SCALE`` (1 = 2M journal lines, 2M SGLang lines, 1M nvidia-smi rows,
1,000 OOM records). A warm-up ingest of each input's first lines comes first (on a new machine
it compiles the parsing kernels; numba caches them). Every ingest runs in its own process so
its peak RSS is its own, with Python's bytecode cache on (as a user's shell has it). Output:
one table row per input (lines, MB, seconds, lines/s, MB/s, peak RSS; best of ``--repeat``
runs), the re-ingest time of unchanged files, lnav's time on the same journal and SGLang files
(measured right after ours), and the build time over the combined store. ``--scaling`` also
compares peak RSS on 1M- and 10M-line journals.

Usage: ``python bench/run.py [--scale N] [--keep DIR] [--only NAME,...] [--repeat N] [--scaling]``
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
BLOCK = 1 << 20


# ----------------------------------------------------------------------------- generators


def _writer(path: Path) -> tuple[object, Callable[[str], None], Callable[[], None]]:
    fh = path.open("w", encoding="utf-8")
    buf: list[str] = []
    size = [0]

    def write(line: str) -> None:
        buf.append(line)
        size[0] += len(line)
        if size[0] > BLOCK:
            fh.write("".join(buf))
            buf.clear()
            size[0] = 0

    def close() -> None:
        fh.write("".join(buf))
        fh.close()

    return fh, write, close


def gen_journal(path: Path, lines: int) -> None:
    """journalctl -o short-iso: SGLang stdout (batch lines, access log), systemd, kernel, noise."""
    rng = random.Random(1)
    _, write, close = _writer(path)
    t0 = datetime(2025, 5, 25, 0, 0, tzinfo=UTC)
    step = 86400 * 2 / lines
    oom_every = max(lines // 20, 1000)
    n = 0
    while n < lines:
        ts = (t0 + timedelta(seconds=n * step)).strftime("%Y-%m-%dT%H:%M:%S+00:00")
        local = ts[:10] + " " + ts[11:19]
        r = n % 20
        if n and n % oom_every == 0 and n + 8 < lines:
            pid = 40000 + n % 9000
            for msg in (
                "sglang::schedul invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0",
                f"CPU: 3 PID: {pid} Comm: sglang::schedul Not tainted 6.8.0-60-generic #63-Ubuntu",
                "memory: usage 671088640kB, limit 671088640kB, failcnt 1",
                "Tasks state (memory values in pages):",
                "[  pid  ]   uid  tgid total_vm      rss rss_anon rss_file rss_shmem pgtables_bytes swapents oom_score_adj name",
                f"[  {pid}]  1001 {pid} 71254331 20344687 19893101   189442    262144 171999232        0             0 sglang::schedul",
                "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0-1,oom_memcg=/system.slice/"
                f"sglang-bench.service,task_memcg=/system.slice/sglang-bench.service,task=sglang::schedul,pid={pid},uid=1001",
                f"Memory cgroup out of memory: Killed process {pid} (sglang::schedul) total-vm:285017324kB, "
                "anon-rss:79572404kB, file-rss:757768kB, shmem-rss:1048576kB, UID:1001 pgtables:167968kB oom_score_adj:0",
            ):
                write(f"{ts} gpu-bench kernel: {msg}\n")
                n += 1
            write(
                f"{ts} gpu-bench systemd[1]: sglang-bench.service: Main process exited, code=killed, status=9/KILL\n"
            )
            write(f"{ts} gpu-bench systemd[1]: sglang-bench.service: Failed with result 'oom-kill'.\n")
            n += 2
            continue
        if r < 13:
            write(
                f"{ts} gpu-bench python3[4242]: [{local} TP0] Decode batch, #running-req: {n % 200}, "
                f"#token: {n % 900000}, token usage: 0.{n % 97:02d}, accept len: 2.{n % 9}1, accept rate: 0.4{n % 7}, "
                f"cuda graph: True, gen throughput (token/s): {1500 + n % 900}.{n % 97:02d}, #queue-req: {n % 13}\n"
            )
        elif r < 15:
            write(
                f"{ts} gpu-bench python3[4242]: [{local} TP0] Prefill batch, #new-seq: 1, #new-token: {n % 4096}, "
                f"#cached-token: 0, token usage: 0.{n % 97:02d}, #running-req: {n % 200}, #queue-req: {n % 13}, "
                f"cuda graph: False, input throughput (token/s): {9000 + n % 999}.00\n"
            )
        elif r < 18:
            write(
                f"{ts} gpu-bench python3[4242]: [{local}] INFO:     10.0.{n % 250}.{n % 200}:{30000 + n % 9999} - "
                '"POST /v1/chat/completions HTTP/1.1" 200 OK\n'
            )
        elif r == 18:
            write(
                f"{ts} gpu-bench CRON[{60000 + n % 999}]: (root) CMD (/usr/local/sbin/healthcheck >/dev/null 2>&1)\n"
            )
        else:
            write(f"{ts} gpu-bench kernel: mlx5_core 0000:1a:00.0: poll_health:{n % 800}: device health ok\n")
        n += 1
    del rng
    close()


def gen_sglang(path: Path, lines: int) -> None:
    """An SGLang 0.5.x log file: startup, then batch and access lines (with a few tracebacks)."""
    _, write, close = _writer(path)
    t0 = datetime(2025, 5, 25, 0, 0, tzinfo=UTC)
    write(
        f"[{t0:%Y-%m-%d %H:%M:%S}] server_args=ServerArgs(model_path='/models/m', tp_size=8, port=30000, "
        "mem_fraction_static=0.88, speculative_algorithm='EAGLE3')\n"
    )
    step = 86400 * 2 / lines
    for n in range(1, lines):
        ts = t0 + timedelta(seconds=n * step)
        stamp = f"{ts:%Y-%m-%d %H:%M:%S}"
        r = n % 10
        if r < 6:
            write(
                f"[{stamp} TP0] Decode batch, #running-req: {n % 200}, #token: {n % 900000}, token usage: 0.{n % 97:02d}, "
                f"accept len: 2.{n % 9}1, accept rate: 0.4{n % 7}, cuda graph: True, "
                f"gen throughput (token/s): {1500 + n % 900}.{n % 97:02d}, #queue-req: {n % 13}\n"
            )
        elif r < 8:
            write(
                f"[{stamp} TP0] Prefill batch, #new-seq: 2, #new-token: {n % 8192}, #cached-token: {n % 1024}, "
                f"token usage: 0.{n % 97:02d}, #running-req: {n % 200}, #queue-req: {n % 13}, cuda graph: False, "
                f"input throughput (token/s): {12000 + n % 999}.50\n"
            )
        else:
            write(
                f'[{stamp}] INFO:     10.0.{n % 250}.7:{40000 + n % 9999} - "POST /generate HTTP/1.1" 200 OK\n'
            )
    close()


def gen_nvidia(path: Path, rows: int) -> None:
    """nvidia-smi --query-gpu … --format=csv -l 1 on 8 GPUs: one header, many rows."""
    _, write, close = _writer(path)
    write(
        "timestamp, index, uuid, pci.bus_id, name, memory.total [MiB], memory.reserved [MiB], memory.used [MiB], "
        "memory.free [MiB], utilization.gpu [%], utilization.memory [%], temperature.gpu, power.draw [W], pstate\n"
    )
    t0 = datetime(2025, 5, 25, 0, 0, tzinfo=UTC)
    for n in range(rows):
        i = n % 8
        ts = t0 + timedelta(seconds=n // 8, milliseconds=3 * i)
        used = 100_000 + (n * 37) % 29_000
        write(
            f"{ts:%Y/%m/%d %H:%M:%S}.{ts.microsecond // 1000:03d}, {i}, GPU-0000000{i}-1111-2222-3333-44444444444{i}, "
            f"00000000:{0x18 + 16 * i:02X}:00.0, NVIDIA H200, 143771 MiB, 551 MiB, {used} MiB, {143771 - 551 - used} MiB, "
            f"{n % 100} %, {n % 60} %, {40 + n % 30}, {300 + n % 400}.25 W, P0\n"
        )
    close()


def gen_dmesg(path: Path, records: int) -> None:
    """dmesg (boot-relative stamps) with ``records`` memcg OOM kills of 6.8 kernels."""
    _, write, close = _writer(path)
    t = 100.0
    for k in range(records):
        pid = 10000 + k
        body = [
            "sglang::schedul invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, oom_score_adj=0",
            f"CPU: 87 PID: {pid} Comm: sglang::schedul Not tainted 6.8.0-60-generic #63-Ubuntu",
            "Hardware name: Supermicro SYS-821GE-TNHR/X13DEG-OAD, BIOS 2.1 04/12/2024",
            "Call Trace:",
            " <TASK>",
            " dump_stack_lvl+0x76/0xa0",
            " dump_header+0x47/0x1f0",
            " oom_kill_process+0x118/0x280",
            " out_of_memory+0x103/0x350",
            " mem_cgroup_out_of_memory+0x145/0x170",
            " </TASK>",
            "memory: usage 671088640kB, limit 671088640kB, failcnt 18734",
            "swap: usage 0kB, limit 9007199254740988kB, failcnt 0",
            "Memory cgroup stats for /system.slice/sglang-bench.service:",
            *[
                f"{key} {k * 4096 + j}"
                for j, key in enumerate(("anon", "file", "kernel", "shmem", "pgfault", "pgmajfault"))
            ],
            "Tasks state (memory values in pages):",
            "[  pid  ]   uid  tgid total_vm      rss rss_anon rss_file rss_shmem pgtables_bytes swapents oom_score_adj name",
            *[
                f"[{pid + j:7d}]  1001 {pid + j:5d} 71254331 20344687 19893101   189442    262144 171999232        0             0 sglang::schedul"
                for j in range(8)
            ],
            "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0-1,oom_memcg=/system.slice/"
            f"sglang-bench.service,task_memcg=/system.slice/sglang-bench.service,task=sglang::schedul,pid={pid},uid=1001",
            f"Memory cgroup out of memory: Killed process {pid} (sglang::schedul) total-vm:285017324kB, "
            "anon-rss:79572404kB, file-rss:757768kB, shmem-rss:1048576kB, UID:1001 pgtables:167968kB oom_score_adj:0",
        ]
        for msg in body:
            t += 0.000007
            write(f"[{t:12.6f}] {msg}\n")
        t += 37.0
        write(
            f"[{t:12.6f}] oom_reaper: reaped process {pid} (sglang::schedul), now anon-rss:0kB, file-rss:0kB, shmem-rss:0kB\n"
        )
    close()


# ----------------------------------------------------------------------------- measuring


@dataclass
class Run:
    name: str
    lines: int
    mb: float
    seconds: float
    rss_mb: float

    @property
    def lines_s(self) -> float:
        return self.lines / self.seconds if self.seconds else 0.0

    @property
    def mb_s(self) -> float:
        return self.mb / self.seconds if self.seconds else 0.0


_WRAP = (
    "import atexit, os, sys\n"
    "def _hwm():\n"
    "    for line in open('/proc/self/status'):\n"
    "        if line.startswith('VmHWM:'):\n"
    "            open(os.environ['PM_BENCH_HWM'], 'w').write(line.split()[1])\n"
    "atexit.register(_hwm)\n"
    "sys.argv[0] = 'postmortem'\n"
    "try:\n"  # the console script's entry point …
    "    from postmortem.launch import main\n"
    "except ModuleNotFoundError as e:\n"  # … or, in revisions before it (bench-compare), the CLI's
    "    if e.name != 'postmortem.launch': raise\n"
    "    from postmortem.cli import main as _cli\n"
    "    def main(): _cli(sys.argv[1:])\n"
    "main()\n"
)


def child_rss_mb(cmd: list[str], extra_env: dict[str, str] | None = None) -> tuple[float, float, str]:
    """Run ``postmortem ARGS`` (``cmd[0]`` is the postmortem script) and measure its own peak RSS
    (VmHWM at exit: ``ru_maxrss`` of a child would include this process's memory at fork)."""
    seconds, rss, out, _cpu = child_run(cmd, extra_env)
    return seconds, rss, out


def child_run(
    cmd: list[str], extra_env: dict[str, str] | None = None, cwd: Path | None = None
) -> tuple[float, float, str, float]:
    """:func:`child_rss_mb`, and the child's CPU seconds (user + system, all its threads).
    ``cwd``: where the child runs (``python -c`` imports from there first)."""
    import tempfile

    fd, hwm_name = tempfile.mkstemp(prefix="pm-hwm-")
    os.close(fd)
    cmd = [sys.executable, "-c", _WRAP, *cmd[1:]]
    start = time.perf_counter()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # as users run it
    env.update(extra_env or {})
    env["PM_BENCH_HWM"] = hwm_name
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd)
    assert proc.stdout is not None and proc.stderr is not None
    out = proc.stdout.read()
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.stderr.write(err.decode(errors="replace")[-3000:])
        raise SystemExit(f"failed ({os.waitstatus_to_exitcode(status)}): {' '.join(cmd[3:])}")
    try:
        rss = int(Path(hwm_name).read_text() or 0) / 1024
    finally:
        os.unlink(hwm_name)
    return seconds, rss, out.decode(errors="replace"), usage.ru_utime + usage.ru_stime


def count_lines(path: Path) -> int:
    n = 0
    with path.open("rb") as fh:
        while block := fh.read(1 << 24):
            n += block.count(b"\n")
    return n


def _fresh(db: Path) -> None:
    for p in (db, Path(str(db) + ".wal")):
        p.unlink(missing_ok=True)
    shutil.rmtree(str(db) + ".parts", ignore_errors=True)  # the store's Parquet parts


def _head(src: Path, dst: Path, lines: int) -> None:
    """The first ``lines`` lines of ``src`` (a warm-up input)."""
    with src.open("rb") as fh, dst.open("wb") as out:
        for _ in range(lines):
            line = fh.readline()
            if not line:
                break
            out.write(line)


LNAV_QUERY = ";SELECT count(*) FROM all_logs"


def lnav_seconds(lnav: str, path: Path, home: Path, repeat: int) -> tuple[float, str]:
    """Best wall time of ``lnav -n -c ';SELECT count(*) FROM all_logs' FILE`` and its count."""
    home.mkdir(exist_ok=True)
    env = {**os.environ, "HOME": str(home)}
    cmd = [lnav, "-n", "-c", LNAV_QUERY, str(path)]
    best, count = float("inf"), "?"
    for _ in range(repeat):
        start = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, env=env, check=False)
        best = min(best, time.perf_counter() - start)
        count = (proc.stdout.decode(errors="replace").split() or ["?"])[-1]
    return best, count


#: the targets of the performance issue, checked against this run
TARGET_LINES_S = 1_000_000
TARGET_RSS_MB = 500
TARGET_BUILD_S = 2.0
TARGET_REINGEST = 0.05
TARGET_SCALING = 0.20


def target_lines(
    runs: list[Run],
    lnav_runs: dict[str, tuple[float, str]],
    build_secs: dict[str, float],
    scaling_rss: dict[int, float],
) -> list[str]:
    """This run against the targets, one line each: ``met`` or ``NOT met`` and the figure."""
    out = ["targets (this run):"]

    def line(ok: bool, what: str) -> None:
        out.append(f"  {'met    ' if ok else 'NOT met'}  {what}")

    first = {r.name: r for r in runs if not r.name.endswith("(re-ingest)")}
    for name in ("journal short-iso", "sglang log"):
        if name in first:
            r = first[name]
            line(r.lines_s >= TARGET_LINES_S, f"{name}: {r.lines_s:,.0f} lines/s (target {TARGET_LINES_S:,})")
            if name in lnav_runs:
                ratio = lnav_runs[name][0] / r.seconds
                line(ratio >= 1.0, f"{name}: {ratio:.2f}× lnav's speed (target 1×, then 2×)")
    for r in first.values():
        line(r.rss_mb <= TARGET_RSS_MB, f"{r.name}: peak RSS {r.rss_mb:,.0f} MB (target {TARGET_RSS_MB} MB)")
    for r in runs:
        if r.name.endswith("(re-ingest)"):
            base = first.get(r.name.removesuffix(" (re-ingest)"))
            if base is not None and base.seconds:
                share = r.seconds / base.seconds
                line(
                    share <= TARGET_REINGEST,
                    f"{r.name}: {r.seconds:.2f} s, {share:.1%} of the first ingest (target {TARGET_REINGEST:.0%})",
                )
    for what, secs in build_secs.items():
        line(secs <= TARGET_BUILD_S, f"{what}: {secs:.2f} s (target {TARGET_BUILD_S:g} s)")
    if len(scaling_rss) == 2:
        small, large = (scaling_rss[k] for k in sorted(scaling_rss))
        growth = large / small - 1
        line(
            growth <= TARGET_SCALING,
            f"peak RSS, 10× the lines: {growth:+.0%} (target within {TARGET_SCALING:.0%})",
        )
    return out


def main() -> None:  # noqa: C901 - 19 > 15: listed in docs/dev/README.md
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=float(os.environ.get("BENCH_SCALE", "1")))
    ap.add_argument("--keep", type=Path, default=REPO / "bench" / "out")
    ap.add_argument("--only", default="")
    ap.add_argument(
        "--repeat", type=int, default=int(os.environ.get("BENCH_REPEAT", "2")), help="best of N runs"
    )
    ap.add_argument(
        "--scaling",
        action="store_true",
        help="also ingest journals of 1M and 10M lines and compare their peak RSS (slow)",
    )
    args = ap.parse_args()
    s = args.scale
    work: Path = args.keep
    work.mkdir(parents=True, exist_ok=True)
    pm = str(Path(sys.executable).with_name("postmortem"))
    lnav = shutil.which("lnav")
    inputs = {
        "journal short-iso": ("journal.log", gen_journal, int(2_000_000 * s)),
        "sglang log": ("sglang-bench.log", gen_sglang, int(2_000_000 * s)),
        "nvidia-smi csv": ("nvidia-smi.csv", gen_nvidia, int(1_000_000 * s)),
        "dmesg 1k OOMs": ("dmesg.txt", gen_dmesg, max(int(1_000 * s), 10)),
    }
    #: inputs lnav reads as logs of its own formats (syslog; SGLang lines as plain text)
    lnav_inputs = {"journal short-iso", "sglang log"}
    only = {x.strip() for x in args.only.split(",") if x.strip()}
    runs: list[Run] = []
    lnav_runs: dict[str, tuple[float, str]] = {}
    build_secs: dict[str, float] = {}
    scaling_rss: dict[int, float] = {}
    print(
        f"postmortem bench, BENCH_SCALE={s:g}, best of {args.repeat}, {os.cpu_count()} CPUs, files in {work}"
    )
    chosen = {n: v for n, v in inputs.items() if not only or any(o in n for o in only)}
    for fname, gen, size in chosen.values():
        path = work / fname
        marker = path.with_suffix(path.suffix + f".{size}")
        if not marker.exists():
            t = time.perf_counter()
            gen(path, size)
            marker.write_text("")
            print(f"  generated {fname}: {size:,} in {time.perf_counter() - t:.1f} s")
    # warm-up, not timed: the first run on a machine compiles the parsing kernels (numba caches
    # them on disk) and Python caches its bytecode
    t = time.perf_counter()
    for fname, _, _ in chosen.values():
        warm = work / f"warm-{fname}"
        _head(work / fname, warm, 60_000)
        db = work / "warm.duckdb"
        _fresh(db)
        child_rss_mb([pm, "ingest", str(warm), "--db", str(db), "--tz", "UTC"])
        warm.unlink()
        _fresh(db)
    print(f"  warm-up (compiles the parsing kernels on a new machine): {time.perf_counter() - t:.1f} s")
    for name, (fname, _, _) in chosen.items():
        path = work / fname
        db = work / f"{fname}.duckdb"
        lines = count_lines(path)
        mb = path.stat().st_size / 1e6
        best = (float("inf"), 0.0)
        for _ in range(args.repeat):
            _fresh(db)
            secs, rss, _ = child_rss_mb([pm, "ingest", str(path), "--db", str(db), "--tz", "UTC"])
            best = min(best, (secs, rss))
        runs.append(Run(name, lines, mb, best[0], best[1]))
        again, _, _out = child_rss_mb([pm, "ingest", str(path), "--db", str(db), "--tz", "UTC"])
        runs.append(Run(f"{name} (re-ingest)", lines, mb, again, 0.0))
        if lnav and name in lnav_inputs:  # measured right after ours: the same machine weather
            lnav_runs[name] = lnav_seconds(lnav, path, work / "lnav-home", args.repeat)
    print()
    print("| input | lines | MB | seconds | lines/s | MB/s | peak RSS |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in runs:
        rss = f"{r.rss_mb:,.0f} MB" if r.rss_mb else "—"
        print(
            f"| {r.name} | {r.lines:,} | {r.mb:,.0f} | {r.seconds:.2f} | {r.lines_s:,.0f} | {r.mb_s:,.1f} | {rss} |"
        )
    if lnav_runs:
        print()
        print("| input | lnav seconds | lnav lines/s | postmortem seconds | postmortem / lnav speed |")
        print("|---|---:|---:|---:|---:|")
        for name, (lsecs, _count) in lnav_runs.items():
            ours = next(r for r in runs if r.name == name)
            print(
                f"| {name} | {lsecs:.2f} | {ours.lines / lsecs:,.0f} | {ours.seconds:.2f} | "
                f"{lsecs / ours.seconds:.2f}× |"
            )
        counts = ", ".join(f"{n} {c}" for n, (_, c) in lnav_runs.items())
        print(f"(lnav: {LNAV_QUERY!r} FILE; its counts: {counts})")
    elif not lnav:
        print("\nlnav not installed (apt-get install lnav): no comparison")

    # build over one store holding everything
    if not only:
        all_db = work / "all.duckdb"
        _fresh(all_db)
        files = [str(work / f) for f, _, _ in inputs.values()]
        secs, rss, _ = child_rss_mb([pm, "ingest", *files, "--db", str(all_db), "--tz", "UTC"])
        import duckdb

        from postmortem.store.db import Store

        # through postmortem's views: the bulk tables' rows are mostly in Parquet parts (tables
        # only: the views of the old SGLang names would count server_stats twice)
        with Store.open_readonly(all_db) as store:
            total_rows = sum(store.count(t) for t in store.table_names())
        out_dir = work / "reports"
        best_build = (float("inf"), 0.0, "")
        for _ in range(args.repeat):
            shutil.rmtree(out_dir, ignore_errors=True)
            logs = [x for f in files for x in ("--logs", f)]
            best_build = min(
                best_build,
                child_rss_mb(
                    [
                        pm,
                        "build",
                        *logs,
                        "--db",
                        str(all_db),
                        "--out",
                        str(out_dir),
                        "--tz",
                        "UTC",
                        "--timings",
                    ]
                ),
            )
        bsecs, brss, bout = best_build
        build_secs[f"build, all {total_rows:,} rows' incidents"] = bsecs
        stages = next((ln for ln in bout.splitlines() if ln.startswith("timings:")), "")
        nrep = next((ln.split()[0] for ln in bout.splitlines() if "incident(s)" in ln), "?")
        print(
            f"\nbuild over a store of {total_rows:,} rows (ingest of all four: {secs:.1f} s): "
            f"{bsecs:.2f} s wall for {nrep} incident reports, peak RSS {brss:,.0f} MB; {stages}"
        )
        # the same build again, its reports in place: what re-running it costs (the figures of
        # unchanged incidents are kept, the analysis and the text are redone)
        again = min(
            child_rss_mb(
                [pm, "build", *logs, "--db", str(all_db), "--out", str(out_dir), "--tz", "UTC", "--timings"]
            )
            for _ in range(args.repeat)
        )
        build_secs[f"build, all {total_rows:,} rows' incidents, again (figures kept)"] = again[0]
        astages = next((ln for ln in again[2].splitlines() if ln.startswith("timings:")), "")
        print(
            f"the same build again (its reports in place): {again[0]:.2f} s wall, peak RSS {again[1]:,.0f} MB; {astages}"
        )
        # what an operator runs: the window around one incident
        con = duckdb.connect(str(all_db), read_only=True)
        first = con.execute("SELECT min(ts) FROM incidents").fetchone()[0]
        con.close()
        if first is not None:
            since = (first - timedelta(minutes=10)).astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")
            until = (first + timedelta(minutes=10)).astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")
            window = ["--tz", "UTC", "--since", since, "--until", until, "--timings"]
            best_one = (float("inf"), 0.0, "")
            for _ in range(args.repeat):
                shutil.rmtree(out_dir, ignore_errors=True)
                best_one = min(
                    best_one,
                    child_rss_mb([pm, "build", *logs, "--db", str(all_db), "--out", str(out_dir), *window]),
                )
            osecs, orss, oout = best_one
            build_secs["build, the window of one incident"] = osecs
            ostages = next((ln for ln in oout.splitlines() if ln.startswith("timings:")), "")
            print(
                f"build --since '{since}' --until '{until}' (one incident) over the same store: "
                f"{osecs:.2f} s wall, peak RSS {orss:,.0f} MB; {ostages}"
            )

    if args.scaling:
        print("\npeak RSS against input size (journal short-iso):")
        for size in (1_000_000, 10_000_000):
            path = work / f"journal-{size}.log"
            marker = path.with_suffix(path.suffix + ".done")
            if not marker.exists():
                gen_journal(path, size)
                marker.write_text("")
            db = work / "scaling.duckdb"
            _fresh(db)
            secs, rss, _ = child_rss_mb([pm, "ingest", str(path), "--db", str(db), "--tz", "UTC"])
            _fresh(db)
            print(f"  {size:>10,} lines: {secs:6.1f} s, {size / secs:,.0f} lines/s, peak RSS {rss:,.0f} MB")
            scaling_rss[size] = rss

    print()
    for line in target_lines(runs, lnav_runs, build_secs, scaling_rss):
        print(line)


if __name__ == "__main__":
    main()
