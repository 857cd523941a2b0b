"""The ``postmortem`` command's entry point: forks the figure-drawing process for ``build`` before
anything heavy is imported (see :mod:`postmortem.drawing`), then runs the command line, and ends
the process without the interpreter's teardown (:func:`_end`)."""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # (typing itself costs an unchanged re-ingest a few milliseconds)
if TYPE_CHECKING:
    from typing import NoReturn

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
    # Arrow allocates from the C library's malloc (which `machine.keep_freed_memory` tunes for a
    # large ingest), not from mimalloc, pyarrow's default: mimalloc gave freed pages back to the
    # kernel at once, so each block's columns and the parts' buffers were fresh pages again, a
    # page fault and a zeroed page per 4 kB (perf: 7 % of the parsing thread in clear_page).
    # Read when Arrow loads; a user's own setting wins. See docs/performance.md.
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    # started with stdout or stderr closed (`>&-`): Python gives None, and the first write failed
    # as an internal error; /dev/null also takes the descriptor, which a file opened later (the
    # store) would otherwise get, and a stray write to it would land in that file
    for name in ("stdout", "stderr"):
        if getattr(sys, name) is None:
            setattr(sys, name, open(os.devnull, "w"))  # noqa: SIM115 - the process's stream
    if sys.argv[1:2] == ["ingest"]:
        from .quick import unchanged_ingest

        said = unchanged_ingest(sys.argv[1:])
        if said is not None:  # files the store holds unchanged: said, nothing loaded
            _end(said)
    from .drawing import start, stop, wants_drawing

    gc.set_threshold(YOUNG_COLLECTION, *gc.get_threshold()[1:])

    if wants_drawing(sys.argv[1:]):
        start()
    try:
        from .cli import main as cli_main

        cli_main()
        code: object = 0
    except SystemExit as exc:  # (how every command ends)
        code = exc.code
    finally:
        stop()  # when the command ended before its reports were drawn
    _end(code)


def _end(code: object) -> NoReturn:
    """End the process with ``code`` (a ``SystemExit``'s) as the interpreter would — other
    threads joined, stores closed, ``atexit`` handlers run, the standard streams flushed (a
    failed flush exits 120, as Python's) — but without tearing down every module: a final
    garbage collection over DuckDB's, Arrow's, numba's and numpy's objects and their
    unloading took 50-75 ms after a large ingest and 17 ms of a 0.12 s unchanged re-ingest.
    (A file postmortem writes is closed by the code that wrote it; none is left to a
    finaliser.) A command that failed or was stopped may have left objects in reference
    cycles through its traceback (a stdin ingest's temporary copy): one collection runs
    their finalisers first."""
    import atexit
    import gc
    import os
    import threading

    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # sys.exit("message"): the message on stderr, status 1
        print(code, file=sys.stderr)
        status = 1
    if status != 0:
        gc.collect()
    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join()
    db = sys.modules.get("postmortem.store.db")
    if db is not None:
        db.close_open_stores()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:  # (None: started with that stream closed)
                stream.flush()
        except (OSError, ValueError):
            status = 120
    os._exit(status)
