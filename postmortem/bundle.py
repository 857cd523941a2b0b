"""The input side of ``postmortem collect``'s bundles.

:func:`expand_bundles` turns the paths given to ``ingest``/``build`` into files, recognising
bundle directories (by their manifest) and bundle archives (a ``.tar.gz`` with a manifest,
extracted safely into a temporary directory), and gives each bundle file ingest options from
the manifest (host, boot time, time zone) — :func:`bundle_options` returns them.

Kept apart from :mod:`postmortem.collect` (the writing side) so that every ``ingest`` and
``build`` does not import the collector: this module is on the path of an unchanged
re-ingest, which is mostly start-up.
"""

from __future__ import annotations

import contextlib
import json
import lzma
import os
import tempfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import timedelta, timezone, tzinfo
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from .errors import ArchiveError, InputError, UsageError
from .io import RATIO_GRACE, InputFile, expand_paths, shown
from .timeutil import get_zone, parse_iso

if TYPE_CHECKING:
    from .ingest import FileResult, IngestOptions

BUNDLE_FORMAT = 1
MANIFEST = "manifest.json"
MAX_MEMBERS = 10_000
SCAN_MEMBERS = 256
SCAN_BYTES = 256 << 20
MAX_MANIFEST_BYTES = 16 << 20


@dataclass
class BundleFile(InputFile):
    """A file of a bundle, with the ingest options its manifest gives it."""

    options: IngestOptions | None = None


@dataclass
class ExpandedInputs:
    inputs: list[InputFile] = field(default_factory=list)
    results: list[FileResult] = field(default_factory=list)  # bundles with nothing to ingest
    #: directory entries not read at all (FIFOs, dangling symlinks): reported as skipped
    special: list[FileResult] = field(default_factory=list)


def bundle_options(inp: InputFile, options: IngestOptions) -> IngestOptions:
    """The ingest options of ``inp``: its bundle's for a bundle file, else ``options``."""
    if isinstance(inp, BundleFile) and inp.options is not None:
        return inp.options
    return options


def read_manifest(data: bytes, where: str) -> dict[str, Any] | None:
    """The manifest in ``data`` if it is a bundle manifest (else None).

    >>> read_manifest(b'{"postmortem_bundle": 1, "host": "h"}', "m")["host"]
    'h'
    >>> read_manifest(b'{"name": "some other tool"}', "m") is None
    True
    >>> read_manifest(b'{"postmortem_bundle": 9}', "m")
    Traceback (most recent call last):
    ...
    postmortem.errors.InputError: m: bundle format 9 is newer than this postmortem understands (1); upgrade postmortem
    """
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    except RecursionError:  # nesting deeper than the interpreter's stack: no manifest of ours
        raise InputError(f"{where}: the manifest is nested too deeply to be a postmortem bundle's") from None
    if not isinstance(doc, dict) or "postmortem_bundle" not in doc:
        return None
    version = doc["postmortem_bundle"]
    if not isinstance(version, int) or version < 1:
        return None
    if version > BUNDLE_FORMAT:
        raise InputError(
            f"{where}: bundle format {version} is newer than this postmortem understands "
            f"({BUNDLE_FORMAT}); upgrade postmortem"
        )
    return doc


def _manifest_file(path: Path) -> dict[str, Any] | None:
    try:
        if path.stat().st_size > MAX_MANIFEST_BYTES:
            return None
        return read_manifest(path.read_bytes(), str(path))
    except OSError:
        return None


def _entries_by_output(manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for key in ("commands", "files"):
        entries = manifest.get(key) or []
        if not isinstance(entries, list):
            raise InputError(f"manifest: '{key}' is not a list of entries")
        for e in entries:
            if isinstance(e, dict) and isinstance(e.get("output"), str):
                out[e["output"]] = e
    return out


def _zone_of(name: Any) -> tzinfo | None:
    if not isinstance(name, str) or not name:
        return None
    try:
        return get_zone(name)
    except UsageError:
        return None


def _file_options(
    manifest: dict[str, Any], entry: dict[str, Any] | None, options: IngestOptions
) -> IngestOptions:
    changes: dict[str, Any] = {}
    host = manifest.get("host")
    if options.host is None and isinstance(host, str) and host:
        changes["host"] = host
    ctx = entry.get("context") if entry else None
    ctx = ctx if isinstance(ctx, dict) else {}
    if not options.zone_from_user():
        zone = _zone_of(ctx.get("tz")) or _zone_of(manifest.get("timezone"))
        if zone is not None:
            changes.update(zone=zone, zone_given=True, zone_from_cli=False)
        elif isinstance(manifest.get("utc_offset_s"), int) and not isinstance(manifest["utc_offset_s"], bool):
            offset = manifest["utc_offset_s"]
            if not -86400 < offset < 86400:
                raise InputError(f"manifest: utc_offset_s {offset} is not a UTC offset (under a day)")
            changes.update(
                zone=timezone(timedelta(seconds=offset)),
                zone_given=False,
                zone_from_cli=False,
            )
    for key in ("boot_time", "at"):
        value = ctx.get(key)
        if getattr(options, key) is None and isinstance(value, str):
            parsed = parse_iso(value)
            if parsed is not None:
                changes[key] = parsed
    unit = ctx.get("unit")
    if options.unit is None and isinstance(unit, str) and unit:
        changes["unit"] = unit
    return replace(options, **changes)


def _bundle_inputs(
    bundle: Path,
    manifest: dict[str, Any],
    files: list[InputFile],
    options: IngestOptions,
    *,
    prefix: str | None,
    root: str | None,
) -> list[InputFile]:
    try:
        return _inputs_of(bundle, manifest, files, options, prefix=prefix, root=root)
    except InputError as exc:  # a damaged manifest: said of the bundle it came in
        raise InputError(f"{shown(prefix or str(bundle))}: {exc}") from None


def _inputs_of(
    bundle: Path,
    manifest: dict[str, Any],
    files: list[InputFile],
    options: IngestOptions,
    *,
    prefix: str | None,
    root: str | None,
) -> list[InputFile]:
    by_output = _entries_by_output(manifest)
    out: list[InputFile] = []
    for inp in files:
        assert inp.path is not None
        rel = inp.path.relative_to(bundle).as_posix()
        if rel == MANIFEST:
            continue
        entry = by_output.get(rel)
        if entry is not None and not entry.get("ingest"):
            continue
        out.append(
            BundleFile(
                display=inp.display if prefix is None else shown(f"{prefix}/{rel}"),
                path=inp.path,
                size=inp.size,
                mtime=inp.mtime,
                explicit=False,
                root=root,
                options=_file_options(manifest, entry, options),
            )
        )
    return out


def _nothing(display: str) -> FileResult:
    from .ingest import FileResult

    return FileResult(
        display,
        "undetected",
        error="bundle holds nothing to ingest (its manifest.json says what was missing)",
    )


def expand_bundles(
    paths: list[str], options: IngestOptions
) -> contextlib.AbstractContextManager[ExpandedInputs]:
    """The files under ``paths`` as ``ingest`` reads them, bundles expanded (a context:
    extracted archives live in a temporary directory until it ends)."""
    return _expanding(paths, options)


@contextlib.contextmanager
def _expanding(paths: list[str], options: IngestOptions) -> Iterator[ExpandedInputs]:
    with contextlib.ExitStack() as stack:
        expanded = ExpandedInputs()
        for raw in paths:
            _expand_one(raw, options, stack, expanded)
        yield expanded


def _expand_one(
    raw: str, options: IngestOptions, stack: contextlib.ExitStack, expanded: ExpandedInputs
) -> None:
    found = list(expand_paths([raw], options.max_bytes))
    roots: dict[Path, dict[str, Any]] = {}
    for inp in found:
        if inp.path is not None and inp.path.name == MANIFEST:
            manifest = _manifest_file(inp.path)
            if manifest is not None:
                roots[inp.path.parent] = manifest
    grouped: dict[Path, list[InputFile]] = {r: [] for r in roots}
    for kind, item in _classify(found, roots, grouped, expanded):
        if kind == "file":
            expanded.inputs.append(item)
        elif kind == "tar":
            _tar_members(item, options, stack, expanded)
        elif kind == "bundle":
            walk_root = None if item == Path(raw) else grouped[item][0].root
            got = _bundle_inputs(item, roots[item], grouped[item], options, prefix=None, root=walk_root)
            expanded.inputs += got
            if not got:
                expanded.results.append(_nothing(str(item)))
        else:
            _archive_inputs(item, options, stack, expanded)


def _classify(
    found: list[InputFile],
    roots: dict[Path, dict[str, Any]],
    grouped: dict[Path, list[InputFile]],
    expanded: ExpandedInputs,
) -> list[tuple[str, Any]]:
    """What each found input is, in order: a plain ``file``, a file of a ``bundle`` directory
    (grouped under it), a bundle ``archive``, or a ``tar`` made by hand."""
    order: list[tuple[str, Any]] = []
    for inp in found:
        if inp.special is not None:
            from .ingest import FileResult

            expanded.special.append(FileResult(inp.display, "undetected", error=inp.special))
            continue
        bundle = _bundle_root(inp.path, roots) if roots and inp.path is not None else None
        if bundle is not None:
            if not grouped[bundle]:
                order.append(("bundle", bundle))
            grouped[bundle].append(inp)
        elif inp.path is not None and inp.first_bytes(2) == b"\x1f\x8b" and _archive_manifest(inp.path):
            order.append(("archive", inp))
        elif inp.path is not None and is_tar(inp):
            order.append(("tar", inp))  # a tar made by hand: read member by member
        else:
            order.append(("file", inp))
    return order


def _archive_inputs(
    inp: InputFile, options: IngestOptions, stack: contextlib.ExitStack, expanded: ExpandedInputs
) -> None:
    """A bundle archive: extracted (bounded) into a private directory, then read as a bundle."""
    assert inp.path is not None
    tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="postmortem-bundle-")))
    bundle, manifest = extract_bundle(inp.path, tmp, max_bytes=options.max_bytes)
    files = list(expand_paths([str(bundle)]))
    got = _bundle_inputs(bundle, manifest, files, options, prefix=inp.display, root=inp.root)
    expanded.inputs += got
    if not got:
        expanded.results.append(_nothing(inp.display))


#: the first bytes of the compressions a tar is found in (gzip, xz, bzip2)
_PACKED = (b"\x1f\x8b", b"\xfd7zXZ\x00", b"BZh")


def is_tar(inp: InputFile) -> bool:
    """Whether an input is a tar archive (plain, or gzip/xz/bzip2-compressed): read as one log,
    its headers were glued to the first lines (a .tar.xz's name, modes and NULs made a kernel
    record; a ``tar czf`` of a log directory was 'SGLang' with 13,000 parse issues)."""
    head = inp.first_bytes(512 + 8)
    if len(head) >= 262 and head[257:262] == b"ustar":
        return True
    if not head.startswith(_PACKED) or inp.path is None:
        return False
    import tarfile  # here: only a compressed file is looked into

    try:
        with tarfile.open(inp.path, "r|*") as tar:
            return tar.next() is not None
    except (tarfile.TarError, EOFError, OSError, zlib.error, lzma.LZMAError):
        return False


def _tar_members(
    inp: InputFile, options: IngestOptions, stack: contextlib.ExitStack, expanded: ExpandedInputs
) -> None:
    """A tar that is not a bundle: extracted (bounded, as a bundle is) and each member read as
    a file of its own, its format detected, named ``archive/member``."""
    assert inp.path is not None
    tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="postmortem-tar-")))
    extract_tar(inp.path, tmp, max_bytes=options.max_bytes)
    members = [m for m in expand_paths([str(tmp)], options.max_bytes) if m.path is not None]
    for m in members:
        assert m.path is not None
        m.display = shown(f"{inp.display}/{m.path.relative_to(tmp).as_posix()}")
        m.explicit = False
    expanded.inputs += members
    if not members:
        expanded.results.append(_nothing(inp.display))


def _bundle_root(path: Path | None, roots: dict[Path, dict[str, Any]]) -> Path | None:
    if path is None:
        return None
    for parent in path.parents:
        if parent in roots:
            return parent
    return None


def _member_parts(name: str) -> tuple[str, ...] | None:
    """The path parts of a tar member if it is safe to create (relative, no ``..``)."""
    if not name or "\x00" in name or "\\" in name or name.startswith("/"):
        return None
    parts = tuple(p for p in PurePosixPath(name).parts if p not in ("", "."))
    if not parts or any(p == ".." for p in parts):
        return None
    return parts


def _archive_manifest(path: Path) -> tuple[dict[str, Any], tuple[str, ...]] | None:
    """(manifest, bundle prefix) when ``path`` is a gzip tar holding a bundle manifest among
    its first members; None for anything else (then it is an ordinary compressed file)."""
    import tarfile  # here: only gzip files are looked into, and every ingest imports this module

    try:
        with tarfile.open(path, "r|gz") as tar:
            for i, member in enumerate(tar):
                if i >= SCAN_MEMBERS or member.offset_data > SCAN_BYTES:
                    return None
                parts = _member_parts(member.name)
                if parts is None or parts[-1] != MANIFEST or len(parts) > 2 or not member.isreg():
                    continue
                if member.size > MAX_MANIFEST_BYTES:
                    return None
                fh = tar.extractfile(member)
                if fh is None:
                    return None
                manifest = read_manifest(fh.read(), f"{path}/{member.name}")
                if manifest is not None:
                    return manifest, parts[:-1]
    except (tarfile.TarError, EOFError, OSError, zlib.error):
        return None
    return None


#: how far a bundle archive may expand (its members' declared sizes against its own size) past
#: RATIO_GRACE: logs gzip 5–50:1; a bomb of zeros 1000:1
BUNDLE_MAX_RATIO = 200


def _check_declared_size(archive: Path, max_bytes: int) -> None:
    """Refuse a bundle before anything is written when its members' declared sizes exceed
    ``max_bytes`` or expand the archive past :data:`BUNDLE_MAX_RATIO` (the headers are read in
    one streaming pass; the data is decompressed, not written)."""
    import tarfile

    declared = 0
    packed = max(archive.stat().st_size, 1)
    try:
        with tarfile.open(archive, "r|*") as tar:
            for i, member in enumerate(tar):
                if i >= MAX_MEMBERS:
                    raise ArchiveError(f"{archive}: more than {MAX_MEMBERS} members; refusing it")
                declared += max(member.size, 0)
    except (tarfile.TarError, EOFError, OSError, zlib.error, lzma.LZMAError) as exc:
        raise ArchiveError(f"{archive}: damaged archive: {exc}") from None
    if declared > max_bytes:
        raise ArchiveError(
            f"{archive}: its members hold {declared} bytes, over --max-bytes ({max_bytes}); "
            "raise it if this bundle is genuine"
        )
    if declared > RATIO_GRACE and declared > BUNDLE_MAX_RATIO * packed:
        raise ArchiveError(
            f"{archive}: {declared} bytes packed in {packed} ({declared // packed}:1): refusing it as a "
            "decompression bomb (a bundle of logs packs 5–50:1)"
        )


def extract_bundle(archive: Path, dest: Path, *, max_bytes: int) -> tuple[Path, dict[str, Any]]:
    """Extract a bundle archive into ``dest`` safely (see :func:`extract_tar`). Returns the
    bundle directory and its manifest."""
    found = _archive_manifest(archive)
    if found is None:
        raise ArchiveError(f"{archive}: not a postmortem bundle archive (no manifest.json)")
    manifest, prefix = found
    extract_tar(archive, dest, max_bytes=max_bytes)
    bundle = dest.joinpath(*prefix) if prefix else dest
    if not (bundle / MANIFEST).is_file():
        raise ArchiveError(f"{archive}: manifest.json missing after extraction")
    return bundle, manifest


def extract_tar(archive: Path, dest: Path, *, max_bytes: int) -> None:
    """Extract a tar archive (gzip, xz, bzip2 or none) into ``dest`` safely: its declared size
    checked first (:func:`_check_declared_size`), regular files and directories only (links,
    devices and fifos refuse the archive), relative names without ``..``, at most ``max_bytes``
    in all (counted while copying) and :data:`MAX_MEMBERS` members."""
    import tarfile

    _check_declared_size(archive, max_bytes)
    total = 0
    seen: set[tuple[str, ...]] = set()
    try:
        with tarfile.open(archive, "r|*") as tar:
            for i, member in enumerate(tar):
                if i >= MAX_MEMBERS:
                    raise ArchiveError(f"{archive}: more than {MAX_MEMBERS} members; refusing it")
                if member.isdir() and not member.name.strip("./"):
                    continue  # the archive's own root ('.', './'), as `tar czf x.tgz -C dir .` writes it
                parts = _member_parts(member.name)
                if parts is None:
                    raise ArchiveError(f"{archive}: unsafe member name {member.name!r}; refusing the archive")
                if not (member.isreg() or member.isdir()):
                    raise ArchiveError(
                        f"{archive}: member {member.name!r} is a link or special file; refusing the archive"
                    )
                if parts in seen:
                    raise ArchiveError(
                        f"{archive}: member {member.name!r} appears twice; refusing the archive"
                    )
                seen.add(parts)
                target = dest.joinpath(*parts)
                if member.isdir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                src = tar.extractfile(member)
                if src is None:
                    continue
                with target.open("xb") as out:
                    while True:
                        block = src.read(1 << 20)
                        if not block:
                            break
                        total += len(block)
                        if total > max_bytes:
                            raise ArchiveError(
                                f"{archive}: extracted size exceeds --max-bytes ({max_bytes} bytes); "
                                "raise it if this bundle is genuine"
                            )
                        out.write(block)
                if member.mtime > 0:
                    os.utime(target, (member.mtime, member.mtime))
    except (tarfile.TarError, EOFError, zlib.error, lzma.LZMAError) as exc:
        raise ArchiveError(f"{archive}: truncated or corrupt archive ({exc})") from exc
    except FileExistsError as exc:
        raise ArchiveError(f"{archive}: member {exc.filename} appears twice; refusing the archive") from exc
