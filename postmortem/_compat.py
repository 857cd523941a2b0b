"""Backports that let the single-file collector (``dist/postmortem-collect.pyz``) run the same
``postmortem.collect`` code on a sick host's own Python 3.8-3.10: ``datetime.UTC``,
``typing.TypeAlias``, subscriptable ``collections.abc`` classes (3.9), ``dataclass(slots=)`` and
``zip(strict=)`` (3.10), ``zoneinfo`` from the host's TZif files (3.9; the 32-bit table, 1901-2038),
and ``tomllib`` (3.11; a configuration file then needs its settings as options). The zipapp's
``__main__`` imports this first; ``postmortem`` installed normally (3.11+) never does.
Standard library only; written for Python 3.8.
"""

# mypy: ignore-errors
# ruff: noqa: UP017, UP031, UP036, DTZ001 - written for Python 3.8, where these are the only forms
import builtins
import collections.abc
import contextlib
import dataclasses
import datetime
import sys
import types
import typing

if not hasattr(datetime, "UTC"):
    datetime.UTC = datetime.timezone.utc
if not hasattr(typing, "TypeAlias"):
    typing.TypeAlias = typing.Any
if sys.version_info < (3, 9):
    for name in dir(collections.abc):
        obj = getattr(collections.abc, name)
        if isinstance(obj, type) and not hasattr(obj, "__class_getitem__"):
            with contextlib.suppress(TypeError):
                obj.__class_getitem__ = classmethod(lambda cls, item: cls)
if sys.version_info < (3, 10):
    _dc = dataclasses.dataclass

    def dataclass(cls=None, **kw):
        kw.pop("slots", None)
        kw.pop("kw_only", None)
        return _dc(cls, **kw) if cls is not None else _dc(**kw)

    dataclasses.dataclass = dataclass
    _zip = builtins.zip

    def zip(*its, strict=False):
        return _zip(*its)

    builtins.zip = zip

if sys.version_info < (3, 9) and "zoneinfo" not in sys.modules:
    import bisect
    import os
    import struct

    class ZoneInfoNotFoundError(KeyError):
        pass

    class ZoneInfo(datetime.tzinfo):
        """The zones of /usr/share/zoneinfo (TZif's 32-bit table: 1901-2038)."""

        def __init__(self, key):
            self.key = key
            if key in ("UTC", "Etc/UTC", "GMT", "Etc/GMT", "Z"):
                self._times, self._offs, self._names = [], [(0, "UTC")], None
                return
            path = os.path.join(os.environ.get("TZDIR", "/usr/share/zoneinfo"), key)
            if ".." in key.split("/") or not os.path.isfile(path):
                raise ZoneInfoNotFoundError(key)
            with open(path, "rb") as fh:
                data = fh.read()
            if data[:4] != b"TZif":
                raise ZoneInfoNotFoundError(key)
            _isut, _isstd, _leap, timecnt, typecnt, charcnt = struct.unpack(">6l", data[20:44])
            pos = 44
            times = struct.unpack(">%dl" % timecnt, data[pos : pos + 4 * timecnt])
            pos += 4 * timecnt
            idx = data[pos : pos + timecnt]
            pos += timecnt
            types = [struct.unpack(">lBB", data[pos + 6 * i : pos + 6 * i + 6]) for i in range(typecnt)]
            pos += 6 * typecnt
            chars = data[pos : pos + charcnt]

            def name(i):
                return chars[i : chars.index(b"\0", i)].decode("ascii", "replace")

            self._times = list(times)
            self._offs = [(types[j][0], name(types[j][2])) for j in idx] or [(types[0][0], name(types[0][2]))]
            self._first = (types[0][0], name(types[0][2]))

        def _at_utc(self, ts):
            if not self._times:
                return self._offs[0]
            i = bisect.bisect_right(self._times, ts) - 1
            return self._first if i < 0 else self._offs[i]

        def _local(self, dt):
            naive = dt.replace(tzinfo=None)
            local = (naive - datetime.datetime(1970, 1, 1)).total_seconds()
            off = self._at_utc(local)[0]
            return self._at_utc(local - off)

        def utcoffset(self, dt):
            return datetime.timedelta(seconds=self._local(dt)[0]) if dt is not None else None

        def dst(self, dt):
            return datetime.timedelta(0)

        def tzname(self, dt):
            return self._local(dt)[1] if dt is not None else self.key

        def fromutc(self, dt):
            ts = (dt.replace(tzinfo=None) - datetime.datetime(1970, 1, 1)).total_seconds()
            return dt + datetime.timedelta(seconds=self._at_utc(ts)[0])

        def __repr__(self):
            return "ZoneInfo(key=%r)" % self.key

    mod = types.ModuleType("zoneinfo")
    mod.ZoneInfo, mod.ZoneInfoNotFoundError = ZoneInfo, ZoneInfoNotFoundError
    mod.available_timezones = lambda: set()
    sys.modules["zoneinfo"] = mod

if sys.version_info < (3, 11) and "tomllib" not in sys.modules:
    mod = types.ModuleType("tomllib")

    class TOMLDecodeError(ValueError):
        pass

    def _refuse(*_a, **_k):
        raise TOMLDecodeError("postmortem.toml needs Python 3.11 on this host: pass its settings as options")

    mod.TOMLDecodeError, mod.load, mod.loads = TOMLDecodeError, _refuse, _refuse
    sys.modules["tomllib"] = mod
