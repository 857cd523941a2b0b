"""Compiled kernels for the hot loops of the vectorised parsers.

The common line shapes of a large log (a server's statistics lines, journal prefixes) are read by small
byte-level loops compiled with numba: one pass over a block's bytes instead of dozens of
Arrow/numpy passes. The loops are plain Python (tests run them against ``int()``,
``float()``, ``datetime`` and the per-line parsers) and compiled on first use; the machine
code is cached on disk (``__pycache__`` beside the module, or numba's user cache), so only
the first run on a machine pays for compilation.

Kernels only ever *claim* lines they read exactly; everything else is left to the per-line
Python path, which stays the reference.

This module is imported only when a large block needs a kernel: small files never import
numba. Nor do large ones when the kernels are also compiled ahead of time (:mod:`.aot`, built
by ``make dev``): then a kernel called from Python runs that module's code, and numba is only
loaded for a call the module cannot take.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import numpy as np

F = TypeVar("F", bound=Callable[..., Any])

U8 = np.ndarray[Any, np.dtype[np.uint8]]
I64 = np.ndarray[Any, np.dtype[np.int64]]

#: byte positions are cast to this when they index a buffer: numba checks signed indices for
#: wraparound (a negative index counts from the end), which keeps LLVM from vectorising the
#: byte loops and costs twice the time; positions here are never negative
U = np.uint64


_KERNELS: list[Any] = []  # every kernel defined, in order (proxies, then numba dispatchers)
#: set once the on-disk cache failed: the kernels compile in memory from then on
cache_off = False
#: set once numba has made a dispatcher of every kernel (see :func:`_with_numba`)
_NUMBA: list[Any] = []


class Kernel:
    """A kernel before numba is loaded: calls go to the ahead-of-time compiled module when one
    is built for these sources (:mod:`.aot`: no numba import, no cache to load), else to the
    numba dispatcher, made for every kernel at once on the first call that needs one."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.py_func = fn
        self.target: Callable[..., Any] | None = None
        self.fast: Callable[..., Any] | None = None  # the compiled module's function
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__module__ = fn.__module__
        self.__doc__ = fn.__doc__

    def __call__(self, *args: Any) -> Any:
        target = self.target or self._resolve()
        if target is self.fast:
            from . import aot

            if not aot.accepts(self.__module__, self.__name__, args):
                # a dtype or layout the compiled signature does not take (a new caller):
                # numba compiles for it, as it always did
                aot.FALLBACKS.append(self.__name__)
                return self.dispatcher()(*args)
        return target(*args)

    def _resolve(self) -> Callable[..., Any]:
        from . import aot

        self.fast = aot.compiled(self.__module__, self.__name__)
        self.target = self.fast or self.dispatcher()
        return self.target

    def dispatcher(self) -> Any:
        """This kernel's numba dispatcher (loading numba and making every kernel's)."""
        return _with_numba()[self]


def _with_numba() -> dict[Kernel, Any]:
    """Load numba and make a dispatcher of every kernel defined so far; each module's names
    that stood for a kernel then name its dispatcher (numba compiles a kernel's calls to
    others through them). Kernels defined later are dispatchers from the start."""
    if _NUMBA:
        made: dict[Kernel, Any] = _NUMBA[0]
        return made
    import sys

    made = {}
    for i, k in enumerate(_KERNELS):
        if isinstance(k, Kernel):
            made[k] = _KERNELS[i] = _njit(k.py_func)
    for module in {k.__module__ for k in made}:
        names = vars(sys.modules[module])
        for name, value in list(names.items()):
            if isinstance(value, Kernel) and value in made:
                names[name] = made[value]
    _NUMBA.append(made)
    return made


def _njit(fn: Callable[..., Any]) -> Any:
    import numba

    njit: Any = numba.njit  # (its stubs do not know numba's private ``_nrt`` option)
    return njit(cache=not cache_off, nogil=True, boundscheck=False, **_refcounting(fn))(fn)


def _refcounting(fn: Callable[..., Any]) -> dict[str, bool]:
    """numba's options for ``fn``'s reference counting (NRT).

    With it on, every call of one kernel from another counts a reference to each array it
    passes on entry and drops it on return, each an atomic add through a function call: the
    server-log pass's ``_pairs`` made 18 such calls a line, about 30 % of the pass (perf, numba
    0.68). Only the kernels Python calls (:data:`.aot.ENTRY_POINTS`) allocate arrays, which
    needs it; the kernels they call are compiled without it. Such a kernel that allocates does
    not compile, so a test run finds it."""
    from numba.core import cpu

    from . import aot

    if (fn.__module__, fn.__name__) in aot.ENTRY_POINTS or not hasattr(cpu.CPUTargetOptions, "_nrt"):
        return {}
    return {"_nrt": False}


def kernel(fn: F) -> F:
    """A compiled kernel: ``numba.njit`` with the on-disk cache, no GIL and no bounds checks,
    or the ahead-of-time compiled code of the same source (see :class:`Kernel`; typed for mypy).

    Kernels take no default arguments: numba dispatches a call that leaves one out through
    its slow path, about 150 µs a call against 9 µs (measured), which the many small calls
    per block of a large ingest add up to seconds."""
    if getattr(fn, "__defaults__", None) or getattr(fn, "__kwdefaults__", None):
        raise TypeError(f"kernel {fn.__name__} must not have default arguments")
    made: Any = _njit(fn) if _NUMBA else Kernel(fn)
    _KERNELS.append(made)
    return cast(F, made)


def cache_broke(exc: BaseException) -> bool:
    """Whether ``exc`` came out of numba's on-disk cache — a full or read-only disk, a damaged
    index file — rather than out of a kernel (which does no I/O)."""
    tb = exc.__traceback__
    while tb is not None:
        where = tb.tb_frame.f_code.co_filename.replace("\\", "/")
        if "/numba/" in where and ("caching" in where or "serialize" in where):
            return True
        tb = tb.tb_next
    return False


def without_cache() -> None:
    """Compile every kernel in memory from now on (this process): the cache is an optimisation,
    and a full disk is often the very incident being looked into."""
    from numba.core.caching import NullCache

    global cache_off  # one switch for the process
    cache_off = True
    for compiled in _KERNELS:
        if isinstance(compiled, Kernel):
            continue  # no dispatcher yet: it will be made without the cache
        compiled._cache = NullCache()
        # a failed compile is remembered and raised again for the same types: forget it
        getattr(getattr(compiled, "_compiler", None), "_failed_cache", {}).clear()


@kernel
def days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm)."""
    y -= 1 if m <= 2 else 0
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    mp = m - 3 if m > 2 else m + 9
    doy = (153 * mp + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


@kernel
def valid_date(y: int, m: int, d: int) -> bool:
    """What ``datetime.date`` accepts: year 1–9999, a real month and day."""
    if y < 1 or y > 9999 or m < 1 or m > 12 or d < 1:
        return False
    if m == 2:
        leap = (y % 4 == 0 and y % 100 != 0) or y % 400 == 0
        return d <= (29 if leap else 28)
    if m == 4 or m == 6 or m == 9 or m == 11:
        return d <= 30
    return d <= 31


@kernel
def digits(buf: U8, pos: int, count: int) -> int:
    """The ASCII digits ``buf[pos:pos+count]`` as a number, or -1 if any is not a digit."""
    v = 0
    for k in range(count):
        c = buf[U(pos + k)]
        if c < 48 or c > 57:
            return -1
        v = v * 10 + (c - 48)
    return v


@kernel
def word_at(buf: U8, pos: int, end: int, word: U8) -> bool:
    """Whether the bytes ``word`` stand at ``pos`` (and end by ``end``)."""
    n = len(word)
    if end - pos < n:
        return False
    for k in range(n):  # noqa: SIM110 - compiled: a plain loop
        if buf[U(pos + k)] != word[U(k)]:
            return False
    return True


@kernel
def gather_spans(buf: U8, starts: I64, ends: I64, cut_at: int, cut_len: int) -> tuple[I64, U8]:
    """The byte spans ``buf[starts[i]:ends[i]]`` as one contiguous buffer with Arrow
    ``large_string`` offsets; with ``cut_at >= 0`` each span leaves out its ``cut_len`` bytes
    from ``cut_at`` on (a stamp's fraction)."""
    n = len(starts)
    offsets = np.empty(n + 1, dtype=np.int64)
    total = 0
    offsets[0] = 0
    cut = cut_len if cut_at >= 0 else 0
    for i in range(n):
        size = ends[i] - starts[i] - cut
        if size < 0:
            size = 0
        total += size
        offsets[i + 1] = total
    out = np.empty(total, dtype=np.uint8)
    for i in range(n):
        o = offsets[i]
        s = starts[i]
        size = offsets[i + 1] - o
        if cut and size:
            for k in range(cut_at):
                out[U(o + k)] = buf[U(s + k)]
            for k in range(cut_at, size):
                out[U(o + k)] = buf[U(s + cut + k)]
        else:
            for k in range(size):
                out[U(o + k)] = buf[U(s + k)]
    return offsets, out


@kernel
def wall_clock(buf: U8, s: int, sep: int) -> tuple[bool, bool, int]:
    """``YYYY-MM-DD?HH:MM:SS`` at ``s``, ``?`` being ``sep`` (``T`` or a space): whether its
    digits and separators are there, whether it is a date and time ``datetime`` takes (year
    1–9999, a real day, hour < 24, no leap second), and its seconds since 1970 read as UTC."""
    if (
        buf[U(s + 4)] != 45
        or buf[U(s + 7)] != 45
        or buf[U(s + 10)] != sep
        or buf[U(s + 13)] != 58
        or buf[U(s + 16)] != 58
    ):
        return False, False, 0
    y = digits(buf, s, 4)
    mo = digits(buf, s + 5, 2)
    d = digits(buf, s + 8, 2)
    hh = digits(buf, s + 11, 2)
    mi = digits(buf, s + 14, 2)
    ss = digits(buf, s + 17, 2)
    if y < 0 or mo < 0 or d < 0 or hh < 0 or mi < 0 or ss < 0:
        return False, False, 0
    if not valid_date(y, mo, d) or hh > 23 or mi > 59 or ss > 59:
        return True, False, 0
    return True, True, days_from_civil(y, mo, d) * 86400 + hh * 3600 + mi * 60 + ss


@kernel
def newline_offsets(buf: U8, out: I64) -> int:
    """The offsets of ``buf``'s newlines into ``out``, in order; returns how many, or -1 when
    ``out`` is too small for them all (its contents are then unspecified).

    Eight bytes at a time: a word with no newline byte (the test of a zero byte in ``word ^
    0x0A…``, exact for the first zero byte and free of false negatives) is skipped whole. Over a
    4 MB block of journal lines: 0.46 ms, against 1.35 ms for numpy's compare, count and
    ``flatnonzero``."""
    n = len(buf)
    whole = n - n % 8
    words = buf[:whole].view(np.uint64)
    lows = np.uint64(0x0101010101010101)
    highs = np.uint64(0x8080808080808080)
    newlines = np.uint64(0x0A0A0A0A0A0A0A0A)
    cap = len(out)
    k = 0
    for j in range(len(words)):
        v = words[U(j)] ^ newlines
        if (v - lows) & ~v & highs:
            base = j * 8
            for b in range(8):
                if buf[U(base + b)] == 10:
                    if k == cap:
                        return -1
                    out[U(k)] = base + b
                    k += 1
    for i in range(whole, n):
        if buf[U(i)] == 10:
            if k == cap:
                return -1
            out[U(k)] = i
            k += 1
    return k


def spans_to_arrow(buf: U8, starts: I64, ends: I64) -> Any:
    """The spans as an Arrow ``string`` array (the caller guarantees UTF-8 spans)."""

    offsets, data = gather_spans(buf, np.ascontiguousarray(starts), np.ascontiguousarray(ends), -1, 0)
    return strings(offsets, data)


def strings(offsets: I64, data: U8) -> Any:
    """An Arrow ``string`` array over 64-bit offsets and bytes: the offsets narrowed by numpy
    (24,000 of them: 0.017 ms, against 0.18 ms for Arrow's cast from ``large_string``, which
    is still what checks a total of 2 GiB or more, an error)."""
    import pyarrow as pa

    if len(data) >= 1 << 31:
        return large_strings(offsets, data).cast(pa.string())
    return pa.StringArray.from_buffers(len(offsets) - 1, _buffer(offsets.astype(np.int32)), _buffer(data))


def large_strings(offsets: I64, data: U8) -> Any:
    """An Arrow ``large_string`` array over numpy offsets and bytes (no copy)."""
    import pyarrow as pa

    return pa.LargeStringArray.from_buffers(len(offsets) - 1, _buffer(offsets), _buffer(data))


def _buffer(values: Any) -> Any:
    """A numpy array as an Arrow buffer (no copy; the buffer keeps the array alive)."""
    import pyarrow as pa

    return pa.py_buffer(values)


def string_buffers(arr: Any) -> tuple[U8, I64, I64]:
    """The bytes of an Arrow ``string`` / ``large_string`` array (zero-copy) with the start and
    end offset of each value (nulls: empty spans)."""
    import pyarrow as pa

    n = len(arr)
    bufs = arr.buffers()
    wide = pa.types.is_large_string(arr.type)
    width = 8 if wide else 4
    offs = np.frombuffer(
        bufs[1], dtype=np.int64 if wide else np.int32, count=n + 1, offset=arr.offset * width
    ).astype(np.int64)
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    starts = offs[:-1].copy()
    ends = offs[1:].copy()
    if arr.null_count:
        nulls = np.asarray(arr.is_null().to_numpy(zero_copy_only=False), dtype=bool)
        ends[nulls] = starts[nulls]
    return data, starts, ends


def to_arrow(values: Any, type_: Any, valid: Any = None) -> Any:
    """A numpy column as an Arrow array of ``type_`` without a copy (and without pyarrow's
    pandas check, which imports pandas): fixed-width values, or booleans (bit-packed here);
    ``valid`` marks the non-null values (None: all)."""
    import pyarrow as pa

    n = len(values)
    bitmap = None
    if valid is not None and not valid.all():
        bitmap = _buffer(np.packbits(np.asarray(valid, dtype=bool), bitorder="little"))
    if pa.types.is_boolean(type_):
        data = _buffer(np.packbits(np.asarray(values, dtype=bool), bitorder="little"))
    else:
        data = _buffer(np.ascontiguousarray(values))
    return pa.Array.from_buffers(type_, n, [bitmap, data], null_count=-1)
