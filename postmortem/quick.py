"""An unchanged re-ingest answered before the command line is loaded.

``postmortem ingest FILE...`` re-run over files the store already holds unchanged (a timer every
few minutes, a ``make`` re-run) only has to print ``FILE: unchanged``; the store's file index
(:mod:`postmortem.store.fileindex`) says so without opening DuckDB. Loading the command line to
read that index (typer and click, the ingest module, its parsers' base, pathlib, dataclasses,
typing) took 70-90 ms of a 0.1 s run. This module answers the simplest such command line with
the standard library's ``os``, ``json`` and ``datetime`` alone, and says nothing — the full
command runs — whenever anything is not plainly the case:

* the command is ``ingest`` with no option before it, and its only options are ``--db`` and
  ``--tz`` (``--opt VALUE`` or ``--opt=VALUE``, each at most once, a value not blank and not
  starting with ``-``); every other word is a path, at least one;
* no ``postmortem.toml`` in the working directory (its hints, host and zone would count), a
  working directory that exists, no shell completion asked for (``_POSTMORTEM_COMPLETE``), and
  ``TZ``, when set, an IANA zone (the full command refuses any other);
* ``--tz``, when given, is an IANA zone (a bundle's fixed offset, ``UTC+02:00``, is recorded as
  a file's zone but is no zone for ``--tz``);
* every path is a regular file (a symlink to one included) named in plain printable ASCII with
  no ``.`` or empty part (what is printed and looked up is then the name as given), whose first
  bytes are not those of a compressed file or a tar, not a bundle's ``manifest.json``;
* the index is one this version wrote (its format, version and schema), for the store file as
  it is now (identity unchanged, no write-ahead log), and lists each file, with its size and
  modification time to the microsecond, as stored without damage; with ``--tz``, read in the
  zone of that exact name.

These are the tests :func:`postmortem.store.fileindex.lookup` makes, restricted to the cases
that need nothing but the index; ``tests/test_quick.py`` checks that both answer alike.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: the file index's format this module reads (``fileindex.FORMAT``; a test keeps them equal)
INDEX_FORMAT = 4
#: the options read here; each takes a value
_OPTIONS = ("--db", "--tz")
#: first bytes of what ingest opens up rather than reads as a log: gzip, xz, bzip2
_PACKED = (b"\x1f\x8b", b"\xfd7zXZ\x00", b"BZh")
_BUNDLE_MANIFEST = "manifest.json"


#: the exit status of a command whose reader stopped early (``| head``): 128 + SIGPIPE, what a
#: shell reports for a C tool cut off there
STDOUT_CLOSED = 141


def stdout_gone() -> int:
    """A reader that stopped early: stdout pointed at /dev/null (the interpreter's last flush
    has nowhere to fail), and the status to exit with."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError):
        pass
    return STDOUT_CLOSED


def unchanged_ingest(argv: list[str]) -> int | None:
    """Print ``FILE: unchanged`` for each file and return the exit status when ``argv`` (the
    arguments after the program's name) is an ingest of files the store's index vouches for;
    otherwise print nothing and return None. Output ends as the full command's does: a reader
    that stopped early (``| head``) exits 141, another write error is one ``Error:`` line, 1."""
    try:
        plan = _plan(argv)
        lines = None if plan is None else _answer(*plan)
    except (OSError, ValueError, TypeError, KeyError, AttributeError, RecursionError):
        return None  # whatever it is, the full command says it properly
    if lines is None:
        return None
    try:
        sys.stdout.write("".join(f"{name}: unchanged\n" for name in lines))
        sys.stdout.flush()
    except BrokenPipeError:
        return stdout_gone()
    except OSError as exc:  # a full disk: what the full command says of it
        where = f"{exc.filename}: " if exc.filename else ""
        sys.stderr.write(f"Error: {where}{exc.strerror or exc}\n")
        return 1
    return 0


def _plan(argv: list[str]) -> tuple[str, str | None, list[str]] | None:
    """(store path, zone named or None, paths) of a plain ``ingest`` command line."""
    if len(argv) < 2 or argv[0] != "ingest":
        return None
    given: dict[str, str] = {}
    paths: list[str] = []
    words = iter(argv[1:])
    for word in words:
        if not word.startswith("-"):
            paths.append(word)
            continue
        name, eq, value = word.partition("=")
        if name not in _OPTIONS or name in given:
            return None
        if not eq:
            value = next(words, "")
        if not value.strip() or value.startswith("-"):
            return None
        given[name] = value
    os.getcwd()  # (gone: the full command says so)
    if not paths or os.path.lexists("postmortem.toml") or "_POSTMORTEM_COMPLETE" in os.environ:
        return None
    environ_tz = os.environ.get("TZ")
    if environ_tz and not _is_zone(environ_tz.removeprefix(":")):
        return None
    zone = given.get("--tz")
    if zone is not None and not _is_zone(zone):
        return None
    db = given.get("--db") or os.environ.get("POSTMORTEM_DB") or "postmortem.duckdb"
    return db, zone, paths


def _is_zone(name: str) -> bool:
    """An IANA zone ``timeutil.get_zone`` takes as it is named (``Z``, ``utc`` are renamed)."""
    if not name or name.startswith(("/", ".")) or ".." in name or name in ("Z", "utc"):
        return False
    from zoneinfo import ZoneInfo

    ZoneInfo(name)  # (not one: ZoneInfoNotFoundError, a KeyError, or ValueError)
    return True


def _answer(db: str, zone: str | None, paths: list[str]) -> list[str] | None:
    """The paths, when the index vouches that each is stored unchanged; else None."""
    if db == ":memory:" or not all(_plain_name(p) for p in paths):
        return None
    doc = _index(db)
    if doc is None:
        return None
    files: dict[str, Any] = doc["files"]
    zones = doc.get("zones")
    damaged = doc.get("damaged")
    if not isinstance(zones, dict) or not isinstance(damaged, dict):
        return None
    for path in paths:
        key = os.path.abspath(path)
        if not (key.isascii() and key.isprintable()):
            return None
        name = key if key in files else path
        entry = files.get(name)
        if not isinstance(entry, list) or len(entry) != 3 or not isinstance(entry[0], int):
            return None
        if name in damaged or (zone is not None and zones.get(name) != zone):
            return None
        if not _same_file(path, entry[1], entry[2]):
            return None
    return paths


def _plain_name(path: str) -> bool:
    """A name printed and looked up as given: printable ASCII (nothing to escape), no empty or
    ``.`` part (``pathlib`` would write it otherwise), not a bundle's manifest."""
    if not (path.isascii() and path.isprintable()):
        return False
    parts = path.split("/")
    if path.startswith("/"):
        parts = parts[1:]
    return all(p not in ("", ".") for p in parts) and parts[-1] != _BUNDLE_MANIFEST


def _index(db: str) -> dict[str, Any] | None:
    """The store's file index, when this version wrote it for the store file as it is now."""
    import json

    from . import __version__

    with open(f"{os.path.realpath(db)}.files.json", "rb") as fh:
        doc = json.load(fh)
    if not isinstance(doc, dict) or doc.get("format") != INDEX_FORMAT or doc.get("postmortem") != __version__:
        return None
    if doc.get("schema_version") != _latest_schema() or doc.get("store") != _store_identity(db):
        return None
    if not all(isinstance(doc.get(k), dict) for k in ("files", "skipped", "skipped_under")):
        return None
    return doc


def _latest_schema() -> int:
    """The highest migration's number (``store.migrations.latest_version``, without its imports)."""
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "store", "migrations")
    numbers = [
        int(n[:3])
        for n in os.listdir(here)
        if n.endswith(".sql") and n[:3].isdigit() and n[3:4] == "_" and n[4:-4].replace("_", "a").isalnum()
    ]
    return max(numbers)


def _store_identity(db: str) -> list[int] | None:
    """The store file's identity as the index records it; None with a write-ahead log."""
    st = os.stat(db)
    if os.path.lexists(f"{db}.wal") or os.path.lexists(f"{os.path.realpath(db)}.wal"):
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def _same_file(path: str, size: object, mtime_us: object) -> bool:
    """A regular file of that size and modification time (microseconds since the epoch, as
    ingest takes it), not compressed or a tar (those are opened up, not compared here)."""
    import stat
    from datetime import UTC, datetime, timedelta

    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode) or st.st_size != size:
        return False
    when = datetime.fromtimestamp(st.st_mtime, UTC) - datetime(1970, 1, 1, tzinfo=UTC)
    if when // timedelta(microseconds=1) != mtime_us:
        return False
    with open(path, "rb") as fh:
        head = fh.read(520)
    return not head.startswith(_PACKED) and head[257:262] != b"ustar"
