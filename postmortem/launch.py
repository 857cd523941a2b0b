"""The ``postmortem`` command's entry point: forks the figure-drawing process for ``build`` before
anything heavy is imported (see :mod:`postmortem.drawing`), then runs the command line."""

from __future__ import annotations

import sys

#: allocations of container objects between two young-generation collections (Python's
#: default: 700). An ingest makes millions of short-lived tuples, lists and rows; at 700 the
#: collector ran often enough to cost 3 % of a 2M-line journal's CPU (perf: gc_collect_main),
#: at 50,000 it costs little, with the same peak memory (journal: 4.39 -> 4.24 user CPU s)
YOUNG_COLLECTION = 50_000


def main() -> None:
    import gc
    import os

    # numpy's OpenBLAS starts a worker thread per core that spins a while after start-up;
    # postmortem does no linear algebra (perf: 2-5 % of an ingest's CPU samples in them; 2.64 ->
    # 2.53 CPU s on the bench's 2M-line server log). Set before numpy loads; a user's own setting wins.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from .drawing import start, stop, wants_drawing

    gc.set_threshold(YOUNG_COLLECTION, *gc.get_threshold()[1:])

    if wants_drawing(sys.argv[1:]):
        start()
    try:
        from .cli import main as cli_main

        cli_main()
    finally:
        stop()  # when the command ended before its reports were drawn
