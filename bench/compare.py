#!/usr/bin/env python3
"""``make bench-compare REV=…``: this tree's ingest against another revision's, interleaved.

A shared machine's speed drifts over minutes (seen here: the same ingest taking anywhere from
1× to 2.5× its best time), so a before/after figure from two separate ``make bench`` runs says
little. This runs the two versions one after the other, several rounds, on the same generated
inputs (``bench/out``, made by ``make bench``), and reports per version the best wall time, the
CPU seconds (all threads: the steadier figure) and the peak RSS. The other revision is checked
out with ``git worktree`` under ``bench/out/rev-<sha>`` and imported from there (``PYTHONPATH``);
both use this virtualenv.

Usage: ``python bench/compare.py --rev REV [--only journal,sglang] [--repeat 3]``
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from run import child_run  # noqa: E402 - the bench's own measuring

INPUTS = {
    "journal": "journal.log",
    "sglang": "sglang-bench.log",
    "nvidia": "nvidia-smi.csv",
    "dmesg": "dmesg.txt",
}


def worktree(rev: str, work: Path) -> tuple[str, Path]:
    sha = subprocess.run(
        ["git", "rev-parse", "--short", rev], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.strip()
    path = work / f"rev-{sha}"
    if not path.exists():
        subprocess.run(["git", "worktree", "add", "--detach", str(path), sha], cwd=REPO, check=True)
    if (path / "postmortem" / "parsers" / "aot.py").exists():
        # that revision's kernels compiled ahead of time too, as make builds them for this tree
        subprocess.run(
            [sys.executable, "-m", "postmortem.parsers.aot"],
            cwd=path,
            env={**os.environ, "PYTHONPATH": str(path)},
            check=True,
        )
    return sha, path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rev", required=True, help="the revision to compare with (a commit, tag, HEAD~3 …)")
    ap.add_argument("--only", default="journal,sglang", help=f"inputs, comma-separated: {', '.join(INPUTS)}")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", type=Path, default=REPO / "bench" / "out")
    args = ap.parse_args()
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in names if n not in INPUTS]
    if unknown:
        raise SystemExit(f"--only: no input named {', '.join(unknown)} (inputs: {', '.join(INPUTS)})")
    work: Path = args.keep
    sha, tree = worktree(args.rev, work)
    pm = str(Path(sys.executable).with_name("postmortem"))
    versions = {sha: {"PYTHONPATH": str(tree)}, "this tree": {"PYTHONPATH": str(REPO)}}
    for version, env in versions.items():  # each version really imports its own code
        out = subprocess.run(
            [sys.executable, "-c", "import postmortem; print(postmortem.__file__)"],
            env={**os.environ, **env},
            cwd=work,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        want = tree if version == sha else REPO
        if not out.startswith(str(want)):
            raise SystemExit(f"{version}: imports {out}, not {want}")
    print(f"ingest, {args.repeat} interleaved rounds, {os.cpu_count()} CPUs: {sha} against this tree")
    print()
    print("| input | version | best wall s | CPU s (median) | peak RSS |")
    print("|---|---|---:|---:|---:|")
    for name in names:
        path = work / INPUTS[name]
        if not path.exists():
            raise SystemExit(f"{path}: missing; run `make bench` first (it generates the inputs)")
        results: dict[str, list[tuple[float, float, float]]] = {v: [] for v in versions}
        db = work / "compare.duckdb"
        for round_ in range(args.repeat + 1):
            for version, env in versions.items():
                for p in (db, Path(str(db) + ".wal")):
                    p.unlink(missing_ok=True)
                shutil.rmtree(str(db) + ".parts", ignore_errors=True)  # the store's Parquet parts
                # run outside the checkout: `python -c` imports from the working directory first
                secs, rss, _, cpu = child_run(
                    [pm, "ingest", str(path), "--db", str(db), "--tz", "UTC"], env, cwd=work
                )
                if round_:  # the first round warms up (kernels compiled, bytecode cached)
                    results[version].append((secs, cpu, rss))
        for version, runs in results.items():
            cpus = sorted(r[1] for r in runs)
            print(
                f"| {name} | {version} | {min(r[0] for r in runs):.2f} | {cpus[len(cpus) // 2]:.2f} | "
                f"{max(r[2] for r in runs):,.0f} MB |"
            )


if __name__ == "__main__":
    main()
