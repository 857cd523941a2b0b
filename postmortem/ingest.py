"""The ingest pipeline: files → format detection → parser → store.

One transaction per file; a file already in the store (same path, size and modification time,
or the same content under another name) adds nothing; a file that has grown adds only its new
lines. Every physical line is accounted for: ``parsed + ignored + unparsed == lines``.
"""

from __future__ import annotations

import hashlib
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .bundle import bundle_options, expand_bundles
from .config import Config
from .errors import ArchiveError, InputError, PostmortemError, UsageError
from .io import (
    DAMAGE_KEPT,
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_RATIO,
    JOURNAL_MAGIC,
    InputFile,
    OverlongLine,
    StreamState,
    compression_of,
    damage_in,
    iter_blocks,
    iter_lines,
    journalctl_export,
    read_head,
    without_bom,
)
from .lazyre import lazy_re
from .machine import keep_freed_memory
from .parsers import all_parsers, detect, get_parser
from .parsers.base import BytesParser, Head, LineChunk, ParseContext, Parser
from .store import fileindex
from .timeutil import UTC as _UTC
from .timeutil import ZONE_ASSUMED, zone_name
from .unitname import unit_from_name

if TYPE_CHECKING:
    from .store.db import Store

BINARY_JOURNAL_FORMAT = "journal-export"

Progress = Callable[[str, int, int | None], None]


@dataclass
class IngestOptions:
    format: str | None = None
    zone: tzinfo = _UTC
    zone_given: bool = False
    # Whether ``zone`` is the command line's --tz (True) or came from postmortem.toml or a
    # bundle's manifest (False); None = not said (library callers): a zone equal to the
    # config's counts as the config's.
    zone_from_cli: bool | None = None
    year: int | None = None
    host: str | None = None
    since: datetime | None = None
    boot_time: datetime | None = None
    at: datetime | None = None
    columns: list[str] | None = None
    unit: str | None = None
    max_bytes: int = DEFAULT_MAX_BYTES
    max_ratio: float = DEFAULT_MAX_RATIO
    config: Config = field(default_factory=Config)
    progress: Progress | None = None
    strict: bool = False  # re-raise parser bugs (tests)

    def zone_from_user(self) -> bool:
        """True when the zone was named on the command line: it beats every per-file source
        (a ``[[sources]]`` hint, a bundle's manifest); ``[defaults] tz`` loses to them."""
        if not self.zone_given:
            return False
        if self.zone_from_cli is not None:
            return self.zone_from_cli
        return not (self.config.tz and zone_name(self.zone) == self.config.tz)


@dataclass
class FileResult:
    path: str
    status: str  # ingested | appended | replaced | unchanged | duplicate | undetected | error
    format: str | None = None
    source_id: int | None = None
    lines: int = 0
    parsed: int = 0
    ignored: int = 0
    records: int = 0
    parse_issues: int = 0
    bytes: int = 0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    error: str | None = None
    #: the traceback of an internal error (shown with --debug)
    trace: str | None = None
    per_table: dict[str, int] = field(default_factory=dict)
    #: appended: the lines and records this ingest added (the counts above are the file's)
    new_lines: int | None = None
    new_records: int | None = None


@dataclass
class IngestSummary:
    files: list[FileResult] = field(default_factory=list)
    #: files skipped for their content alone (no format forced, not an unreadable archive) and
    #: why: the same bytes are skipped again (the store's file index remembers them)
    skipped: list[tuple[InputFile, str]] = field(default_factory=list)

    @property
    def errors(self) -> list[FileResult]:
        return [f for f in self.files if f.status == "error"]

    @property
    def ingested(self) -> list[FileResult]:
        return [f for f in self.files if f.status in ("ingested", "appended", "replaced")]


@dataclass
class _Planned:
    inp: InputFile
    head: Head
    parser: Parser | None
    score: int
    binary_journal: bool
    error: str | None = None  # unreadable from its first byte (corrupt archive, over --max-bytes)
    skip: str | None = None  # found by a walk and gone or unreadable since: listed as skipped


def _plan(inputs: list[InputFile], options: IngestOptions) -> list[_Planned]:
    planned = []
    for inp in inputs:
        try:
            head = read_head(inp, max_bytes=options.max_bytes)
        except ArchiveError as exc:
            reason = str(exc).removeprefix(f"{inp.display}: ")
            planned.append(_Planned(inp, Head(inp.display, b"", []), None, 0, False, reason))
            continue
        except InputError as exc:
            if inp.explicit:
                raise
            # found by walking a directory and gone or unreadable since: the others are read
            reason = str(exc).removeprefix(f"{inp.display}: ")
            planned.append(_Planned(inp, Head(inp.display, b"", []), None, 0, False, None, skip=reason))
            continue
        binary = head.data.startswith(JOURNAL_MAGIC)
        forced = _forced(inp, options)
        parser: Parser | None
        score = 100
        if binary:
            parser = get_parser(BINARY_JOURNAL_FORMAT)
        elif forced:
            parser = get_parser(forced)
            if parser is None:
                names = ", ".join(sorted(all_parsers()))
                raise UsageError(f"unknown format {forced!r}; known formats: {names}")
        else:
            parser, score = detect(head)
        planned.append(_Planned(inp, head, parser, score, binary))
    planned.sort(key=lambda p: (p.parser.priority if p.parser else 99, p.inp.display))
    return planned


def _forced(inp: InputFile, options: IngestOptions) -> str | None:
    """The format ``inp`` is read as whatever its content (--format, a ``[[sources]]`` hint)."""
    hint = options.config.hint_for(inp.display)
    return options.format or (hint.format if hint else None)


def ingest_paths(store: Store, paths: list[str], options: IngestOptions) -> IngestSummary:
    """Ingest every file under ``paths`` (directories recursively, ``-`` for stdin); bundles of
    ``postmortem collect`` (directories or archives) give their files the manifest's context."""
    with expand_bundles(paths, options) as expanded:
        return _ingest_inputs(
            store, paths, expanded.inputs, IngestSummary(expanded.results + expanded.special), options
        )


def ingest_into(db: str, paths: list[str], options: IngestOptions, *, wait: float = 0.0) -> IngestSummary:
    """:func:`ingest_paths` into the store at ``db``, which is opened only when the store's file
    index cannot tell that every file is already there unchanged; the store is left with a
    fresh index (see :mod:`postmortem.store.fileindex`)."""
    with expand_bundles(paths, options) as expanded:
        if not expanded.results:
            known = fileindex.lookup(
                # a format, a host or a year named on the command line may not be the one a
                # file was read with: only the store can say; a zone, the index knows
                db,
                expanded.inputs,
                lambda inp: _forced(inp, options) is None and options.host is None and options.year is None,
                read_limits(options),
                zone=zone_name(options.zone) if options.zone_from_user() else None,
            )
            if known is not None and _skipped_roots_known(known):
                summary = _known_summary(known)
                summary.files[:0] = expanded.special
                return summary
        from .store.db import Store  # DuckDB: only now

        store = Store.open(db, wait=wait)
        try:
            summary = _ingest_inputs(
                store, paths, expanded.inputs, IngestSummary(expanded.results + expanded.special), options
            )
            fileindex.write(store, summary.skipped, read_limits(options))
        finally:
            store.close()
        return summary


def read_limits(options: IngestOptions) -> fileindex.Limits:
    """What a file is read under (a file skipped under other limits may read otherwise)."""
    return (options.max_bytes, options.max_ratio)


def _skipped_roots_known(known: fileindex.Known) -> bool:
    """A directory whose files are all skipped is an error that ingest reports itself."""
    have = {inp.root for inp, _ in known.unchanged if inp.root is not None}
    return all(inp.root is None or inp.root in have for inp, _ in known.skipped)


def _known_summary(known: fileindex.Known) -> IngestSummary:
    """What :func:`_ingest_inputs` reports for these files: the unchanged ones in order, then
    the skipped ones by name (as files without a parser are planned)."""
    summary = IngestSummary(
        [_unchanged_result(inp, sid, known.damaged.get(sid)) for inp, sid in known.unchanged]
    )
    for inp, reason in sorted(known.skipped, key=lambda s: s[0].display):
        summary.files.append(_not_ingested(inp, reason))
        summary.skipped.append((inp, reason))
    return summary


def _unchanged_result(inp: InputFile, source_id: int, damage: str | None) -> FileResult:
    """A stored file that has not changed; one whose archive ended in damage says so again (its
    first ingest failed on it, and a re-run that only said "unchanged" hid it)."""
    notes = [f"still {damage}"] if damage else []
    return FileResult(inp.display, "unchanged", source_id=source_id, notes=notes)


def _not_ingested(inp: InputFile, reason: str) -> FileResult:
    """A file no parser takes: an error when named on the command line, else skipped."""
    return FileResult(inp.display, "error" if inp.explicit else "undetected", error=reason)


def _ingest_inputs(
    store: Store, paths: list[str], inputs: list[InputFile], summary: IngestSummary, options: IngestOptions
) -> IngestSummary:
    if not inputs and not summary.files:
        raise InputError(f"{', '.join(paths)}: no files to ingest")
    # files already in the store (same path, size and mtime) are done before anything is read or
    # any parser imported: re-ingesting an unchanged tree costs a few queries
    fresh: list[InputFile] = []
    known_roots: set[str] = set()
    unchanged: list[tuple[InputFile, int]] = []
    for inp in inputs:
        sid = _unchanged(store, inp, _forced(inp, options), options.host)
        if sid is not None and (_other_zone(store, sid, options) or _other_year(store, sid, options)):
            sid = None  # read again in the zone or the year named now
        if sid is None:
            fresh.append(inp)
            continue
        unchanged.append((inp, sid))
        if inp.root is not None:
            known_roots.add(inp.root)
    damaged = _damaged(store, [sid for _inp, sid in unchanged])
    summary.files += [_unchanged_result(inp, sid, damaged.get(sid)) for inp, sid in unchanged]
    _follow_rotations(store, fresh, options)
    planned = _plan(fresh, options)
    roots = {p.inp.root for p in planned if p.inp.root is not None} - known_roots
    for root in sorted(roots):
        if not any(p.parser is not None for p in planned if p.inp.root == root):
            raise InputError(
                f"{root}: no recognisable logs in this directory (see 'postmortem formats', or force "
                "one with --format NAME)"
            )
    for item in planned:
        if item.skip is not None:
            summary.files.append(FileResult(item.inp.display, "undetected", error=item.skip))
            continue
        if item.parser is None:
            empty = not item.head.data
            reason = item.error or (
                "empty file, nothing to ingest"
                if empty
                else _utf16_hint(item.head.data) or "format not recognised (use --format NAME to force one)"
            )
            summary.files.append(_not_ingested(item.inp, reason))
            if item.error is None:  # not recognised (no format forced): by content alone
                summary.skipped.append((item.inp, reason))
            continue
        try:
            result = ingest_file(store, item.inp, item.parser, bundle_options(item.inp, options), item)
        except InputError as exc:
            if item.inp.explicit:
                raise
            # gone (a rotation renamed it) or unreadable between the listing and its read
            result = FileResult(
                item.inp.display, "undetected", error=str(exc).removeprefix(f"{item.inp.display}: ")
            )
        summary.files.append(result)
    from .store.parts import remove_orphans

    remove_orphans(store)  # the parts of sources replaced, and of loads abandoned
    return summary


def _utf16_hint(data: bytes) -> str | None:
    """UTF-16 text (PowerShell's ``>``, some Windows tools): not recognised, and why.

    >>> _utf16_hint("Mar 14 h x: y".encode("utf-16")), _utf16_hint(b"plain")
    ('UTF-16 text, not UTF-8: convert it first (iconv -f UTF-16 -t UTF-8 FILE > FILE.txt)', None)
    """
    head = data[:4096]
    bom = head.startswith((b"\xff\xfe", b"\xfe\xff"))
    half = len(head) // 2
    text = sum(32 <= b < 127 or b in (9, 10, 13) for b in head[0::2])  # little-endian ASCII
    if bom or (half >= 32 and head[1::2].count(0) > 0.9 * half and text > 0.9 * half):
        return "UTF-16 text, not UTF-8: convert it first (iconv -f UTF-16 -t UTF-8 FILE > FILE.txt)"
    return None


def _unchanged(
    store: Store, inp: InputFile, forced: str | None = None, host: str | None = None
) -> int | None:
    """The source id of ``inp`` when the store holds it with the same size and mtime (and, when
    a format is forced on it now, read in that format; when ``--host`` names a host now, stored
    for that host)."""
    if inp.path is None:
        return None
    existing, _legacy = _stored(store, inp)
    if existing is None:
        return None
    sid, _sha, _bytes, _lines, size, mtime, _id = existing
    if not (size == inp.size and _same_mtime(mtime, inp.mtime)):
        return None
    return None if _other_format(store, sid, forced) or _other_host(store, sid, host) else sid


def _other_year(store: Store, source_id: int, options: IngestOptions) -> bool:
    """Whether ``--year`` now names another year than a year-less file (classic syslog/journal
    ``short``) was read with: it is read again with it."""
    if options.year is None:
        return False
    rows = store.fetchall(
        "SELECT s.first_ts, (SELECT j.ts_inferred FROM journal_entries AS j WHERE j.source_id = s.source_id "
        "AND j.ts IS NOT NULL LIMIT 1) FROM sources AS s WHERE s.source_id = ?",
        [source_id],
    )
    if not rows or rows[0][0] is None or "year" not in str(rows[0][1] or ""):
        return False
    first: datetime = rows[0][0]
    return first.astimezone(options.zone).year != options.year


def _other_zone(store: Store, source_id: int, options: IngestOptions) -> bool:
    """Whether ``--tz`` now names another zone than the stored source was read in: the file is
    read again in it (a wrong --tz must be undoable, as a wrong --format or --host is)."""
    if not options.zone_from_user():
        return False
    rows = store.fetchall("SELECT tz FROM sources WHERE source_id = ?", [source_id])
    return bool(rows) and rows[0][0] is not None and rows[0][0] != zone_name(options.zone)


def _damaged(store: Store, source_ids: list[int]) -> dict[int, str]:
    """Of these stored sources, the ones whose archive ended in damage, with that damage."""
    if not source_ids:
        return {}
    rows = store.fetchall(
        "SELECT source_id, notes FROM sources WHERE source_id IN (SELECT unnest(?)) AND contains(notes, ?)",
        [source_ids, DAMAGE_KEPT],
    )
    return {int(sid): d for sid, notes in rows if (d := damage_in(notes))}


def _other_host(store: Store, source_id: int, host: str | None) -> bool:
    """Whether ``--host`` now names another host than the stored source was read for: the file
    is read again for it (a wrong or forgotten --host must be undoable, as a wrong --format is)."""
    if host is None:
        return False
    rows = store.fetchall("SELECT host FROM sources WHERE source_id = ?", [source_id])
    return bool(rows) and rows[0][0] != host


def _other_format(store: Store, source_id: int, forced: str | None) -> bool:
    """Whether a format forced now differs from the one the stored source was read in: then the
    file is read again in the forced one (a wrong --format must be undoable)."""
    if forced is None:
        return False
    rows = store.fetchall("SELECT format FROM sources WHERE source_id = ?", [source_id])
    return bool(rows) and rows[0][0] != forced


def _context(store: Store, inp: InputFile, head: Head, options: IngestOptions) -> ParseContext:
    hint = options.config.hint_for(inp.display)
    zone = options.zone
    zone_given = options.zone_given
    if hint and hint.tz and not options.zone_from_user():
        from .timeutil import get_zone

        zone, zone_given = get_zone(hint.tz), True
    from .parsers.kubernetes.names import pod_log  # (here: an unchanged re-ingest loads no parser)

    pod = pod_log(inp.display)  # a pod's log file: its path names the container
    unit = (
        options.unit
        or (hint.unit if hint else None)
        or (pod.unit if pod else unit_from_name(inp.display, guess=False))
    )
    return ParseContext(
        path=inp.display,
        host=_given_host(inp, options),
        zone=zone,
        zone_given=zone_given,
        year=options.year,
        mtime=inp.mtime,
        since=options.since,
        boot_time=options.boot_time,
        at=options.at,
        unit=unit,
        columns=options.columns,
        anchors=store.boot_anchors(),
    )


#: files at least this large (on disk) are inserted by a second thread while they are parsed
BACKGROUND_BYTES = 1 << 20

# a stored source: id, sha256, bytes, lines, file size, file mtime
_Stored = tuple[int, str, int, int, int | None, datetime | None, str | None]
#: what a stored file's path becomes when a new file took its place (log rotation)
ROTATED = " (rotated away)"
#: a rotated-away name, numbered from the second file rotated away under the same name
_ROTATED_RE = lazy_re(r" \(rotated away(?:, (\d+))?\)$")


def is_rotated(path: str) -> bool:
    """Whether a stored path names a file rotated away (``app.log (rotated away)``, ``…, 2)``)."""
    return _ROTATED_RE.search(path) is not None


def rotated_name(store: Store, key: str) -> str:
    """The name a source rotated away from ``key`` is kept under: ``key (rotated away)``, or
    numbered when an earlier file rotated away from the same name holds that one (a citation
    names one source)."""
    taken = {
        str(p)
        for (p,) in store.fetchall(
            "SELECT path FROM sources WHERE starts_with(path, ?)", [key + " (rotated away"]
        )
    }
    name, n = key + ROTATED, 1
    while name in taken:
        n += 1
        name = f"{key} (rotated away, {n})"
    return name


def _stored(store: Store, inp: InputFile) -> tuple[_Stored | None, bool]:
    """The stored source under ``inp``'s absolute path; else, from a store written before paths
    were made absolute, one under the relative name as given (``True``: such a legacy row, which
    may be another directory's file of that name — trusted only when unchanged or grown)."""
    # one query for both names (a statement costs about 2 ms: thousands of small files pay it)
    rows = store.fetchall(
        "SELECT source_id, sha256, bytes, lines, file_size, file_mtime, file_id, path = ? AS exact "
        "FROM sources WHERE path IN (?, ?) AND status = 'complete' "
        "ORDER BY exact DESC, source_id DESC LIMIT 1",
        [inp.key, inp.key, inp.display],
    )
    if not rows:
        return None, False
    r = rows[0]
    return (int(r[0]), str(r[1]), int(r[2]), int(r[3]), r[4], r[5], r[6]), not r[7]


def _find_source(store: Store, path: str) -> _Stored | None:
    rows = store.fetchall(
        "SELECT source_id, sha256, bytes, lines, file_size, file_mtime, file_id FROM sources "
        "WHERE path = ? AND status = 'complete' ORDER BY source_id DESC LIMIT 1",
        [path],
    )
    if not rows:
        return None
    r = rows[0]
    return int(r[0]), str(r[1]), int(r[2]), int(r[3]), r[4], r[5], r[6]


def _follow_rotations(store: Store, fresh: list[InputFile], options: IngestOptions) -> None:
    """Log rotation: a stored file's path now holds other content while a file of this run
    that the store does not know holds the old content — exactly, or followed by more lines
    (``app.log`` renamed to ``app.log.1`` or ``app.1.log`` and perhaps still written to, a new
    ``app.log``). The stored source moves to the rotated name, so the new content is ingested
    beside it (and the rotated file's growth appended) instead of replacing it, whichever of the
    two names comes first. Only uncompressed files at least the stored size are hashed, up to
    that size."""
    known: list[tuple[InputFile, int, str, int]] = []
    unknown: list[InputFile] = []
    for inp in fresh:
        if inp.path is None:
            continue
        found = _find_source(store, inp.key)
        if found is None:
            unknown.append(inp)
        elif found[2] == found[4]:  # stored whole and uncompressed: its hash is of the file's bytes
            known.append((inp, found[0], found[1], found[2]))
    for inp, sid, sha, size in known:
        cands = [c for c in unknown if c.size is not None and c.size >= size]
        if not cands or _grew_from(inp, sha, size, options):
            continue  # the file at the stored path still starts with what was stored
        _move_to_rotated(store, sid, sha, size, cands, unknown, options)
    # a file an earlier ingest saw replaced by a new one ("… (rotated away)"), now found under
    # its rotated name beside the old path (``app.log.1``, ``app-20250525.log``)
    if unknown:
        for sid, path, sha, size in store.fetchall(
            "SELECT source_id, path, sha256, bytes FROM sources WHERE status = 'complete' "
            "AND compression IS NULL AND bytes = file_size AND contains(path, ?)",
            [" (rotated away"],
        ):
            if not is_rotated(str(path)):
                continue
            was = Path(_ROTATED_RE.sub("", str(path)))
            stem = was.name.split(".", 1)[0]
            cands = [
                c
                for c in unknown
                if c.path is not None
                and c.size is not None
                and c.size >= size
                and Path(c.key).parent == was.parent
                and Path(c.key).name.startswith(stem)
            ]
            if cands:
                _move_to_rotated(store, int(sid), str(sha), int(size), cands, unknown, options)


def _move_to_rotated(
    store: Store,
    sid: int,
    sha: str,
    size: int,
    cands: list[InputFile],
    unknown: list[InputFile],
    options: IngestOptions,
) -> None:
    """Give source ``sid`` the path of the candidate that holds its content (exactly, or
    followed by more lines): ingesting that file then appends its growth, not a second copy."""
    for cand in cands:
        if compression_of(cand.first_bytes()) is not None:
            continue
        if _digest(cand) == sha if cand.size == size else _grew_from(cand, sha, size, options):
            store.execute(
                "UPDATE sources SET path = ?, file_mtime = ?, file_id = ? WHERE source_id = ?",
                [cand.key, cand.mtime, cand.file_id, sid],
            )
            unknown.remove(cand)
            return


def _digest(inp: InputFile) -> str:
    h = hashlib.sha256()
    with inp.open_raw() as fh:
        while block := fh.read(1 << 22):
            h.update(block)
    return h.hexdigest()


def _given_host(inp: InputFile, options: IngestOptions) -> str | None:
    """The host given for ``inp`` (``--host``, its ``[[sources]]`` hint, the configured host)."""
    hint = options.config.hint_for(inp.display)
    return options.host or (hint.host if hint else None) or options.config.host


def _same_content(store: Store, inp: InputFile, host: str | None) -> str | None:
    """The path of a stored source with exactly ``inp``'s content, for an uncompressed file the
    store holds one of the same size of (only then is the file hashed ahead of parsing) — not one
    stored for another host: two nodes started the same second write the same server log."""
    if inp.path is None or inp.size is None or compression_of(inp.first_bytes()) is not None:
        return None
    rows = store.fetchall(
        "SELECT path, sha256 FROM sources WHERE status = 'complete' AND compression IS NULL "
        "AND bytes = ? AND file_size = ? AND (?::VARCHAR IS NULL OR host IS NULL OR host = ?)",
        [inp.size, inp.size, host, host],
    )
    if not rows:
        return None
    digest = _digest(inp)
    return next((str(path) for path, sha in rows if sha == digest), None)


def _rotated_into(
    store: Store, inp: InputFile, options: IngestOptions, sid: int
) -> tuple[int, str, str | None] | None:
    """The stored source (id, path, compression) whose content the file at a stored source's
    path (``sid``) now holds — its content read (and decompressed) whole and hashed; None when
    it is no stored content (then the file was rewritten: its rows are replaced)."""
    host = _given_host(inp, options)
    n = store.fetchall(
        "SELECT count(*) FROM sources WHERE status = 'complete' AND source_id <> ? "
        "AND (?::VARCHAR IS NULL OR host IS NULL OR host = ?)",
        [sid, host, host],
    )
    if not n or not n[0][0]:
        return None
    state = StreamState()
    for _ in iter_blocks(inp, state, max_bytes=options.max_bytes, max_ratio=options.max_ratio):
        pass
    if state.error is not None:
        return None
    rows = store.fetchall(
        "SELECT source_id, path FROM sources WHERE status = 'complete' AND source_id <> ? AND sha256 = ? "
        "AND (?::VARCHAR IS NULL OR host IS NULL OR host = ?) ORDER BY source_id LIMIT 1",
        [sid, state.sha256.hexdigest(), host, host],
    )
    return (int(rows[0][0]), str(rows[0][1]), state.compression) if rows else None


def _source_at(store: Store, path: str) -> int:
    rows = store.fetchall("SELECT source_id FROM sources WHERE path = ? ORDER BY source_id LIMIT 1", [path])
    return int(rows[0][0])


def _moved_here(
    store: Store,
    inp: InputFile,
    sid: int,
    twin: int,
    twin_path: str,
    compression: str | None,
    fmt: str,
    started: float,
) -> FileResult:
    """The file at stored source ``sid``'s path holds stored source ``twin``'s content: ``sid``
    is kept as rotated away, and ``twin`` takes this path when its own was rotated away."""
    with store.transaction():
        kept = rotated_name(store, inp.key)
        notes = [
            f"same content as {twin_path}, already ingested (log rotation): the rows of the file before "
            f"under this name are kept, as {inp.display + kept[len(inp.key) :]!r}"
        ]
        store.execute("UPDATE sources SET path = ? WHERE source_id = ?", [kept, sid])
        if is_rotated(twin_path) and twin != sid:
            store.execute(
                "UPDATE sources SET path = ?, file_size = ?, file_mtime = ?, file_id = ?, compression = ? "
                "WHERE source_id = ?",
                [inp.key, inp.size, inp.mtime, inp.file_id, compression, twin],
            )
            notes.append(f"its rows are listed under this name now (were {twin_path!r})")
    return FileResult(inp.display, "duplicate", fmt, notes=notes, seconds=time.monotonic() - started)


def _duplicate(display: str, fmt: str, twin: str, started: float) -> FileResult:
    return FileResult(
        display,
        "duplicate",
        fmt,
        notes=[f"same content as {twin}, already ingested"],
        seconds=time.monotonic() - started,
    )


def _zone_dependent(store: Store, source_id: int) -> bool:
    """Whether a source stored times read from zone-less local stamps (``zone_dependent.sql``)."""
    from .query import run_named_dicts

    rows = run_named_dicts(store, "zone_dependent", {"source_id": source_id})
    return bool(rows and rows[0]["zoned"])


#: how far a file's last line may be past its modification time before its times are doubted
AHEAD_OF_MTIME_S = 600.0


def _ahead_of_mtime(
    last: datetime | None, mtime: datetime | None, zone: tzinfo, *, given: bool = False
) -> str | None:
    """A file of zone-less stamps whose last line is dated after the file was last written
    cannot be right: its stamps were read in the wrong zone (a host east of the zone used), a
    year-less file got the wrong year — or, the zone named (``given``), its mtime was set back.
    Said in the file's notes (the report's data coverage shows them).

    >>> from datetime import UTC, datetime
    >>> _ahead_of_mtime(datetime(2025, 10, 26, 2, 40, tzinfo=UTC), datetime(2025, 10, 26, 0, 45, tzinfo=UTC), UTC)
    "its last line is 1 h 55 min after the file's modification time: its times cannot be right — zone-less stamps read in UTC while the host's zone is another (pass --tz with the host's zone), or a wrong --year"
    >>> _ahead_of_mtime(datetime(2025, 10, 26, 0, 44, tzinfo=UTC), datetime(2025, 10, 26, 0, 45, tzinfo=UTC), UTC) is None
    True
    """
    if last is None or mtime is None:
        return None
    ahead = (last - mtime).total_seconds()
    if ahead <= AHEAD_OF_MTIME_S:
        return None
    days, rest = divmod(int(ahead), 86400)
    hours, rest = divmod(rest, 3600)
    span = " ".join(f"{v} {u}" for v, u in ((days, "d"), (hours, "h"), (rest // 60, "min")) if v)
    if given:
        return (
            f"its last line is {span} after the file's modification time: its times or that time cannot "
            f"be right — a wrong --tz ({zone_name(zone)}) or --year, or a modification time set back"
        )
    return (
        f"its last line is {span} after the file's modification time: its times cannot be right — "
        f"zone-less stamps read in {zone_name(zone)} while the host's zone is another (pass --tz with "
        "the host's zone), or a wrong --year"
    )


def _same_mtime(a: datetime | None, b: datetime | None) -> bool:
    if a is None or b is None:
        return False
    return abs((a - b).total_seconds()) < 1e-6


@dataclass
class _Plan:
    """How a file is read this time: from scratch, appended to, or replacing its stored rows."""

    mode: str = "ingested"  # ingested, appended, replaced
    reuse_id: int | None = None  # the stored source read again
    rotated: int | None = None  # the stored source of the file this one took the place of
    rewritten: bool = False  # replaced for new content in the same file (not read again as it was)
    skip_bytes: int = 0
    first_line: int = 1


def _plan_stored(
    store: Store, inp: InputFile, parser: Parser, options: IngestOptions, binary: bool, started: float
) -> _Plan | FileResult:
    """What to do with a file the store knows by its path: nothing (unchanged), read it again
    (another format, host, zone or year; rewritten), read what it grew by, keep the old rows of a
    rotated file — or a result already (unchanged, moved here by a rotation)."""
    plan = _Plan()
    existing, legacy = _stored(store, inp) if inp.path is not None else (None, False)
    if existing is None:
        return plan
    sid, sha, old_bytes, old_lines, old_size, old_mtime, old_id = existing
    reformat = (
        _other_format(store, sid, _forced(inp, options))
        or _other_host(store, sid, options.host)
        or _other_zone(store, sid, options)
        or _other_year(store, sid, options)
    )
    if old_size == inp.size and _same_mtime(old_mtime, inp.mtime) and not reformat:
        return FileResult(inp.display, "unchanged", parser.name, sid, seconds=time.monotonic() - started)
    if reformat and not legacy:
        plan.mode, plan.reuse_id = "replaced", sid
    elif not binary and parser.appendable and _grew_from(inp, sha, old_bytes, options):
        plan.mode, plan.reuse_id = "appended", sid
        plan.skip_bytes, plan.first_line = old_bytes, old_lines + 1
    elif not legacy and old_id is not None and inp.file_id is not None and old_id != inp.file_id:
        # another file under the old name (the old one rotated away): its rows stay
        plan.rotated = sid
    elif not legacy and (moved := _rotated_into(store, inp, options, sid)) is not None:
        # rotation into a name the store knows (logrotate's app.log.1 → app.log.2.gz, the old
        # .2.gz deleted and its inode reused): that content is stored already, and the file this
        # name held before is gone — its rows stay, as at a new file under a name
        return _moved_here(store, inp, sid, *moved, parser.name, started)
    elif not legacy:
        plan.mode, plan.reuse_id, plan.rewritten = "replaced", sid, True
    # a legacy row that is neither: perhaps another file of that name; this one is new
    return plan


def _plan_file(
    store: Store, inp: InputFile, parser: Parser, options: IngestOptions, binary: bool, started: float
) -> _Plan | FileResult:
    """:func:`_plan_stored`, then a file whose content the store holds under another path: a
    duplicate, known by its hash before a line is parsed."""
    plan = _plan_stored(store, inp, parser, options, binary, started)
    if isinstance(plan, FileResult) or plan.reuse_id is not None or binary:
        return plan
    twin = _same_content(store, inp, _given_host(inp, options))
    if twin is None:
        return plan
    if plan.rotated is not None:
        # a rotated file under a name the store knows for the file before it
        return _moved_here(
            store, inp, plan.rotated, _source_at(store, twin), twin, None, parser.name, started
        )
    return _duplicate(inp.display, parser.name, twin, started)


_NEW_SOURCE = (
    "INSERT INTO sources (source_id, path, format, sha256, bytes, lines, records, "
    "parse_issues, parsed_lines, ignored_lines, status, resume_line, ingested_at) "
    "VALUES (?, ?, ?, '', 0, 0, 0, 0, 0, 0, 'loading', 1, ?)"
)


def _claim(store: Store, inp: InputFile, fmt: str, plan: _Plan, result: FileResult) -> int:
    """Claim the file's source: a row with status 'loading' (removed again if the load does not
    finish). Returns its id."""
    from .store.recovery import discard_source

    with store.transaction():
        if plan.rotated is not None:
            kept = rotated_name(store, inp.key)
            store.execute("UPDATE sources SET path = ? WHERE source_id = ?", [kept, plan.rotated])
            result.notes.append(
                f"a new file under this name (log rotation): the rows of the one before are kept, "
                f"as {inp.display + kept[len(inp.key) :]!r}"
            )
        if plan.reuse_id is None:
            row = store.con.execute("SELECT nextval('source_id_seq')").fetchone()
            assert row is not None
            source_id = int(row[0])
            store.execute(_NEW_SOURCE, [source_id, inp.key, fmt, datetime.now(UTC)])
            return source_id
        source_id = plan.reuse_id
        if plan.mode != "replaced":
            store.execute(
                "UPDATE sources SET status = 'loading', resume_line = ?, path = ? WHERE source_id = ?",
                [plan.first_line, inp.key, source_id],
            )
            return source_id
        old = store.fetchall(
            "SELECT lines, records, first_ts, last_ts FROM sources WHERE source_id = ?", [source_id]
        )
        if plan.rewritten and old and old[0][1]:
            n_lines, n_records, first, last = old[0]
            span = f", {first:%Y-%m-%d %H:%M}–{last:%Y-%m-%d %H:%M} UTC" if first and last else ""
            result.notes.append(
                f"its {n_records} earlier records ({n_lines} lines{span}) were removed: the file "
                "was rewritten in place (copytruncate, a new dump under the old name); ingest "
                "the copy, if one was kept, to have them again"
            )
        discard_source(store, source_id, None)
        store.execute(_NEW_SOURCE, [source_id, inp.key, fmt, datetime.now(UTC)])
        return source_id


def _resume(store: Store, source_id: int, ctx: ParseContext, writer: Any) -> int:
    """An appended file's counts so far, in the context and the writer; returns its records."""
    prev = store.fetchall(
        "SELECT parsed_lines, ignored_lines, records, parse_issues, first_ts, last_ts "
        "FROM sources WHERE source_id = ?",
        [source_id],
    )[0]
    ctx.parsed_lines, ctx.ignored_lines = int(prev[0]), int(prev[1])
    writer.records, writer.issue_count = int(prev[2]), int(prev[3])
    # the span so far: the appended lines widen it
    writer.first_ts, writer.last_ts = prev[4], prev[5]
    writer.unparsed_lines = int(
        store.fetchall("SELECT count(*) FROM parse_issues WHERE source_id = ? AND unparsed", [source_id])[0][
            0
        ]
    )
    ctx.options["resume"] = "1"
    return int(writer.records)


def _parse_bytes(
    parser: BytesParser, blocks: Iterator[bytes], ctx: ParseContext, writer: Any, read: _Reading
) -> int:
    """Feed a bytes parser; returns the lines it was given."""
    counted = 0
    last_byte = b"\n"

    def counting(src: Iterator[bytes]) -> Iterator[bytes]:
        nonlocal counted, last_byte
        first = read.first_line == 1
        for block in src:
            counted += block.count(b"\n")
            last_byte = block[-1:]
            read.tick()
            if first:
                block, first = without_bom(block), False
            yield block

    writer.add_all(parser.parse_bytes(counting(blocks), ctx))
    return counted + (1 if last_byte not in (b"\n", b"") else 0)


def _parse_lines(
    parser: Parser, blocks: Iterator[bytes], ctx: ParseContext, writer: Any, read: _Reading
) -> int:
    """Feed a line parser (an overlong line is a counted parse issue); returns the lines."""
    lines = 0

    def chunks() -> Iterator[LineChunk]:
        nonlocal lines
        for item in iter_lines(
            blocks, read.first_line, entries=parser.entry_cut, offsets=parser.line_offsets
        ):
            if isinstance(item, OverlongLine):
                lines += 1
                writer.add_issue(
                    ctx.issue(item.line_no, f"line too long ({item.size} bytes); skipped", item.head)
                )
                continue
            lines += len(item)
            read.tick()
            yield item

    writer.add_all(parser.parse(chunks(), ctx))
    return lines


@dataclass
class _Reading:
    """A file being read: where it starts, and the progress callback."""

    inp: InputFile
    state: StreamState
    first_line: int
    progress: Callable[[str, int, int | None], None] | None

    def tick(self) -> None:
        if self.progress:
            self.progress(self.inp.display, self.state.raw_bytes, self.inp.size)


def _account(
    ctx: ParseContext, writer: Any, lines: int, inp: InputFile, fmt: str, options: IngestOptions
) -> None:
    """Every line parsed, ignored or unparsed (a mismatch is a bug: noted, or raised with
    --strict); a forced format that found nothing is said."""
    if lines and not writer.records and _forced(inp, options) is not None:
        ctx.note(
            f"the forced format {fmt} found nothing in {lines} lines: if it is the wrong one, "
            "ingest the file again with the right --format (it replaces these rows)"
        )
    unparsed = writer.unparsed_lines
    if ctx.parsed_lines + ctx.ignored_lines + unparsed != lines:
        msg = (
            f"line accounting mismatch in {fmt}: {lines} lines but {ctx.parsed_lines} parsed "
            f"+ {ctx.ignored_lines} ignored + {unparsed} unparsed"
        )
        if options.strict:
            raise AssertionError(msg)
        ctx.note(msg)


def _complete(
    store: Store, source_id: int, inp: InputFile, ctx: ParseContext, writer: Any, done: _Done
) -> None:
    """Mark the source complete with its counts, span and notes (inside the load's transaction)."""
    ts_range = _source_span(store, source_id, writer)
    zoned = _zone_dependent(store, source_id)
    ahead = _ahead_of_mtime(ts_range[1], inp.mtime, ctx.zone, given=ctx.zone_given) if zoned else None
    if ahead:
        ctx.note(ahead)
    if not ctx.zone_given and zoned:
        ctx.note(f"{ZONE_ASSUMED} {zone_name(ctx.zone)}, this machine's zone (no --tz given)")
    store.execute(
        "UPDATE sources SET sha256 = ?, bytes = ?, lines = ?, records = ?, parse_issues = ?, "
        "parsed_lines = ?, ignored_lines = ?, compression = ?, host = ?, tz = ?, "
        "file_size = ?, file_mtime = ?, first_ts = ?, last_ts = ?, notes = ?, "
        "format = ?, status = 'complete', resume_line = NULL, ingested_at = ?, file_id = ? "
        "WHERE source_id = ?",
        [
            done.sha,
            done.bytes,
            done.lines,
            writer.records,
            writer.issue_count,
            ctx.parsed_lines,
            ctx.ignored_lines,
            done.compression,
            ctx.host,
            getattr(ctx.zone, "key", str(ctx.zone)),
            inp.size,
            inp.mtime,
            ts_range[0],
            ts_range[1],
            "; ".join(ctx.notes) or None,
            done.fmt,
            datetime.now(UTC),
            inp.file_id,
            source_id,
        ],
    )


@dataclass
class _Done:
    sha: str
    bytes: int
    lines: int
    compression: str | None
    fmt: str


def ingest_file(
    store: Store,
    inp: InputFile,
    parser: Parser,
    options: IngestOptions,
    planned: _Planned | None = None,
) -> FileResult:
    started = time.monotonic()
    head = planned.head if planned else read_head(inp, max_bytes=options.max_bytes)
    binary = planned.binary_journal if planned else head.data.startswith(JOURNAL_MAGIC)
    fmt = parser.name
    plan = _plan_file(store, inp, parser, options, binary, started)
    if isinstance(plan, FileResult):
        return plan

    from .store.loader import SourceWriter  # pyarrow: only when there is work

    ctx = _context(store, inp, head, options)
    state = StreamState()
    result = FileResult(inp.display, plan.mode, fmt)
    source_id = _claim(store, inp, fmt, plan, result)
    writer: Any = None
    store.con.execute("BEGIN TRANSACTION")
    try:
        ctx.source_id = source_id
        # a second thread writing (bulk rows as Parquet parts) while the parser goes on pays off for
        # a large file; for a small one its start, hand-overs and tiny parts are most of the cost
        big = inp.size is None or inp.size >= BACKGROUND_BYTES
        if big:
            keep_freed_memory()
        writer = SourceWriter(store, source_id, checkpoint=True, background=big, parts=big)
        before_records = _resume(store, source_id, ctx, writer) if plan.mode == "appended" else 0
        read = _Reading(inp, state, plan.first_line, options.progress)
        if binary:
            assert inp.path is not None
            blocks: Iterator[bytes] = _hash_and_export(inp, state, ctx)
        else:
            blocks = iter_blocks(
                inp, state, skip=plan.skip_bytes, max_bytes=options.max_bytes, max_ratio=options.max_ratio
            )
        if isinstance(parser, BytesParser):
            lines = _parse_bytes(parser, blocks, ctx, writer, read)
        else:
            lines = _parse_lines(parser, blocks, ctx, writer, read)
        lines += plan.first_line - 1
        writer.finish()
        if state.error is not None:
            ctx.note(str(state.error))
        _account(ctx, writer, lines, inp, fmt, options)
        sha = state.sha256.hexdigest()
        if plan.mode == "ingested" and (dup := _twin_after(store, source_id, sha, ctx.host)) is not None:
            store.con.execute("COMMIT")
            if plan.rotated is not None and is_rotated(dup):
                # rotated under a name the store knew (whose rows were kept, as rotated away)
                return _moved_here(
                    store, inp, plan.rotated, _source_at(store, dup), dup, state.compression, fmt, started
                )
            return _duplicate(inp.display, fmt, dup, started)
        size = state.bytes + plan.skip_bytes if not binary else state.raw_bytes
        compression = "journalctl" if binary else state.compression
        _complete(store, source_id, inp, ctx, writer, _Done(sha, size, lines, compression, fmt))
        store.con.execute("COMMIT")
    except BaseException as exc:
        return _failed(store, inp, parser, options, planned, plan, source_id, writer, exc, started)
    result.source_id = source_id
    result.lines = lines
    result.parsed = ctx.parsed_lines
    result.ignored = ctx.ignored_lines
    result.records = writer.records
    result.parse_issues = writer.issue_count
    result.bytes = state.bytes if not binary else state.raw_bytes
    result.notes += ctx.notes
    result.per_table = dict(writer.per_table)
    if plan.mode == "appended":
        result.new_lines = lines - (plan.first_line - 1)
        result.new_records = writer.records - before_records
    result.seconds = time.monotonic() - started
    if state.error is not None:
        result.status = "error"
        result.error = str(state.error)
    return result


def _twin_after(store: Store, source_id: int, sha: str, host: str | None) -> str | None:
    """A complete source of the same content (and host) as the one just read, whose rows are
    then discarded: the path it is stored under."""
    from .store.recovery import discard_source

    dup = store.fetchall(
        "SELECT path FROM sources WHERE sha256 = ? AND source_id <> ? AND status = 'complete' "
        "AND (?::VARCHAR IS NULL OR host IS NULL OR host = ?) LIMIT 1",
        [sha, source_id, host, host],
    )
    if not dup:
        return None
    discard_source(store, source_id, None)
    return str(dup[0][0])


def _failed(
    store: Store,
    inp: InputFile,
    parser: Parser,
    options: IngestOptions,
    planned: _Planned | None,
    plan: _Plan,
    source_id: int,
    writer: Any,
    exc: BaseException,
    started: float,
) -> FileResult:
    """A load that failed: its rows undone (an appended file keeps what it had); an error of
    postmortem's, an interrupt or --strict raise; a broken numba cache is worked around;
    anything else is the file's error, with the trace for --debug."""
    from .store.recovery import discard_source

    if writer is not None:
        writer.abandon()
    _rollback(store)
    if writer is not None:
        writer.restore()
    with store.transaction():
        discard_source(store, source_id, plan.first_line if plan.mode == "appended" else None)
    if isinstance(exc, PostmortemError) or not isinstance(exc, Exception) or options.strict:
        raise exc
    if _interrupt_inside(exc):
        # Ctrl-C arrived inside a compiled kernel or a C call, which reported it as its own
        # error (numba: "SystemError: … returned a result with an exception set"): an
        # interrupt, not a parser bug
        raise KeyboardInterrupt from exc
    jit = sys.modules.get("postmortem.parsers.jit")
    if jit is not None and not jit.cache_off and jit.cache_broke(exc):
        jit.without_cache()
        again = ingest_file(store, inp, parser, options, planned)
        again.notes.append(
            f"numba's cache of compiled parsers is unusable ({type(exc).__name__}: "
            f"{str(exc)[:120]}): compiled without it — free space where it lives, or set "
            "NUMBA_CACHE_DIR to a writable directory"
        )
        return again
    return FileResult(
        inp.display,
        "error",
        parser.name,
        error=f"internal error while parsing ({type(exc).__name__}: {exc}); "
        "please report it with the file (rerun with --debug for the traceback)",
        seconds=time.monotonic() - started,
        trace="".join(traceback.format_exception(exc)),
    )


def _interrupt_inside(exc: BaseException) -> bool:
    """Whether a KeyboardInterrupt is chained into ``exc`` (as its cause or context)."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        if isinstance(cur, KeyboardInterrupt):
            return True
        seen.add(id(cur))
        cur = cur.__cause__ or cur.__context__
    return False


def _rollback(store: Store) -> None:
    """Roll a failed load back (a failed COMMIT has ended its transaction already)."""
    import duckdb

    try:
        store.con.execute("ROLLBACK")
    except duckdb.TransactionException as exc:
        if "no transaction is active" not in str(exc):
            raise


def _source_span(store: Store, source_id: int, writer: Any) -> tuple[datetime | None, datetime | None]:
    return writer.first_ts, writer.last_ts


def _hash_and_export(inp: InputFile, state: StreamState, ctx: ParseContext) -> Iterator[bytes]:
    assert inp.path is not None
    with inp.open_raw() as fh:
        while True:
            block = fh.read(1 << 22)
            if not block:
                break
            state.sha256.update(block)
            state.raw_bytes += len(block)
    for block in journalctl_export(inp.path, on_stderr=lambda e: ctx.note(f"journalctl: {e}")):
        state.bytes += len(block)
        yield block


def _grew_from(inp: InputFile, sha: str, old_bytes: int, options: IngestOptions) -> bool:
    """True when ``inp`` (uncompressed) starts with exactly the content stored before, ending
    at a line boundary, and then continues."""
    if inp.path is None or inp.size is None or inp.size <= old_bytes or old_bytes == 0:
        return False
    if compression_of(inp.first_bytes()) is not None:
        return False  # compressed files are replaced, not appended to
    h = hashlib.sha256()
    last = b""
    with inp.open_raw() as fh:
        remaining = old_bytes
        while remaining:
            block = fh.read(min(remaining, 1 << 22))
            if not block:
                return False
            h.update(block)
            last = block[-1:]
            remaining -= len(block)
    return last == b"\n" and h.hexdigest() == sha


def describe_result(r: FileResult) -> str:
    if r.status == "undetected":
        return f"{r.path}: skipped — {r.error or 'not a log format postmortem knows'}"
    if r.status in ("unchanged", "duplicate", "error") and not r.lines:
        extra = r.error or "; ".join(r.notes) or ""
        return f"{r.path}: {r.status}" + (f" — {extra}" if extra else "")
    if r.status == "appended" and r.new_lines is not None:
        return (
            f"{r.path}: appended as {r.format}: {r.new_lines} new lines, {r.new_records} new records "
            f"({r.lines} lines, {r.records} records, {r.parse_issues} parse issues, {r.ignored} ignored "
            "in all)"
        )
    return (
        f"{r.path}: {r.status} as {r.format}: {r.lines} lines, {r.records} records, "
        f"{r.parse_issues} parse issues, {r.ignored} ignored"
    )
