"""The store's file index: which files it holds, readable without opening the store.

``ingest`` re-run over unchanged files (a timer every few minutes, ``make`` re-runs, a second
``ingest`` of the same directory) only has to say "unchanged": each file's path, size and
modification time are compared with the store's ``sources`` rows. Opening DuckDB for that (importing
it, mapping its library, taking the lock) is half the command's time, so the ingest that leaves
the store also leaves ``<db>.files.json`` beside it: every complete source's path, file size and
modification time, with the store file's identity (device, inode, size, mtime and ctime in
nanoseconds) and schema version at that moment.

The index is trusted only while the store file is exactly as it was when the index was written
and has no write-ahead log: any later write (another ingest, ``build``, a user's own DuckDB
session) changes its mtime and ctime, and every postmortem command that opens the store for
writing deletes the index first (whatever path or symlink it names the store by), so an
interrupted write cannot leave a stale one. When the index is missing, unreadable or stale,
ingest opens the store and compares as before — the index only ever saves work, it never
decides what is stored.

Files skipped as not a log are otherwise read again on every run, so a skipped verdict is held
to more: the same inode and ctime as well as size and mtime (a copy that keeps the mtime is
noticed), the same read limits (``--max-bytes``) and the same format detectors (the parsers'
source files unchanged).

An archive stored up to its damage (a truncated ``.gz``) is listed under ``damaged``, so that an
unchanged re-run says again what its first ingest failed on.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..io import damage_in
from .migrations import latest_version

if TYPE_CHECKING:
    from ..io import InputFile
    from .db import Store

#: the index's own format (a file of another format is ignored)
FORMAT = 4  # 3: "damaged" (archives stored up to their damage); 4: "zones" (each file's zone)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_US = timedelta(microseconds=1)

#: read limits a skipped verdict was reached under: (--max-bytes, compression ratio limit)
Limits = tuple[int, float]


def index_path(db: str | os.PathLike[str]) -> Path:
    """``<db>.files.json`` beside the store file itself (a symlink to the store is resolved)."""
    return Path(f"{os.path.realpath(os.fspath(db))}.files.json")


def forget(db: str | os.PathLike[str]) -> None:
    """Delete the index (before the store is written: it would describe the old state)."""
    if os.fspath(db) == ":memory:":
        return
    with contextlib.suppress(OSError):
        index_path(db).unlink()


def _identity(db: str) -> list[int] | None:
    """The store file's identity; None when it has a write-ahead log (or is missing)."""
    try:
        st = os.stat(db)
    except OSError:
        return None
    # DuckDB keeps the log beside the path it was given: this one, or the file it names
    if os.path.lexists(f"{db}.wal") or os.path.lexists(f"{os.path.realpath(db)}.wal"):
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def _us(ts: datetime) -> int:
    return (ts - _EPOCH) // _US


def _file_identity(path: Path) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_ino, st.st_ctime_ns]


def _detectors() -> str:
    """A fingerprint of the parsers' source files (name, size, mtime): the format detectors a
    skipped verdict came from."""
    root = Path(__file__).resolve().parent.parent / "parsers"
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith(".py"):
                st = os.stat(os.path.join(dirpath, name))
                h.update(f"{os.path.relpath(dirpath, root)}/{name} {st.st_size} {st.st_mtime_ns}\n".encode())
    return h.hexdigest()


@dataclass
class Known:
    """Inputs the index vouches for: stored unchanged (with their source ids), or skipped for
    their content before (with the reason given then)."""

    unchanged: list[tuple[InputFile, int]] = field(default_factory=list)
    skipped: list[tuple[InputFile, str]] = field(default_factory=list)
    #: source id → the damage its archive ended in (only the lines before it are stored)
    damaged: dict[int, str] = field(default_factory=dict)


def write(store: Store, skipped: Iterable[tuple[InputFile, str]] = (), limits: Limits | None = None) -> None:
    """Checkpoint ``store`` (a read-write store, no transaction open) and write its index, with
    the files this run skipped for their content (``skipped``: input and reason) under the read
    ``limits`` (None: no skipped file is kept).

    The lock is held throughout, so no other writer can come between the checkpoint, the
    reading of ``sources`` and the store file's identity. A failure to write leaves no index."""
    import duckdb

    if store.read_only or store.path == ":memory:":
        return
    target = index_path(store.path)
    try:
        store.execute("CHECKPOINT")
        rows = store.fetchall(
            "SELECT path, source_id, file_size, epoch_us(file_mtime), notes, tz FROM sources "
            "WHERE status = 'complete' "
            "QUALIFY row_number() OVER (PARTITION BY path ORDER BY source_id DESC) = 1"
        )
        ident = _identity(store.path)
        if ident is None:
            forget(store.path)
            return
        skips: dict[str, list[Any]] = {}
        for inp, reason in skipped if limits is not None else ():
            if inp.path is None or inp.mtime is None:
                continue
            file_id = _file_identity(inp.path)
            if file_id is not None and file_id[0] == inp.size:
                skips[inp.key] = [*file_id, _us(inp.mtime), reason]
        doc = {
            "format": FORMAT,
            "postmortem": __version__,
            "schema_version": latest_version(),
            "store": ident,
            # the newest complete source of each path, as ingest looks it up (stdin and merged
            # sources have no file size or mtime: null, never unchanged)
            "files": {str(p): [int(sid), size, us] for p, sid, size, us, _n, _tz in rows},
            # a stored archive that ended in damage: "unchanged" says so again
            "damaged": {str(p): d for p, _s, _z, _u, n, _tz in rows if (d := damage_in(n))},
            # the zone each was read in: a --tz naming it again changes nothing
            "zones": {str(p): tz for p, _s, _z, _u, _n, tz in rows if tz},
            "skipped": skips,
            "skipped_under": {"limits": list(limits or ()), "detectors": _detectors() if skips else ""},
        }
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
        try:
            # readable by whoever may read the store (it names the same files)
            os.fchmod(fd, stat.S_IMODE(os.stat(store.path).st_mode))
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(doc, fh, separators=(",", ":"))
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except (OSError, duckdb.Error):  # an optimisation only: without an index, ingest opens the store
        forget(store.path)


def _load(db: str) -> dict[str, Any] | None:
    try:
        with index_path(db).open("rb") as fh:
            doc = json.load(fh)
    except (OSError, ValueError, RecursionError):  # (nested past the parser's depth: not ours)
        return None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("postmortem") != __version__:
        return None
    if doc.get("schema_version") != latest_version():
        return None
    if not all(isinstance(doc.get(k), dict) for k in ("files", "skipped", "skipped_under")):
        return None
    return doc


def lookup(
    db: str | os.PathLike[str],
    inputs: Sequence[InputFile],
    may_skip: Callable[[InputFile], bool],
    limits: Limits,
    zone: str | None = None,
) -> Known | None:
    """What the index knows of every one of ``inputs``, or None when it cannot vouch for all.

    Stored unchanged is the test ingest makes against ``sources``: the same path, size and
    mtime to the microsecond. Skipped again: a file skipped for its content with the same path,
    size, mtime, inode and ctime, under the same read ``limits`` and format detectors, and
    ``may_skip(input)`` (no format forced on it now — nor on a stored file: only the store
    knows the format it was read in). ``zone``: the zone named on the command line; a stored
    file read in another one is not vouched for."""
    path = os.fspath(db)
    if not inputs or path == ":memory:":
        return None
    doc = _load(path)
    if doc is None or doc.get("store") != _identity(path):
        return None
    files: dict[str, Any] = doc["files"]
    damaged = doc.get("damaged")
    if not isinstance(damaged, dict):
        damaged = {}
    zones = doc.get("zones")
    if not isinstance(zones, dict):
        zones = {}
    known = Known()
    skipped_again = _SkippedAgain(doc, may_skip, limits)
    for inp in inputs:
        if inp.path is None or inp.size is None or inp.mtime is None:
            return None
        # the absolute path; a store written before paths were absolute knows the name as given
        entry = files.get(inp.key)
        if entry is None and inp.display != inp.key:
            entry = files.get(inp.display)
        if entry is None:
            reason = skipped_again(inp)
            if reason is None:
                return None
            known.skipped.append((inp, reason))
            continue
        if not isinstance(entry, list) or len(entry) != 3 or not isinstance(entry[0], int):
            return None
        if entry[1] != inp.size or entry[2] != _us(inp.mtime) or not may_skip(inp):
            return None  # a format forced now may not be the one it was read in: the store says
        if zone is not None and zone != (
            zones.get(inp.key) if entry is files.get(inp.key) else zones.get(inp.display)
        ):
            return None  # read in another zone than the one named now: the store says what to do
        known.unchanged.append((inp, entry[0]))
        damage = damaged.get(inp.key) if entry is files.get(inp.key) else damaged.get(inp.display)
        if isinstance(damage, str):
            known.damaged[entry[0]] = damage
    return known


class _SkippedAgain:
    """Whether a file the index recorded as skipped for its content would be skipped again
    (its reason), or None: its identity, the read limits or the format detectors changed."""

    def __init__(self, doc: dict[str, Any], may_skip: Callable[[InputFile], bool], limits: Limits) -> None:
        self.skipped: dict[str, Any] = doc["skipped"]
        self.under: dict[str, Any] = doc["skipped_under"]
        self.may_skip = may_skip
        self.limits = limits
        self.detectors_checked = False

    def __call__(self, inp: InputFile) -> str | None:
        assert inp.path is not None and inp.mtime is not None
        entry = self.skipped.get(inp.key)
        if not isinstance(entry, list) or len(entry) != 5 or not isinstance(entry[4], str):
            return None
        if entry[:3] != _file_identity(inp.path) or entry[0] != inp.size or entry[3] != _us(inp.mtime):
            return None
        if self.under.get("limits") != list(self.limits) or not self.may_skip(inp):
            return None
        if not self.detectors_checked:
            if self.under.get("detectors") != _detectors():
                return None
            self.detectors_checked = True
        return entry[4]
