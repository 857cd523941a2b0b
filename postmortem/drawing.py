"""Drawing the reports' figures in a process of their own, started before anything is imported.

Importing matplotlib and drawing one report's two figures take longer than opening the store and
analysing an incident (measured on a one-incident ``build``: about 0.7 s to import, 0.5 s to draw,
against 0.5 s of analysis). So the ``postmortem build`` command forks a drawing process first thing
(:func:`start`, called by the entry point while the process still has one thread and no imports
beyond the standard library). That process imports matplotlib and the analysis types on the
other core while this one starts up and ingests; it then draws each incident's figures as soon
as that incident is analysed, while this one analyses the next and writes the reports' text;
the jobs waiting when it is free are drawn together by warm copies of it, one per CPU, forked
when the jobs arrive. :class:`Drawer` is the parent's side.

Everything degrades to drawing here, the way a library call does: no drawing process (another
command, a library caller, a platform without ``fork``, ``POSTMORTEM_DRAW_PROCESS=0``), or one that
died (its jobs are drawn here). What drawing would have shown here still is: warnings raised
while drawing are raised again in this process, and a drawing error is raised by drawing the
figure here. The drawing process and its copies die with their parent (``PR_SET_PDEATHSIG``) and
are killed and reaped by :meth:`Drawer.close` or :func:`stop`; when matplotlib's own config
directory cannot be written, the temporary one it would make (and remove at an exit these
processes never reach) is made and removed here. This module imports only the standard library
at the top (and :mod:`postmortem.machine`, which imports nothing else): it is loaded before the
command line is parsed.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .machine import usable_cpus

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

    from .figdata import LoadsData, MemoryData

Drawn = tuple[Path | None, Path | None]

#: without a drawing process: with this many reports or more, a pool of processes (one per CPU,
#: each importing matplotlib) draws them
PARALLEL_FIGURES = 6


@dataclass
class FigureJob:
    """One report's two figures: the memory timeline and the load times (``None``: nothing to
    show), as the plain data :mod:`postmortem.figdata` builds, and where to write them."""

    stem: str
    memory: MemoryData | None
    memory_path: Path
    loads: LoadsData | None
    loads_path: Path


def draw(job: FigureJob) -> Drawn:
    """Draw one report's figures in this process (a figure without data to show is ``None``)."""
    from .plots import loads_figure, memory_figure  # matplotlib: only when a figure is drawn

    fig = memory_figure(job.memory, job.memory_path) if job.memory is not None else None
    lfig = loads_figure(job.loads, job.loads_path) if job.loads is not None else None
    return fig, lfig


# ---------------------------------------------------------------------------- the child


def _serve(conn: Connection) -> None:
    """The drawing process: import, then draw the jobs received until told to stop."""
    try:
        from . import plots  # noqa: F401 - the point: import while the parent is busy

        while True:
            try:
                items = conn.recv()  # (sent with send_bytes of a ForkingPickler pickle)
            except EOFError:  # the parent is gone
                return
            if items is None:
                return
            # jobs sent one at a time (as the parent analyses each incident) that arrived while
            # the last were drawn are drawn together, in parallel
            stop = False
            while not stop and conn.poll(0):
                more = conn.recv()
                stop = more is None
                items += more or []
            _draw_all(conn, items)
            if stop:
                return
    except BaseException:
        return


#: what the drawing process answers per job: its number, the figures (None: failed), the error,
#: and the warnings drawing raised (category name, message), which the parent raises again
Result = tuple[int, Drawn | None, str | None, list[tuple[str, str]]]


def _attempt(i: int, job: FigureJob) -> Result:
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            drawn: Drawn | None = draw(job)
            err = None
        except Exception as exc:  # reported to the parent, which draws it itself
            drawn, err = None, f"{type(exc).__name__}: {exc}"[:2000]
    notes = [(w.category.__name__, str(w.message)[:2000]) for w in caught]
    return i, drawn, err, notes


def _draw_all(conn: Connection, items: list[tuple[int, FigureJob]]) -> None:
    """Draw ``items``, sending each result as it is done: here for one job; for several, by one
    forked copy of this process per CPU (already warm: forking it costs milliseconds), each taking
    the next job as it finishes one."""
    workers = min(usable_cpus(), len(items))
    if workers < 2:
        for i, job in items:
            conn.send(_attempt(i, job))
        return
    import queue
    import signal
    from multiprocessing import Queue, Value

    following = Value("i", 0)  # the next job to take
    results: Queue[Result] = Queue()
    me = os.getpid()
    running = set()
    for _ in range(workers):
        pid = os.fork()
        if pid == 0:
            try:
                _die_with(me)
                while True:
                    with following.get_lock():
                        k = following.value
                        following.value = k + 1
                    if k >= len(items):
                        break
                    results.put(_attempt(*items[k]))
                results.close()
                results.join_thread()  # the results are in the pipe before this process ends
            finally:
                os._exit(0)
        running.add(pid)
    missing = {i for i, _ in items}
    try:
        while missing:
            try:
                got = results.get(timeout=0.5)
            except queue.Empty:
                for pid in list(running):
                    with contextlib.suppress(ChildProcessError):
                        if os.waitpid(pid, os.WNOHANG)[0]:
                            running.discard(pid)
                if not running and results.empty():
                    break  # a worker died with jobs in hand: the parent draws those
                continue
            missing.discard(got[0])
            conn.send(got)
    finally:
        # done, or this process failed: the workers are disposable (one blocked on a full
        # results pipe would otherwise never end)
        for pid in running:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
    for i in sorted(missing):
        conn.send((i, None, "the drawing process failed", []))


def _die_with(parent: int) -> None:
    """Have the kernel kill this process when ``parent`` ends (Linux ``PR_SET_PDEATHSIG``): a
    drawing process outlives nothing it serves."""
    import ctypes
    import signal

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG = 1
    if os.getppid() != parent:  # the parent ended before the request was made
        os._exit(0)


# ---------------------------------------------------------------------------- the parent


@dataclass
class _Process:
    """The forked drawing process, as the parent knows it."""

    pid: int
    conn: Connection
    #: a matplotlib config directory made for it (matplotlib's own was not writable), removed
    #: when the process is stopped
    tmpdir: str | None


_started: _Process | None = None


def start() -> None:
    """Fork the drawing process (once; on Linux; unless ``POSTMORTEM_DRAW_PROCESS=0``)."""
    global _started
    if _started is not None or sys.platform != "linux" or os.environ.get("POSTMORTEM_DRAW_PROCESS") == "0":
        return
    if threading.active_count() > 1:  # forking a threaded process is unsafe: draw here instead
        return
    if usable_cpus() < 2:  # one CPU: a second process only competes
        return
    from multiprocessing import Pipe

    launcher = os.getpid()
    tmpdir = _config_dir()
    try:
        parent, child = Pipe()
        pid = os.fork()
    except OSError:
        _remove(tmpdir)
        return
    if pid == 0:  # the child: never returns into the command line
        try:
            parent.close()
            _die_with(launcher)
            # it reads and writes nothing, and must not hold the command's pipes open (``| less``)
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            # numpy's BLAS threads: none (this process forks its workers; it does no algebra)
            os.environ["OPENBLAS_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = "1"
            if tmpdir is not None:
                os.environ["MPLCONFIGDIR"] = tmpdir
            _serve(child)
        finally:
            os._exit(0)
    child.close()
    _started = _Process(pid, parent, tmpdir)


def _config_dir() -> str | None:
    """A temporary matplotlib config directory for the drawing process when matplotlib's own (as
    matplotlib chooses it) cannot be written: matplotlib would make one itself and remove it at
    exit, which a process that ends with ``os._exit`` or a kill never reaches."""
    import tempfile

    home = os.environ.get("HOME") or "/"
    chosen = os.environ.get("MPLCONFIGDIR")
    dirs = (
        [chosen]
        if chosen
        else [
            os.path.join(os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config"), "matplotlib"),
            os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.join(home, ".cache"), "matplotlib"),
        ]
    )
    for d in dirs:
        try:
            os.makedirs(d, exist_ok=True)
        except OSError:
            break
        if not (os.path.isdir(d) and os.access(d, os.W_OK)):
            break
    else:
        return None
    try:
        return tempfile.mkdtemp(prefix="postmortem-matplotlib-")
    except OSError:
        return None


def _remove(tmpdir: str | None) -> None:
    if tmpdir is not None:
        import shutil

        shutil.rmtree(tmpdir, ignore_errors=True)


def stop() -> None:
    """Stop a drawing process no :class:`Drawer` took (the command failed before drawing)."""
    taken = _adopt()
    if taken is not None:
        _kill(taken)


def _kill(proc: _Process, senders: list[threading.Thread] | None = None) -> None:
    """Kill and reap the process, let the threads still sending to it fail, then close the
    connection (not before: a closed connection's descriptor could be reused under them)."""
    import signal

    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(proc.pid, 0)
    for t in senders or []:
        t.join(timeout=5)
    proc.conn.close()
    _remove(proc.tmpdir)


def _adopt() -> _Process | None:
    global _started
    taken, _started = _started, None
    return taken


class Drawer:
    """Draws figures for :func:`postmortem.report.write_reports`: through the drawing process
    :func:`start` forked, when there is one, else here. Close it when done."""

    def __init__(self) -> None:
        self._proc = _adopt()
        self._results: dict[int, Result] = {}
        self._senders: list[threading.Thread] = []
        self._send_lock = threading.Lock()  # one message on the connection at a time
        self._failed = False  # the process cannot be relied on any more: what is left is drawn here
        self._next = 0  # job numbers, unique across submit() calls

    @property
    def concurrent(self) -> bool:
        """Whether figures submitted now are drawn meanwhile (by the drawing process)."""
        return self._proc is not None and not self._failed

    def submit(self, jobs: list[FigureJob]) -> list[Callable[[], Drawn]]:
        """Start drawing ``jobs``; each returned callable waits for one job's figures."""
        if self._proc is None or self._failed:
            if len(jobs) >= PARALLEL_FIGURES and usable_cpus() >= 2:
                return _pool(jobs)
            return [_here(j) for j in jobs]
        from multiprocessing.reduction import ForkingPickler

        items = list(enumerate(jobs, start=self._next))
        self._next += len(jobs)
        try:  # here, so that a job that cannot be sent fails now, not in a thread
            payload = bytes(ForkingPickler.dumps(items))
        except Exception:
            # these jobs are drawn here; the process still draws the ones it was sent
            return [_here(j) for j in jobs]
        # sent from a thread: the drawing process reads them only once its imports are done,
        # and this process has the reports' text to write meanwhile
        sender = threading.Thread(target=self._send, args=(payload,), daemon=True)
        sender.start()
        self._senders.append(sender)
        return [self._waiter(i, job) for i, job in items]

    def _send(self, payload: bytes) -> None:
        assert self._proc is not None
        conn = self._proc.conn
        try:
            with self._send_lock:
                conn.send_bytes(payload)
        except BaseException:  # the process died, or was stopped: its jobs are drawn here
            self._failed = True

    def _waiter(self, i: int, job: FigureJob) -> Callable[[], Drawn]:
        def wait() -> Drawn:
            while i not in self._results and not self._failed and self._proc is not None:
                conn = self._proc.conn
                try:
                    if not conn.poll(0.2):  # (and look again whether the sender failed)
                        continue
                    got: Result = conn.recv()
                except (EOFError, OSError):
                    self._failed = True
                    break
                self._results[got[0]] = got
            _, drawn, err, notes = self._results.get(i, (i, None, "no drawing process", []))
            if notes:
                self._results[i] = (i, drawn, err, [])  # raised once
                _warn_again(notes)
            if drawn is not None and err is None:
                return drawn
            return draw(job)  # the drawing process failed at it (or died): draw it here

        return wait

    def close(self) -> None:
        """Stop the drawing process (whatever it is doing: the figures already received are
        written; on an error path nothing is worth waiting for) and reap it."""
        proc, self._proc = self._proc, None
        if proc is not None:
            _kill(proc, self._senders)

    def __enter__(self) -> Drawer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _warn_again(notes: list[tuple[str, str]]) -> None:
    """Raise here the warnings drawing raised in the drawing process."""
    import builtins
    import warnings

    for name, message in notes:
        category = getattr(builtins, name, None)
        if not (isinstance(category, type) and issubclass(category, Warning)):
            category = UserWarning
        warnings.warn(message, category, stacklevel=3)


def _here(job: FigureJob) -> Callable[[], Drawn]:
    return lambda: draw(job)


def _pool(jobs: list[FigureJob]) -> list[Callable[[], Drawn]]:
    """Many reports: a pool of processes, one per CPU, each importing matplotlib once."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    workers = min(usable_cpus(), len(jobs))
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        drawn = list(pool.map(draw, jobs))
    return [_done(d) for d in drawn]


def _done(drawn: Drawn) -> Callable[[], Drawn]:
    return lambda: drawn


def wants_drawing(argv: list[str]) -> bool:
    """Whether a command line runs ``build`` (the command that draws), ``--help`` aside."""
    args = [a for a in argv if not a.startswith("-")]
    return bool(args) and args[0] == "build" and "--help" not in argv
