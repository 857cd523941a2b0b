"""The single-file collector's command line: ``python3 postmortem-collect.pyz [options]``.

The same options as ``postmortem collect`` (``--since``, ``--until``, ``--unit``, ``--out``,
``--archive``, ``--timeout``, ``--max-bytes``, ``--kubernetes``, ``--namespace``, ``--pod``) parsed with :mod:`argparse` (the installed CLI's
typer is not in the standard library), the same :func:`postmortem.collect.collect` behind
them, the same summary, and the same exit codes: 0, 1 with one ``Error:`` line, 2 for a usage
error. Standard library only, Python 3.8+ (with :mod:`postmortem._compat`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import __version__


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="postmortem-collect.pyz",
        description="Save the evidence on this machine (journal, dmesg, nvidia-smi, units, logs) as a bundle.",
    )
    p.add_argument("--since", default="-24h", help="Start of the journal window (journalctl syntax).")
    p.add_argument("--until", default=None, help="End of the journal window.")
    p.add_argument("--unit", action="append", default=[], help="Unit glob (repeatable).")
    p.add_argument("--out", default=".", help="Directory for the bundle.")
    p.add_argument("--archive", action="store_true", help="Also write <bundle>.tar.gz.")
    p.add_argument("--timeout", type=float, default=60.0, help="Seconds each command may run.")
    p.add_argument("--max-bytes", type=int, default=256 << 20, help="Size limit per output file (bytes).")
    p.add_argument(
        "--kubernetes", action="store_true", help="Also the pods, events, logs and describe (kubectl)."
    )
    p.add_argument("--namespace", default=None, help="With --kubernetes: this namespace.")
    p.add_argument("--pod", default=None, help="With --kubernetes: this pod.")
    p.add_argument("--version", action="version", version=f"postmortem-collect {__version__}")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    from .collect import CollectOptions, collect, summary_lines
    from .config import load_config
    from .errors import PostmortemError

    warned: list[str] = []

    def warn(text: str) -> None:
        warned.append(text)
        print(f"warning: {text}", file=sys.stderr)

    try:
        result = collect(
            CollectOptions(
                out=Path(args.out),
                since=args.since or None,
                until=args.until,
                units=list(args.unit),
                archive=args.archive,
                timeout_s=args.timeout,
                max_bytes=args.max_bytes,
                config=load_config(),
                warn=warn,
                kubernetes=args.kubernetes or bool(args.namespace or args.pod),
                namespace=args.namespace,
                pod=args.pod,
            )
        )
    except PostmortemError as e:
        print(f"Error: {e}", file=sys.stderr)
        return int(e.exit_code)
    except KeyboardInterrupt:
        print("Error: interrupted", file=sys.stderr)
        return 130
    for line in summary_lines(result, frozenset(warned)):
        print(line)
    return 0
