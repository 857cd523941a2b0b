"""What a figure was drawn from: a digest of its inputs, recorded in the PNG it was written to.

``build`` writes every incident's figures again each time it runs, and a store that keeps a
history of incidents has many whose figures have not changed (drawing one costs 0.3-0.5 s of
matplotlib). :func:`digest` reduces a figure's inputs (dataclasses, lists, dicts, times, numbers,
text) to a SHA-256 in a canonical form that does not depend on the process (no ``hash()``, no
object identity); :mod:`postmortem.plots` adds its own code, matplotlib's version and
settings, writes the digest into the PNG as a text chunk, and keeps a PNG that already carries
the digest it would write. A value of another type makes the digest ``None``: such a figure is
always drawn. Standard library only.
"""

from __future__ import annotations

import dataclasses
import hashlib
import struct
import zlib
from datetime import date, datetime, time, timedelta, tzinfo
from decimal import Decimal
from enum import Enum
from pathlib import PurePath
from typing import Any
from zoneinfo import ZoneInfo

#: the PNG ``tEXt`` keyword the digest is stored under
KEYWORD = "postmortem-figure"

_PNG = b"\x89PNG\r\n\x1a\n"


#: types whose ``repr`` is exact and the same in every process (exactly these types: a subclass
#: may print less than it holds)
_ATOMS = frozenset({type(None), bool, int, float, str, datetime})


class Uncanonical(TypeError):
    """A value :func:`digest` has no canonical form for."""


def digest(*parts: object) -> str | None:
    """The SHA-256 (hex) of ``parts`` in canonical form, or ``None`` when one has none."""
    h = hashlib.sha256()
    try:
        _feed(h, parts)
    except (Uncanonical, RecursionError):
        return None
    return h.hexdigest()


def _put(h: Any, tag: bytes, body: str) -> None:
    # every value is written as a type tag and a length-prefixed body, so no two different
    # values write the same bytes (a list of two strings is not one string with a comma)
    b = body.encode("utf-8", "surrogatepass")
    h.update(tag + len(b).to_bytes(8, "little") + b)


def _feed(h: Any, v: object) -> None:
    if not _feed_scalar(h, v):
        _feed_compound(h, v)


def _feed_scalar(h: Any, v: object) -> bool:
    """Write ``v`` when it is a single value; ``False`` (nothing written) when it is not."""
    if v is None or isinstance(v, (bool, int, float, Decimal)):  # bool before int: True != 1
        _put(h, type(v).__name__.encode(), repr(v))
    elif isinstance(v, str):
        _put(h, b"s", v)
    elif isinstance(v, (bytes, bytearray)):
        _put(h, b"b", v.hex())
    elif isinstance(v, Enum):
        _put(h, b"e", f"{type(v).__qualname__}.{v.name}")
    elif isinstance(v, datetime):  # the instant and its offset; the zone itself below
        _put(h, b"dt", v.isoformat())
        if v.tzinfo is not None:
            _feed(h, v.tzinfo)
    elif isinstance(v, (date, time, timedelta)):
        _put(h, type(v).__name__.encode(), repr(v))
    elif isinstance(v, tzinfo):  # a zone by its name; a fixed offset by its repr (which has it)
        _put(h, b"tz", v.key if isinstance(v, ZoneInfo) and v.key else repr(v))
    elif isinstance(v, PurePath):
        _put(h, b"p", str(v))
    else:
        return False
    return True


def _feed_compound(h: Any, v: object) -> None:
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        _feed_dataclass(h, v)
    elif isinstance(v, (list, tuple)):
        tag = b"l" if isinstance(v, list) else b"t"
        if all(type(x) in _ATOMS for x in v):  # a time series' point: its repr, in C
            _put(h, tag + b"*", repr(v))
            return
        _put(h, tag, str(len(v)))
        for x in v:
            _feed(h, x)
    elif isinstance(v, dict):  # in order: the order of a dict's items can change a figure
        _put(h, b"d", str(len(v)))
        for k, x in v.items():
            _feed(h, k)
            _feed(h, x)
    elif isinstance(v, (set, frozenset)):  # no order of their own: sorted by their digests
        _put(h, b"set", str(len(v)))
        for d in sorted(digest(x) or _raise(x) for x in v):
            _put(h, b"m", d)
    else:
        _raise(v)


def _feed_dataclass(h: Any, v: Any) -> None:
    fields = [(f.name, getattr(v, f.name)) for f in dataclasses.fields(v)]
    _put(h, b"dc", f"{type(v).__module__}.{type(v).__qualname__}/{len(fields)}")
    if all(type(x) in _ATOMS for _, x in fields):
        _put(h, b"f*", repr(fields))
        return
    for name, x in fields:
        _put(h, b"f", name)
        _feed(h, x)


def _raise(v: object) -> str:
    raise Uncanonical(type(v).__name__)


def recorded(path: PurePath | str) -> str | None:
    """The digest a PNG written by :mod:`postmortem.plots` carries; ``None`` when it carries none
    or is not an intact PNG (a file cut short or damaged is drawn again): every chunk's CRC is
    checked, up to the ``IEND`` that ends the file."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    if not data.startswith(_PNG):
        return None
    found = None
    at = len(_PNG)
    while at + 12 <= len(data):
        (length,) = struct.unpack_from(">I", data, at)
        kind = data[at + 4 : at + 8]
        body = data[at + 8 : at + 8 + length]
        crc = data[at + 8 + length : at + 12 + length]
        if len(body) != length or len(crc) != 4 or zlib.crc32(kind + body) != int.from_bytes(crc, "big"):
            return None
        at += 12 + length
        if kind == b"tEXt" and found is None:
            keyword, _, text = body.partition(b"\0")
            if keyword == KEYWORD.encode("latin-1"):
                found = text.decode("latin-1")
        elif kind == b"IEND":
            return found if at == len(data) else None
    return None
