"""PyTorch's CUDA out-of-memory text, every generation, sizes → MiB (floats).

* sentence form (2.1+; 2.1 spells ``total capacty``): ``Tried to allocate X. GPU n has a total
  capacity of T of which F is free. [Process p has S memory in use. …][Including non-PyTorch
  memory, this process has S memory in use. ][L allowed; ]Of the allocated memory A is
  allocated by PyTorch, [with P allocated in private pools (e.g., CUDA Graphs), ]and U is
  reserved by PyTorch but unallocated.``
* parenthesised form (≤2.0): ``Tried to allocate X (GPU n; T total capacity; A already
  allocated; F free; [L allowed; ]R reserved in total by PyTorch)`` (≤1.3: ``R cached``)
* raw runtime error: ``CUDA error: out of memory`` (no sizes)

``reserved_mib`` is what PyTorch reserved in total: printed in the old form, allocated +
unallocated in the new one. HIP and XPU wordings parse the same way (``device``).
"""

from __future__ import annotations

import re
from typing import NamedTuple

from ..lazyre import lazy_re

_SZ = r"[\d.]+ (?:bytes|KiB|MiB|GiB|TiB|B|KB|MB|GB)"
_HEAD = r"(?P<dev>CUDA|HIP|XPU) out of memory\. Tried to allocate (?P<req>" + _SZ + r")"
OOM_SENTENCE_RE = lazy_re(
    _HEAD + r"\. GPU (?P<gpu>\d+) has a total capac(?:i)?ty of (?P<total>" + _SZ + r") of which "
    r"(?P<free>" + _SZ + r") is free\.(?P<tail>.*)"
)
OOM_PAREN_RE = lazy_re(
    _HEAD + r" \(GPU (?P<gpu>\d+); (?P<total>" + _SZ + r") total capacity; (?P<alloc>" + _SZ + r") "
    r"already allocated; (?P<free>" + _SZ + r") free; (?:(?P<allowed>" + _SZ + r") allowed; )?"
    r"(?:(?P<reserved>" + _SZ + r") reserved in total by PyTorch|(?P<cached>" + _SZ + r") cached)"
)
OOM_BARE_RE = lazy_re(_HEAD)
_ALLOC_RE = lazy_re(r"Of the allocated memory (?P<alloc>" + _SZ + r") is allocated by PyTorch,")
_PRIV_RE = lazy_re(r"with (?P<priv>" + _SZ + r") allocated in private pools")
_UNALLOC_RE = lazy_re(r"and (?P<unalloc>" + _SZ + r") is reserved by PyTorch but unallocated")
_SELF_RE = lazy_re(r"Including non-PyTorch memory, this process has (?P<mem>" + _SZ + r") memory in use")
_RUNTIME_RE = lazy_re(r"(?P<dev>CUDA|HIP) error: out of memory")

_UNIT_MIB = {
    "bytes": 1 / 1048576,
    "B": 1 / 1048576,
    "KiB": 1 / 1024,
    "KB": 1 / 1024,
    "MiB": 1.0,
    "MB": 1.0,
    "GiB": 1024.0,
    "GB": 1024.0,
    "TiB": 1048576.0,
}


def size_mib(text: str | None) -> float | None:
    """``'23.49 GiB'`` → 24053.76; ``'512 bytes'`` → 0.000488 (MiB, rounded to 6 places).

    >>> size_mib("23.49 GiB"), size_mib("55.38 MiB"), size_mib("1024.00 KiB"), size_mib(None)
    (24053.76, 55.38, 1.0, None)
    """
    if not text:
        return None
    num, _, unit = text.partition(" ")
    try:
        return round(float(num) * _UNIT_MIB[unit], 6)
    except (ValueError, KeyError):
        return None


class OomText(NamedTuple):
    device: str
    gpu: int | None
    tried_mib: float | None
    total_mib: float | None
    free_mib: float | None
    allocated_mib: float | None
    reserved_mib: float | None
    private_pool_mib: float | None
    process_mib: float | None


def has_oom(text: str) -> bool:
    """Cheap pre-test before :func:`parse_oom`."""
    return "out of memory" in text and ("Tried to allocate" in text or "error: out of memory" in text)


def parse_oom(text: str) -> OomText | None:
    """Sizes from a PyTorch OOM message (whitespace is collapsed first: wrapped text works).

    >>> parse_oom("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 42.00 MiB. "
    ...   "GPU 0 has a total capacity of 23.49 GiB of which 55.38 MiB is free. Including non-PyTorch "
    ...   "memory, this process has 23.43 GiB memory in use. Of the allocated memory 22.90 GiB is "
    ...   "allocated by PyTorch, and 120.50 MiB is reserved by PyTorch but unallocated.")[1:]
    (0, 42.0, 24053.76, 55.38, 23449.6, 23570.1, None, 23992.32)
    >>> parse_oom("RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 23.69 GiB "
    ...   "total capacity; 21.87 GiB already allocated; 19.06 MiB free; 22.36 GiB reserved in total by PyTorch)")[1:7]
    (0, 20.0, 24258.56, 19.06, 22394.88, 22896.64)
    >>> parse_oom("RuntimeError: CUDA error: out of memory")
    OomText(device='CUDA', gpu=None, tried_mib=None, total_mib=None, free_mib=None, allocated_mib=None, reserved_mib=None, private_pool_mib=None, process_mib=None)
    """
    if "\n" in text or "  " in text or "\\n" in text:
        text = " ".join(text.replace("\\n", " ").split())
    m = OOM_SENTENCE_RE.search(text)
    if m:
        tail = m.group("tail")
        alloc = _ALLOC_RE.search(tail)
        priv = _PRIV_RE.search(tail)
        unalloc = _UNALLOC_RE.search(tail)
        own = _SELF_RE.search(tail)
        alloc_mib = size_mib(alloc.group("alloc")) if alloc else None
        unalloc_mib = size_mib(unalloc.group("unalloc")) if unalloc else None
        reserved = (
            round(alloc_mib + unalloc_mib, 6) if alloc_mib is not None and unalloc_mib is not None else None
        )
        return OomText(
            m.group("dev"),
            int(m.group("gpu")),
            size_mib(m.group("req")),
            size_mib(m.group("total")),
            size_mib(m.group("free")),
            alloc_mib,
            reserved,
            size_mib(priv.group("priv")) if priv else None,
            size_mib(own.group("mem")) if own else None,
        )
    m = OOM_PAREN_RE.search(text)
    if m:
        return OomText(
            m.group("dev"),
            int(m.group("gpu")),
            size_mib(m.group("req")),
            size_mib(m.group("total")),
            size_mib(m.group("free")),
            size_mib(m.group("alloc")),
            size_mib(m.group("reserved") or m.group("cached")),
            None,
            None,
        )
    m = OOM_BARE_RE.search(text)
    if m:
        gpu = re.search(r"GPU (\d+)", text[m.end() : m.end() + 40])
        return OomText(
            m.group("dev"),
            int(gpu.group(1)) if gpu else None,
            size_mib(m.group("req")),
            None,
            None,
            None,
            None,
            None,
            None,
        )
    m = _RUNTIME_RE.search(text)
    if m:
        return OomText(m.group("dev"), None, None, None, None, None, None, None, None)
    return None
