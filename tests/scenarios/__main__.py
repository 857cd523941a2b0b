"""Survey: build many generated nights and tabulate which checks fail, by known finding.

Run from the repository (the test directory on the path)::

    .venv/bin/python -m tests.scenarios --n 200 --seed 20251205 --jsonl /tmp/nights.jsonl

Each night's scenario knobs and check results go to the JSON-lines file (one line per night) for
analysis; the terminal gets one line per failing night and a table of failing checks, split into
those a finding explains and those none does (a new mechanism, or a finding's predicate that
is too narrow).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from scenarios.check import CHECKS, build_night  # noqa: E402
from scenarios.findings import explain  # noqa: E402
from scenarios.spec import draw  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.scenarios")
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--seed", type=int, default=20251205)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--jsonl", type=Path)
    ap.add_argument("--keep", type=Path, help="keep each night's logs and reports under this directory")
    ap.add_argument("--reuse", action="store_true", help="with --keep: re-check the builds kept there")
    ap.add_argument("--verbose", action="store_true", help="print explained failures too")
    args = ap.parse_args(argv)
    failing: Counter[tuple[str, str]] = Counter()
    sink = args.jsonl.open("w", encoding="utf-8") if args.jsonl else None
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.start, args.start + args.n):
            s = draw(args.seed, i)
            work = (args.keep or Path(tmp)) / str(i)
            if not args.reuse:
                shutil.rmtree(work, ignore_errors=True)
            r = build_night(s, work, reuse=args.reuse)
            why = explain(s, r.truth)
            bad = []
            for name in CHECKS:
                c = r.checks.get(name)
                if c is None or c.ok is None:
                    continue
                fid = why.get(name)
                if c.ok and fid:
                    failing[(name, f"{fid}!passes")] += 1
                    bad.append(f"{name}[{fid} but passes]")
                elif not c.ok:
                    failing[(name, fid or "-")] += 1
                    if args.verbose or not fid:
                        bad.append(f"{name}[{fid or '-'}]: {str(c)[:220]}")
            if bad:
                print(f"{s.tag}:\n    " + "\n    ".join(bad))
            if sink:
                knobs = {
                    k: v for k, v in asdict(s).items() if k not in ("server", "other", "fallback", "load_s")
                }
                knobs["unit"] = s.server.unit
                knobs["two"] = s.other is not None
                knobs["tp"] = s.server.tp
                knobs["log_name"] = s.server.log_name
                sink.write(
                    json.dumps(
                        {
                            "scenario": knobs,
                            "checks": {n: [c.ok, repr(c.expected), repr(c.got)] for n, c in r.checks.items()},
                            "explained": why,
                            "seconds": r.seconds,
                        },
                        default=str,
                    )
                    + "\n"
                )
            if not args.keep:
                shutil.rmtree(work, ignore_errors=True)
    if sink:
        sink.close()
    print(f"\n{args.n} nights in {time.perf_counter() - t0:.0f} s")
    print(f"{'check':24} {'finding':8} nights")
    for (name, fid), n in sorted(failing.items()):
        print(f"{name:24} {fid:8} {n}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
