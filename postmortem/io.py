"""Reading inputs: files, directories, stdin, compressed streams, binary journals.

Everything here streams in bounded memory. Compression is recognised by magic bytes (not the
file name). Decompression is bounded by ``max_bytes`` and a ratio guard against bombs, and a
truncated or corrupt archive raises :class:`~postmortem.errors.ArchiveError` *after* the data
before the damage has been delivered, so the caller can keep it.
"""

from __future__ import annotations

import bz2
import contextlib
import hashlib
import lzma
import os
import re
import shutil
import stat
import subprocess
import sys
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO, Protocol

from .errors import ArchiveError, InputError, ToolMissingError
from .lazyre import lazy_re
from .parsers.base import Head, LineChunk

BLOCK_SIZE = 4 << 20  # bytes read per block
MAX_LINE_BYTES = 8 << 20  # a longer physical line is recorded as a parse issue and skipped
HEAD_BYTES = 64 << 10
HEAD_LINES = 64
DEFAULT_MAX_BYTES = 20 << 30  # 20 GiB decompressed per file
DEFAULT_MAX_RATIO = 1000  # decompressed / compressed, checked after RATIO_GRACE bytes
RATIO_GRACE = 256 << 20

JOURNAL_MAGIC = b"LPKSHHRH"

_MAGIC = (
    (b"\x1f\x8b", "gzip"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"BZh", "bz2"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
)


def compression_of(first_bytes: bytes) -> str | None:
    """The compression a stream uses, from its first bytes.

    >>> compression_of(b"\\x1f\\x8b\\x08\\x00"), compression_of(b"Mar 14 09:00:00 host")
    ('gzip', None)
    """
    for magic, name in _MAGIC:
        if first_bytes.startswith(magic):
            if name == "bz2" and not (len(first_bytes) > 3 and first_bytes[3:4].isdigit()):
                continue
            return name
    return None


class _Decompressor(Protocol):
    def feed(self, data: bytes) -> Iterator[bytes]: ...
    def finish(self) -> None: ...


class _ZlibLike:
    """gzip (multi-member), xz (multi-stream) and bz2 with bounded output per call."""

    OUT = 1 << 20
    #: compressed bytes per call: a call that meets damage raises and loses what it had
    #: decompressed, so small calls keep all but the last few KB before the damage
    FEED = 16 << 10

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._new()
        self.ended = False

    def _new(self) -> None:
        if self.kind == "gzip":
            self._z: object = zlib.decompressobj(wbits=47)
        elif self.kind == "xz":
            self._z = lzma.LZMADecompressor()
        else:
            self._z = bz2.BZ2Decompressor()
        self.ended = False
        self._started = False

    def feed(self, data: bytes) -> Iterator[bytes]:
        view = memoryview(data)
        for pos in range(0, len(view), self.FEED):
            yield from self._feed(bytes(view[pos : pos + self.FEED]))

    def _feed(self, data: bytes) -> Iterator[bytes]:
        while data:
            if self.ended:
                data = data.lstrip(b"\x00") if self.kind == "gzip" else data
                if not data:
                    return
                self._new()
            self._started = True
            if self.kind == "gzip":
                z = self._z
                assert isinstance(z, type(zlib.decompressobj()))
                before = z.copy()
                try:
                    out = z.decompress(data, self.OUT)
                except zlib.error:
                    # what this call had decompressed before the damage (a checksum that does
                    # not match is met only at the stream's end, after all of its text)
                    yield from _salvage(before, data, self.OUT)
                    raise
                if out:
                    yield out
                data = z.unconsumed_tail
                if z.eof:
                    self.ended = True
                    data = z.unused_data + data
                elif not data:
                    return
            else:
                d = self._z
                assert isinstance(d, (lzma.LZMADecompressor, bz2.BZ2Decompressor))
                out = d.decompress(data, self.OUT)
                if out:
                    yield out
                data = b""
                while not d.eof and not d.needs_input:
                    out = d.decompress(b"", self.OUT)
                    if out:
                        yield out
                if d.eof:
                    self.ended = True
                    data = d.unused_data

    def finish(self) -> None:
        if self._started and not self.ended:
            raise EOFError("compressed data ended before the end-of-stream marker")


def _salvage(z: Any, data: bytes, most: int, step: int = 256) -> Iterator[bytes]:
    """The output of ``data`` through the zlib decompressor ``z`` up to where it fails, fed a
    few bytes at a time (the piece that fails, again a byte at a time)."""
    for pos in range(0, len(data), step):
        piece = data[pos : pos + step]
        before = z.copy()
        try:
            outs = []
            while piece:
                out = z.decompress(piece, most)
                if out:
                    outs.append(out)
                piece = z.unconsumed_tail
                if z.eof:
                    break
        except zlib.error:
            if step > 1:
                yield from _salvage(before, data[pos : pos + step], most, 1)
            return
        yield from outs
        if z.eof:
            return


class _Zstd:
    FEED = 2048  # compressed bytes per call keeps one call's output bounded

    def __init__(self) -> None:
        import zstandard

        self._zstd = zstandard
        self._d = zstandard.ZstdDecompressor().decompressobj()
        self.ended = False
        self._started = False

    def feed(self, data: bytes) -> Iterator[bytes]:
        view = memoryview(data)
        pos = 0
        while pos < len(view):
            piece = bytes(view[pos : pos + self.FEED])
            pos += len(piece)
            while piece:
                if self.ended:
                    self._d = self._zstd.ZstdDecompressor().decompressobj()
                    self.ended = False
                self._started = True
                out = self._d.decompress(piece)
                if out:
                    yield out
                piece = b""
                if self._d.eof:
                    self.ended = True
                    piece = self._d.unused_data

    def finish(self) -> None:
        if self._started and not self.ended:
            raise EOFError("compressed data ended before the end of the last zstd frame")


def _decompressor(kind: str) -> _Decompressor:
    return _Zstd() if kind == "zstd" else _ZlibLike(kind)


def shown(name: str) -> str:
    r"""A file name as text that can be stored and printed: a name that is not UTF-8 (Python
    carries its bytes as surrogates) has those bytes written as ``\xNN``, and so have control
    characters (a newline in a name would forge a second output line, an escape sequence would
    drive the terminal).

    >>> print(shown("fake.log\nError: x"), shown("a\x1b[2Jb"))
    fake.log\x0aError: x a\x1b[2Jb
    """
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        name = name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return escape_controls(name)


@contextlib.contextmanager
def atomic_output(path: Path, mode: int = 0o644) -> Iterator[BinaryIO]:
    """A file that becomes ``path`` whole or not at all, written without following any link.

    The data goes to a new file beside ``path`` with an unpredictable name, created with
    ``O_CREAT|O_EXCL|O_NOFOLLOW`` (``tempfile.mkstemp``), given ``mode``, and renamed over
    ``path`` when the block ends: a symlink another user planted at ``path`` is replaced, never
    written through, and a kill or a full disk leaves the previous file. On error the new file
    is removed and the error names ``path``.
    """
    import tempfile

    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            yield fh
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and not exc.filename:
            raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc
        raise


def write_atomic(path: Path, data: bytes | str, mode: int = 0o644) -> Path:
    """:func:`atomic_output` for data in hand (text is written as UTF-8)."""
    with atomic_output(path, mode) as fh:
        fh.write(data.encode("utf-8") if isinstance(data, str) else data)
    return path


#: what a terminal acts on or a reader is misled by: C0 and C1 controls, DEL, and the
#: bidirectional controls that reorder displayed text (U+202A–U+202E, U+2066–U+2069, …)
_CONTROLS = lazy_re("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escaped(m: re.Match[str]) -> str:
    code = ord(m.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_controls(text: str, keep: str = "") -> str:
    r"""``text`` with its control and bidirectional-override characters written as ``\xNN`` /
    ``\uNNNN`` (for a terminal, a table or a CSV file); those in ``keep`` stay.

    >>> print(escape_controls("a\tb\x1b[2J\u202e"), escape_controls("a\nb", keep="\n") == "a\nb")
    a\x09b\x1b[2J\u202e True
    """
    if keep:
        return _CONTROLS.sub(lambda m: m.group(0) if m.group(0) in keep else _escaped(m), text)
    return _CONTROLS.sub(_escaped, text)


@dataclass
class InputFile:
    """One input to ingest: a file on disk or standard input."""

    display: str
    path: Path | None = None  # None: stdin
    size: int | None = None
    mtime: datetime | None = None
    #: a stream's content (stdin, a pipe), read once into a temporary file that lives as long
    #: as this input: parsing and hashing read it again from there
    spool: Any = None
    data: bytes | None = None  # content given in memory by a library caller (small inputs)
    explicit: bool = True  # named on the command line (not found by walking a directory)
    #: why a directory entry is not read at all (a FIFO, a dangling symlink): reported as skipped
    special: str | None = None
    root: str | None = None  # the directory argument it was found under
    #: the file's identity on its filesystem, ``device:inode`` (None for a stream)
    file_id: str | None = None

    @classmethod
    def from_path(cls, path: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> InputFile:
        try:
            st = path.stat()
        except PermissionError as exc:
            raise InputError(f"{path}: permission denied") from exc
        except OSError as exc:
            raise InputError(f"{path}: {exc.strerror or exc}") from exc
        if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
            kind = "a character device" if stat.S_ISCHR(st.st_mode) else "a block device"
            raise InputError(
                f"{path}: {kind}, not a log file; save what it holds first (the kernel's log: "
                "dmesg > dmesg.txt, or postmortem collect)"
            )
        if not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode):
            # /dev/stdin, a pipe, <(…), a FIFO: read once, as stdin is (it cannot be read twice)
            try:
                with path.open("rb") as fh:
                    return cls.stdin(fh, display=shown(str(path)), max_bytes=max_bytes)
            except OSError as exc:
                raise InputError(f"{path}: {exc.strerror or exc}") from exc
        return cls(
            display=shown(str(path)),
            path=path,
            size=st.st_size,
            mtime=datetime.fromtimestamp(st.st_mtime, UTC),
            file_id=f"{st.st_dev}:{st.st_ino}",
        )

    @classmethod
    def stdin(
        cls, stream: BinaryIO | None = None, display: str = "<stdin>", max_bytes: int = DEFAULT_MAX_BYTES
    ) -> InputFile:
        """A stream (stdin, or a pipe named by a path) read once, block by block, into a temporary
        file: memory stays bounded whatever it holds, and more than ``max_bytes`` is refused."""
        import tempfile

        src = stream or sys.stdin.buffer
        spool = tempfile.NamedTemporaryFile(prefix="postmortem-stdin-")  # noqa: SIM115 - kept open with the input
        size = 0
        try:
            while block := src.read(1 << 20):
                size += len(block)
                if size > max_bytes:
                    raise InputError(
                        f"{display}: more than --max-bytes ({max_bytes} bytes); raise it if this stream is genuine"
                    )
                spool.write(block)
            spool.flush()
        except BaseException:
            spool.close()
            raise
        return cls(display=display, spool=spool, size=size, mtime=datetime.now(UTC))

    def open_raw(self) -> BinaryIO:
        if self.path is None:
            if self.spool is None:
                import io

                return io.BytesIO(self.data or b"")
            return open(self.spool.name, "rb")
        try:
            return self.path.open("rb")
        except PermissionError as exc:
            raise InputError(f"{self.display}: permission denied") from exc
        except IsADirectoryError as exc:
            raise InputError(f"{self.display}: is a directory") from exc
        except OSError as exc:
            raise InputError(f"{self.display}: {exc.strerror or exc}") from exc

    @property
    def key(self) -> str:
        """The path the store knows this input by: absolute, so the same relative name given
        in two directories names two files (``display`` keeps the name as the user gave it)."""
        return self.display if self.path is None else shown(os.path.abspath(self.display))

    def first_bytes(self, n: int = 8) -> bytes:
        with self.open_raw() as fh:
            return fh.read(n)


class BackgroundHash:
    """SHA-256 of a stream, computed in a second thread while the caller parses (hashlib
    releases the GIL on large buffers): :meth:`update` queues a block, :meth:`hexdigest` waits
    for the blocks queued so far. Small inputs are hashed at once.

    >>> h = BackgroundHash()
    >>> h.update(b"a" * 100_000); h.update(b"b")
    >>> h.hexdigest() == hashlib.sha256(b"a" * 100_000 + b"b").hexdigest()
    True
    """

    #: blocks smaller than this are hashed in the caller's thread
    MIN_BLOCK = 1 << 20

    def __init__(self) -> None:
        self._h = hashlib.sha256()
        self._queue: Any = None
        self._thread: Any = None

    def update(self, block: bytes) -> None:
        if len(block) < self.MIN_BLOCK and self._thread is None:
            self._h.update(block)
            return
        if self._thread is None:
            import queue
            import threading

            self._queue = queue.Queue(maxsize=4)
            self._thread = threading.Thread(target=self._run, name="postmortem-hash", daemon=True)
            self._thread.start()
        self._queue.put(block)

    def _run(self) -> None:
        while True:
            block = self._queue.get()
            if block is None:
                return
            self._h.update(block)

    def hexdigest(self) -> str:
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None
        return self._h.hexdigest()


@dataclass
class StreamState:
    """Counters of one read, filled while blocks are delivered."""

    compression: str | None = None
    raw_bytes: int = 0  # bytes read from disk (compressed size)
    bytes: int = 0  # decompressed bytes delivered
    sha256: BackgroundHash = field(default_factory=BackgroundHash)
    error: ArchiveError | None = None


def _check_bomb(inp: InputFile, produced: int, raw: int, max_bytes: int, max_ratio: float) -> None:
    """Stop a decompression past ``--max-bytes``, or past ``max_ratio`` after RATIO_GRACE."""
    if produced > max_bytes:
        raise ArchiveError(
            f"{inp.display}: decompressed size exceeds --max-bytes ({max_bytes} bytes); raise it if "
            "this file is genuine"
        )
    if produced > RATIO_GRACE and produced > max_ratio * raw:
        raise ArchiveError(
            f"{inp.display}: compression ratio above {max_ratio:g}:1 looks like a decompression bomb; "
            "refusing to continue"
        )


def iter_blocks(
    inp: InputFile,
    state: StreamState,
    *,
    skip: int = 0,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_ratio: float = DEFAULT_MAX_RATIO,
    block_size: int = BLOCK_SIZE,
    hash_skipped: bool = True,
) -> Iterator[bytes]:
    """Decompressed blocks of ``inp`` after the first ``skip`` bytes (those are hashed only).

    A damaged archive ends the iteration normally after the last good block and leaves the
    error in ``state.error`` for the caller to report once what was read is stored.
    """
    with inp.open_raw() as fh:
        head = fh.read(8)
        state.compression = compression_of(head)
        fh.seek(0)
        dec = _decompressor(state.compression) if state.compression else None
        to_skip = skip

        def deliver(block: bytes) -> Iterator[bytes]:
            nonlocal to_skip
            if to_skip:
                take = min(to_skip, len(block))
                if hash_skipped:
                    state.sha256.update(block[:take])
                to_skip -= take
                block = block[take:]
                if not block:
                    return
            state.sha256.update(block)
            state.bytes += len(block)
            yield block

        produced = 0
        try:
            while True:
                raw = fh.read(block_size if dec is None else 1 << 20)
                if not raw:
                    break
                state.raw_bytes += len(raw)
                if dec is None:
                    yield from deliver(raw)
                    continue
                for out in dec.feed(raw):
                    produced += len(out)
                    _check_bomb(inp, produced, state.raw_bytes, max_bytes, max_ratio)
                    yield from deliver(out)
            if dec is not None:
                dec.finish()
        except ArchiveError as exc:
            state.error = exc
        except (EOFError, OSError, zlib.error, lzma.LZMAError, ValueError) as exc:
            state.error = _archive_error(inp, state, exc)
        except Exception as exc:  # zstandard.ZstdError is not an OSError
            if type(exc).__name__ != "ZstdError":
                raise
            state.error = _archive_error(inp, state, exc)


DAMAGE_KEPT = "the lines before the damage were kept"
_DAMAGE = lazy_re(r"(?:truncated|corrupt) \S+ data after \d+ decompressed bytes \(.*?\); " + DAMAGE_KEPT)


def _archive_error(inp: InputFile, state: StreamState, exc: BaseException) -> ArchiveError:
    kind = state.compression or "file"
    what = "truncated" if isinstance(exc, EOFError) else "corrupt"
    why = str(exc)
    if "data check" in why or "CRC" in why or "checksum" in why.lower():
        # the checksum is checked at the end: where the damage is, it does not say
        why += " — its checksum does not match, so the text read may be damaged anywhere before this point"
    return ArchiveError(
        f"{inp.display}: {what} {kind} data after {state.bytes} decompressed bytes ({why}); {DAMAGE_KEPT}"
    )


def damage_in(notes: str | None) -> str | None:
    """The sentence of a stored source's ``notes`` that says its archive ended in damage (only
    the lines before it were read), without the file's name; None when it read to its end."""
    m = _DAMAGE.search(notes or "")
    return m.group(0) if m else None


@dataclass(frozen=True)
class OverlongLine:
    line_no: int
    size: int
    head: str


def iter_lines(
    blocks: Iterator[bytes],
    first_line_no: int = 1,
    max_line: int = MAX_LINE_BYTES,
    *,
    entries: bool = False,
    offsets: bool = True,
) -> Iterator[LineChunk | OverlongLine]:
    """Split byte blocks into :class:`LineChunk` objects at newlines.

    Invalid UTF-8 becomes U+FFFD; ``\\r\\n`` becomes ``\\n``; a final line without a newline
    counts as a line. A line longer than ``max_line`` bytes is not kept: it is reported as an
    :class:`OverlongLine` (the caller records a parse issue) and skipped in bounded memory.
    With ``entries``, a block is cut where possible before a line that is neither indented nor
    blank, and such chunks say so (``entry_end``): a parser of multi-line entries then need
    not carry a chunk's last entry into the next one (no copy of the block). ``offsets``: hand
    each chunk its newlines' offsets (see :attr:`Parser.line_offsets`).

    >>> blocks = [b"a\\n  a2\\nb\\n  b2\\n", b"  b3\\nc\\n"]
    >>> [(c.text, c.entry_end) for c in iter_lines(iter(blocks), entries=True)]
    [('a\\n  a2', True), ('b\\n  b2\\n  b3', True), ('c', False)]
    """
    reader = _LineReader(first_line_no, max_line, entries, offsets)
    first = first_line_no == 1
    for block in blocks:
        if first:
            block, first = without_bom(block), False
        yield from reader.feed(block)
    yield from reader.finish()


class _LineReader:
    """The state of :func:`iter_lines`: the next line's number, the line the last block left
    open (``buf``), and the overlong line being skipped."""

    def __init__(self, line_no: int, max_line: int, entries: bool, offsets: bool = True) -> None:
        self.line_no = line_no
        self.offsets = offsets
        self.max_line = max_line
        self.lookback = min(ENTRY_LOOKBACK, max_line // 2) if entries else 0
        self.buf = b""
        self.skipping: OverlongLine | None = None
        self.skip_size = 0
        #: where :func:`_newlines` marks a block's newlines, kept from block to block
        self.scratch: Any = None

    def feed(self, block: bytes) -> Iterator[LineChunk | OverlongLine]:
        if self.skipping is not None:
            nl = block.find(b"\n")
            if nl < 0:
                self.skip_size += len(block)
                return
            yield OverlongLine(self.skipping.line_no, self.skip_size + nl, self.skipping.head)
            self.line_no += 1
            self.skipping = None
            block = block[nl + 1 :]
        cut = block.rfind(b"\n")
        if cut < 0:
            yield from self._grow(block)
            return
        at_entry = bool(self.lookback) and _entry_cut(block, cut, self.lookback)
        if at_entry:
            cut = at_entry
        # one copy of the block's complete lines (after the line the last block left open)
        buf = self.buf
        complete = b"".join((buf, memoryview(block)[:cut])) if buf else block[:cut]
        self.buf = block[cut + 1 :]
        count, newlines, self.scratch = _newlines(complete, self.scratch, self.offsets)
        end = self.line_no + count
        for out in _chunk(complete, self.line_no, self.max_line, count, newlines):
            if at_entry and isinstance(out, LineChunk) and out.first_line_no + len(out) == end:
                out.entry_end = True
            yield out
        self.line_no = end
        self._check_open()

    def _grow(self, block: bytes) -> Iterator[LineChunk | OverlongLine]:
        """A block without a newline: the open line grows (complete lines an entry cut left
        go out first: they are no part of it)."""
        done = self.buf.rfind(b"\n")
        if done >= 0:
            lines = self.buf.count(b"\n", 0, done) + 1
            yield from _chunk(self.buf[:done], self.line_no, self.max_line, lines)
            self.line_no += lines
            self.buf = self.buf[done + 1 :]
        self.buf += block
        self._check_open()

    def _check_open(self) -> None:
        """An open line past ``max_line`` is skipped from here on."""
        if len(self.buf) > self.max_line:
            self.skipping = OverlongLine(self.line_no, 0, self.buf[:200].decode("utf-8", "replace"))
            self.skip_size = len(self.buf)
            self.buf = b""

    def finish(self) -> Iterator[LineChunk | OverlongLine]:
        if self.skipping is not None:
            yield OverlongLine(self.skipping.line_no, self.skip_size, self.skipping.head)
            return
        buf = self.buf
        if buf.endswith(b"\n"):  # complete lines left by an entry cut (never a blank one)
            buf = buf[:-1]
        if buf:
            if buf.endswith(b"\r"):
                buf = buf[:-1]
            yield from _chunk(buf, self.line_no, self.max_line)


#: how far back from a block's end :func:`iter_lines` looks for the start of an entry
ENTRY_LOOKBACK = 64 << 10


def _newlines(data: bytes, scratch: Any = None, offsets: bool = True) -> tuple[int, Any, Any]:
    """The number of lines in ``data`` (its newlines + 1), and the offsets of its newlines
    (numpy ``int64``), found once for the compiled parsers (:meth:`LineChunk.buffer`) — or
    None when they would take more memory than ``data`` itself (lines of a few bytes, such as
    blank-line padding: 8 bytes an offset), which a parser that never asks for them would hold
    for the chunk's life; the chunk then finds them itself if asked.

    ``scratch`` (returned, grown when too small): where the newlines are marked (a ``bool``
    array) or, for a block of :data:`COMPILED_NEWLINES_BYTES` or more, their offsets written
    by the compiled kernel (``int64``; 0.46 against 1.35 ms a 4 MB block). The reader keeps it
    from block to block: a new 4 MB array a block cost a page fault per 4 kB page (0.09 ->
    0.06 s over the bench's 350 MB server log). ``offsets=False``: count only.

    >>> count, at, scratch = _newlines(b"one line\\nand another\\n")
    >>> count, at.tolist(), _newlines(b"\\n\\n", scratch)[:2]
    (3, [8, 20], (3, None))
    """
    import numpy as np

    if offsets and len(data) >= COMPILED_NEWLINES_BYTES and (find := _compiled_newlines()) is not None:
        # the offsets straight from the bytes, when no more than one per 8 bytes (else: count)
        if scratch is None or scratch.dtype != np.int64 or len(scratch) < len(data) // 8:
            scratch = np.empty(len(data) // 8, dtype=np.int64)
        found = find(np.frombuffer(data, dtype=np.uint8), scratch[: len(data) // 8])
        if found >= 0:
            return found + 1, scratch[:found].copy(), scratch
        return data.count(b"\n") + 1, None, scratch
    if scratch is None or scratch.dtype != np.bool_ or len(scratch) < len(data):
        scratch = np.empty(len(data), dtype=bool)
    is_newline = scratch[: len(data)]
    np.equal(np.frombuffer(data, dtype=np.uint8), 10, out=is_newline)
    breaks = int(np.count_nonzero(is_newline))
    keep = offsets and breaks * 8 <= len(data)
    return breaks + 1, np.flatnonzero(is_newline) if keep else None, scratch


#: a block this large finds its newlines with the compiled kernel (when it is built ahead of
#: time: a smaller input, or one without the built module, never loads numba for it)
COMPILED_NEWLINES_BYTES = 1 << 20
_NEWLINES: list[Any] = []


def _compiled_newlines() -> Any:
    """:func:`~postmortem.parsers.jit.newline_offsets` as compiled ahead of time, or None."""
    if not _NEWLINES:
        from .parsers import aot

        _NEWLINES.append(aot.compiled("postmortem.parsers.jit", "newline_offsets"))
    return _NEWLINES[0]


def _entry_cut(data: bytes, cut: int, lookback: int) -> int:
    """The last newline before ``cut`` (``data``'s last) whose next line starts an entry
    (neither indented nor blank), within ``lookback`` bytes of the end (what is left after it
    waits for the next block: it stays short of an overlong line); 0 when there is none (0
    never is one: a cut there would leave an empty chunk).

    >>> _entry_cut(b"a\\nb\\n  c\\nd", 7, 99), _entry_cut(b"a\\n  b\\n", 5, 99), _entry_cut(b"a\\nb\\n", 3, 99)
    (1, 0, 1)
    >>> _entry_cut(b"a\\r\\n\\r\\n  b\\r\\n", 8, 99)
    0
    """
    stop = max(0, len(data) - lookback)
    pos = data.rfind(b"\n", stop, cut)  # the line after ``cut`` may be cut short: not it
    while pos > 0:
        # ``\r``: a CRLF file's blank line (a line that only starts with one is never cut before)
        if data[pos + 1 : pos + 2] not in (b" ", b"\t", b"\n", b"\r"):
            return pos
        pos = data.rfind(b"\n", stop, pos)
    return 0


def _chunk(
    data: bytes, line_no: int, max_line: int, count: int | None = None, newlines: Any = None
) -> Iterator[LineChunk | OverlongLine]:
    """One block of complete lines; long lines inside a block are cut out as overlong."""
    if len(data) > max_line:
        # rare: a block that may hold an overlong line. Check line by line.
        pending: list[str] = []
        first = line_no
        for raw in data.split(b"\n"):
            if len(raw) > max_line:
                if pending:
                    yield LineChunk.from_lines(first, pending)
                    pending = []
                yield OverlongLine(line_no, len(raw), raw[:200].decode("utf-8", "replace"))
                first = line_no + 1
            else:
                pending.append(_decode(raw))
            line_no += 1
        if pending:
            yield LineChunk.from_lines(first, pending)
        return
    clean, text = _clean(data)
    # (the offsets found in the bytes read hold only if cleaning changed nothing)
    yield LineChunk(line_no, text, data=clean, count=count, newlines=newlines if clean is data else None)


def _clean(data: bytes) -> tuple[bytes, str | None]:
    """``data`` as valid UTF-8 (invalid sequences become U+FFFD) with ``\\r\\n`` made ``\\n`` and
    a final ``\\r`` removed; and its text when it had to be decoded anyway (not ASCII).

    >>> _clean(b"a\\r\\nb\\xff\\r")
    (b'a\\nb\\xef\\xbf\\xbd', 'a\\nb\\ufffd')
    """
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n")
        if data.endswith(b"\r"):
            data = data[:-1]
    if data.isascii():
        return data, None
    text = data.decode("utf-8", "replace")
    if "\ufffd" in text:
        return text.encode("utf-8"), text
    return data, text


def _decode(data: bytes) -> str:
    text = data.decode("utf-8", "replace")
    if "\r" in text:
        text = text.replace("\r\n", "\n")
        if text.endswith("\r"):
            text = text[:-1]
    return text


BOM = b"\xef\xbb\xbf"


def without_bom(data: bytes) -> bytes:
    """``data`` without a UTF-8 byte-order mark in front (an editor on Windows, PowerShell's
    ``Out-File``): the first line is read as if it were not there; the file's bytes, hash and
    offsets keep it.

    >>> without_bom(b"\\xef\\xbb\\xbf__CURSOR=s=1"), without_bom(b"x")
    (b'__CURSOR=s=1', b'x')
    """
    return data[3:] if data.startswith(BOM) else data


def read_head(inp: InputFile, *, max_bytes: int = DEFAULT_MAX_BYTES) -> Head:
    """The first bytes and lines of ``inp`` (decompressed) for format detection."""
    state = StreamState()
    data = b""
    for block in iter_blocks(inp, state, max_bytes=max_bytes, block_size=HEAD_BYTES):
        data += block
        if len(data) >= HEAD_BYTES:
            break
    if not data and state.error is not None:
        raise state.error  # nothing readable before the damage (or over --max-bytes): say so
    data = without_bom(data[:HEAD_BYTES])
    if data.startswith(JOURNAL_MAGIC):
        return Head(inp.display, data, [])
    text = data.decode("utf-8", "replace")
    lines = text.split("\n")
    if len(data) >= HEAD_BYTES and len(lines) > 1:
        lines = lines[:-1]  # the last one may be cut
    lines = [ln[:-1] if ln.endswith("\r") else ln for ln in lines[:HEAD_LINES]]
    if lines and lines[-1] == "" and len(lines) > 1:
        lines = lines[:-1]
    return Head(inp.display, data, lines)


def expand_paths(paths: list[str], max_bytes: int = DEFAULT_MAX_BYTES) -> Iterator[InputFile]:
    """Files named by ``paths``: directories recursively (hidden entries and stores skipped)."""
    for raw in paths:
        if raw == "-":
            yield InputFile.stdin(max_bytes=max_bytes)
            continue
        path = Path(raw)
        if not path.exists() and not path.is_symlink():
            raise InputError(f"{raw}: no such file or directory")
        if path.is_dir():
            if not os.access(path, os.R_OK | os.X_OK):
                raise InputError(f"{raw}: permission denied")
            for sub, why in sorted(_walk(path)):
                if why is not None:
                    yield InputFile(shown(str(sub)), sub, explicit=False, root=raw, special=why)
                    continue
                try:
                    found = InputFile.from_path(sub)
                except InputError as exc:  # gone since the listing (a rotation moved it)
                    why = str(exc).removeprefix(f"{sub}: ")
                    yield InputFile(shown(str(sub)), sub, explicit=False, root=raw, special=why)
                    continue
                found.explicit = False
                found.root = raw
                yield found
        else:
            yield InputFile.from_path(path, max_bytes)


#: a store, its write-ahead log, lock and file index, figures, a bundle being written
_SKIP_SUFFIXES = (".duckdb", ".duckdb.wal", ".wal", ".lock", ".duckdb.files.json", ".png", ".tar.gz.part")


def _walk(root: Path) -> Iterator[tuple[Path, str | None]]:
    """The files under ``root``, each with None, or with why it is not read: a dangling symlink,
    a FIFO or socket or device (reading one could block or never end), a symlink to a directory
    (not followed: it may loop)."""
    unreadable: list[OSError] = []
    for dirpath, dirnames, filenames in os.walk(root, onerror=unreadable.append):
        while unreadable:  # a subdirectory os.walk could not list
            err = unreadable.pop()
            yield Path(err.filename), f"a directory that could not be read ({err.strerror or err})"
        for d in dirnames:
            if not d.startswith(".") and os.path.islink(os.path.join(dirpath, d)):
                yield Path(dirpath) / d, "a symlink to a directory, not followed (name it to read it)"
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.startswith(".") or name.endswith(_SKIP_SUFFIXES):
                continue
            full = Path(dirpath) / name
            if full.is_file():
                yield full, (None if os.access(full, os.R_OK) else "permission denied")
            elif full.is_symlink() and not full.exists():
                yield full, _broken_link(full)
            else:
                yield full, "not a regular file (a FIFO, socket or device: name it to read a pipe)"
    for err in unreadable:
        yield Path(err.filename), f"a directory that could not be read ({err.strerror or err})"


def _broken_link(path: Path) -> str:
    """Why a symlink leads nowhere: a loop, or a target that does not exist."""
    try:
        path.resolve(strict=True)
    except RuntimeError:
        return "a symlink loop"
    except OSError as exc:
        if exc.errno == 40:  # ELOOP
            return "a symlink loop"
    return "a dangling symlink"


def journalctl_export(
    path: Path, journalctl: str | None = None, on_stderr: Callable[[str], None] | None = None
) -> Iterator[bytes]:
    """Blocks of ``journalctl --file PATH -o export`` output (a binary journal rendered)."""
    exe = journalctl or shutil.which("journalctl")
    if not exe:
        raise ToolMissingError(f"{path}: is a binary journal; reading it needs journalctl (install systemd)")
    cmd = [exe, f"--file={path}", "-o", "export", "--no-pager"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    assert proc.stdout is not None
    assert proc.stderr is not None
    try:
        while True:
            block = proc.stdout.read(BLOCK_SIZE)
            if not block:
                break
            yield block
    finally:
        proc.stdout.close()
        err = proc.stderr.read().decode("utf-8", "replace").strip()
        proc.stderr.close()
        rc = proc.wait()
    if rc != 0:
        raise InputError(f"{path}: journalctl failed ({rc}): {err.splitlines()[-1] if err else ''}")
    if err and on_stderr:
        on_stderr(err)
