"""The kernels compiled ahead of time: start-up without numba.

Loading numba and its cached kernels costs a large ingest about 0.3–0.4 s of start-up (the
import, its compiler context, one cache file per kernel), as long as lnav takes to index a
2M-line SGLang log. ``python -m postmortem.parsers.aot`` (run by ``make dev``, ``make demo``
and ``make test``) compiles the kernels that Python calls (:data:`ENTRY_POINTS`), with every
kernel they call, into one extension module beside this file, ``_aot*.so``, with numba's
ahead-of-time compiler; it needs a C compiler, which pip's own builds need anyway.

The module carries the :func:`fingerprint` of the sources it was built from. A kernel is run
from it only when that matches the sources now: after any edit to a kernel (or a checkout of
another commit) the module is stale, the kernels run through numba as before, and the next
``make`` rebuilds it. ``POSTMORTEM_AOT=0`` turns it off. The numba path stays the reference;
``tests/test_aot.py`` checks that both give the same results.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: the extension module's import name
MODULE = "postmortem.parsers._aot"
#: the file beside the module that holds its SHA-256 and file name (see :func:`intact`)
DIGEST = "_aot.sha256"

_ROOT = Path(__file__).resolve().parent.parent
#: every source the compiled code depends on: the kernels, the helpers they call, and this
#: file's signatures (the kernel modules import nothing else from postmortem; a test checks)
SOURCES = (
    "parsers/jit.py",
    "parsers/aot.py",
    "parsers/journal/kernels.py",
    "engines/sglang/kernels.py",
    "parsers/nvidia/kernels.py",
)

# numba's signature language: u1/i1/i4/i8/f8/b1 scalars, ``[::1]`` contiguous 1-D arrays,
# ``[:, ::1]`` C-contiguous 2-D arrays, ``Tuple((a, b))`` and ``UniTuple(a, n)``. A trailing
# ``!`` marks an array the kernel writes to (it must be writeable; the others may be read-only,
# as np.frombuffer of bytes is). The compiled module checks no argument's type itself — a
# wrong dtype would be read as another — so :func:`accepts` checks each call against these.
_SCAN = (
    "u1[::1]", "i8[::1]", "i8[::1]", "b1[::1]", "b1", "u1[::1]", "i8[::1]", "i8[::1]", "i8[::1]",
    "i1[::1]!", "i8[::1]!", "b1[::1]!", "i8[::1]!", "i8[::1]!", "i8[::1]!", "f8[:, ::1]!",
    "i8[:, ::1]!", "b1[:, ::1]!", "i8[::1]!", "i8[:, ::1]!",
)  # fmt: skip
_SPLIT = (
    "u1[::1]", "i8[::1]", "i8[::1]", "i8", "i8", "b1", "b1", "b1[::1]!", "b1[::1]!", "i8[::1]!",
    "i8[::1]!", "i8[::1]!", "i8[::1]!", "i8[::1]!", "b1[::1]!",
)  # fmt: skip
#: (module, kernel) → (result, arguments): the kernels called from Python, as their callers
#: call them
ENTRY_POINTS: dict[tuple[str, str], tuple[str, tuple[str, ...]]] = {
    ("postmortem.parsers.jit", "gather_spans"): (
        "Tuple((i8[::1], u1[::1]))",
        ("u1[::1]", "i8[::1]", "i8[::1]", "i8", "i8"),
    ),
    ("postmortem.parsers.jit", "newline_offsets"): ("i8", ("u1[::1]", "i8[::1]!")),
    ("postmortem.engines.sglang.kernels", "scan"): ("UniTuple(i8, 2)", _SCAN),
    ("postmortem.parsers.journal.kernels", "split_lines"): ("i8", _SPLIT),
    ("postmortem.parsers.journal.kernels", "gather_messages"): (
        "Tuple((i8[::1], u1[::1], i8))",
        ("u1[::1]", "i8[::1]", "i8[::1]", "b1[::1]!"),
    ),
    ("postmortem.parsers.nvidia.kernels", "scan"): (
        "UniTuple(i8, 2)",
        ("u1[::1]", "i8", "i8", "i8", "u1[::1]", "UniTuple(i8[:, ::1]!, 2)", "i8[:, ::1]!"),
    ),
    ("postmortem.parsers.nvidia.kernels", "column"): (
        "i8",
        ("u1[::1]", "i8[::1]", "i8[::1]", "i8", "Tuple((u1[::1]!, i8[::1]!, f8[::1]!, i8[::1]!))"),
    ),
    ("postmortem.parsers.nvidia.kernels", "gather32"): (
        "Tuple((i4[::1], u1[::1]))",
        ("u1[::1]", "i8[::1]", "i8[::1]"),
    ),
}


def signature(module_name: str, name: str) -> str:
    """The entry point's signature for numba's ahead-of-time compiler.

    >>> signature("postmortem.parsers.nvidia.kernels", "gather32")
    'Tuple((i4[::1], u1[::1]))(u1[::1], i8[::1], i8[::1])'
    """
    result, args = ENTRY_POINTS[(module_name, name)]
    return f"{result}({', '.join(a.replace('!', '') for a in args)})"


_DTYPES = {"u1": "uint8", "i1": "int8", "i4": "int32", "i8": "int64", "f8": "float64", "b1": "bool"}
Check = Callable[[Any], bool]


def _split_top(text: str) -> list[str]:
    """``text`` cut at its top-level commas."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += (ch in "([") - (ch in ")]")
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return [*parts, cur.strip()] if cur.strip() else parts


def _check(spec: str) -> Check:
    """A test of one argument against its spec (see :data:`ENTRY_POINTS`).

    >>> import numpy as np
    >>> _check("i8[::1]")(np.zeros(3, np.int64)), _check("i8[::1]")(np.zeros(3, np.int32))
    (True, False)
    >>> _check("u1[::1]!")(np.frombuffer(b"ab", np.uint8)), _check("b1")(True), _check("i8")(2.0)
    (False, True, False)
    >>> _check("i8")(np.int32(7)), _check("i8")(1 << 63)
    (True, False)
    >>> _check("UniTuple(i8[:, ::1]!, 2)")((np.zeros((2, 2), np.int64),) * 2)
    True
    """
    import numpy as np

    if spec.startswith("UniTuple("):
        inner, count = spec[9:-1].rsplit(",", 1)
        return _tuple_check([_check(inner.strip())] * int(count))
    if spec.startswith("Tuple(("):
        return _tuple_check([_check(p) for p in _split_top(spec[7:-2])])
    write = spec.endswith("!")
    base = spec.rstrip("!")
    if "[" not in base:
        if base == "b1":
            return lambda v: isinstance(v, bool | np.bool_)
        return _int64
    dtype = np.dtype(_DTYPES[base[: base.index("[")]])
    ndim = base.count(",") + 1

    def array(v: Any) -> bool:
        return (
            isinstance(v, np.ndarray)
            and v.dtype == dtype
            and v.ndim == ndim
            and v.flags.c_contiguous
            and v.flags.aligned  # the compiled code's loads assume it
            and (v.flags.writeable or not write)
        )

    return array


def _int64(v: Any) -> bool:
    """An integer that converts to int64 (numba would type a larger one as uint64; the
    compiled code raises OverflowError)."""
    import numpy as np

    if isinstance(v, bool | np.bool_) or not isinstance(v, int | np.integer):
        return False
    return bool(-(1 << 63) <= int(v) < 1 << 63)


def _tuple_check(checks: list[Check]) -> Check:
    return lambda v: (
        isinstance(v, tuple) and len(v) == len(checks) and all(c(x) for c, x in zip(checks, v, strict=True))
    )


_ACCEPTS: dict[tuple[str, str], Callable[[tuple[Any, ...]], bool]] = {}


def accepts(module_name: str, name: str, args: tuple[Any, ...]) -> bool:
    """Whether the compiled entry point takes ``args`` as they are (dtypes, dimensions,
    layout, writeable outputs): a call that it does not take goes to numba."""
    test = _ACCEPTS.get((module_name, name))
    if test is None:
        checks = [_check(a) for a in ENTRY_POINTS[(module_name, name)][1]]

        def test(values: tuple[Any, ...]) -> bool:
            return len(values) == len(checks) and all(c(v) for c, v in zip(checks, values, strict=True))

        _ACCEPTS[(module_name, name)] = test
    return test(args)


#: kernels whose call the compiled module could not take (their arguments' types), in order
FALLBACKS: list[str] = []
_LOADED: list[Any] = []


def export_name(module: str, name: str) -> str:
    """The extension module's name for a kernel.

    >>> export_name("postmortem.engines.sglang.kernels", "scan")
    'engines_sglang_kernels__scan'
    """
    return module.removeprefix("postmortem.").replace(".", "_") + "__" + name


def fingerprint() -> int:
    """What the compiled code depends on, as a signed 64-bit number: the sources' bytes and
    NumPy's major version (the module's array interface)."""
    import numpy as np

    h = hashlib.sha256(np.__version__.split(".")[0].encode())
    for rel in SOURCES:
        h.update(rel.encode() + b"\0" + (_ROOT / rel).read_bytes())
    return int.from_bytes(h.digest()[:8], "little", signed=True)


def module() -> Any:
    """The compiled module when it is built for the sources as they are now, else None."""
    if not _LOADED:
        _LOADED.append(_load())
    return _LOADED[0]


def _load() -> Any:
    if _unusable() is not None:
        return None
    try:
        mod = importlib.import_module(MODULE)
        return mod if mod.fingerprint() == fingerprint() else None
    except Exception:  # built for another Python, unreadable: numba it is
        return None


def _unusable() -> str | None:
    """Why the compiled module cannot be loaded at all (for ``--check``), or None."""
    if os.environ.get("POSTMORTEM_AOT", "1") == "0":
        return "turned off (POSTMORTEM_AOT=0); numba compiles"
    try:
        spec = importlib.util.find_spec(MODULE)
    except Exception:  # (a broken package path: as if not built)
        spec = None
    if spec is None or spec.origin is None:
        return "not built (numba compiles); python -m postmortem.parsers.aot builds it"
    if not intact(Path(spec.origin)):
        return "damaged or cut short (numba compiles); python -m postmortem.parsers.aot builds it again"
    return None


def intact(path: Path) -> bool:
    """Whether ``path`` holds the bytes the build wrote (:data:`DIGEST`): loading a truncated
    extension module — a build cut short, or one another build is still writing — kills the
    process (SIGBUS), which no ``except`` catches."""
    try:
        want = (path.parent / DIGEST).read_text().split()
        return want == [hashlib.sha256(path.read_bytes()).hexdigest(), path.name]
    except OSError:
        return False


def compiled(module_name: str, name: str) -> Callable[..., Any] | None:
    """The compiled code of kernel ``name`` of ``module_name``, or None (not an entry point,
    or no usable module)."""
    if (module_name, name) not in ENTRY_POINTS:
        return None
    mod = module()
    fn: Callable[..., Any] | None = getattr(mod, export_name(module_name, name), None)
    return fn


def build(directory: Path | None = None) -> Path:
    """Compile :data:`ENTRY_POINTS` into the extension module in ``directory`` (beside this
    file by default); returns its path."""
    import shutil
    import tempfile
    import warnings

    from numba.core.errors import NumbaPendingDeprecationWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NumbaPendingDeprecationWarning)  # numba.pycc's notice
        pycc: Any = importlib.import_module("numba.pycc")  # untyped
    CC = pycc.CC

    from . import jit

    for module_name in {m for m, _ in ENTRY_POINTS}:
        importlib.import_module(module_name)
    # compiled afresh, not from numba's on-disk cache: its entries are keyed by source and
    # signature but not by the options they were compiled with (see jit._refcounting)
    jit.cache_off = True
    jit._with_numba()  # the kernels' calls to each other go through numba's dispatchers
    out = directory or Path(__file__).resolve().parent
    cc = CC(MODULE.rsplit(".", 1)[1])
    cc.verbose = False
    for module_name, name in ENTRY_POINTS:
        kernel = getattr(importlib.import_module(module_name), name)
        cc.export(export_name(module_name, name), signature(module_name, name))(kernel.py_func)
    stamp = fingerprint()

    def fingerprint_of_build() -> int:
        return stamp

    cc.export("fingerprint", "i8()")(fingerprint_of_build)
    # linked beside the module, then renamed over it with its digest: a process loading the
    # module meanwhile (or a build cut short) never sees a part of a file
    tmp = Path(tempfile.mkdtemp(prefix=".aot-", dir=out))
    try:
        cc.output_dir = str(tmp)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cc.compile()
        built = tmp / str(cc.output_file)
        (tmp / DIGEST).write_text(f"{hashlib.sha256(built.read_bytes()).hexdigest()} {built.name}\n")
        os.replace(built, out / built.name)
        os.replace(tmp / DIGEST, out / DIGEST)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out / built.name


def state() -> str:
    """Whether :func:`module` finds the compiled module, and if not, why (for ``--check``)."""
    why = _unusable()
    if why is not None:
        return why
    if module() is None:
        return "stale: built for other sources (numba compiles); make or python -m postmortem.parsers.aot rebuilds it"
    return "built for these sources"


def main(argv: list[str]) -> int:
    """``python -m postmortem.parsers.aot [--check]``: build the module, or say whether the
    one there is used. Exit 0 either way when it is a note rather than a failure."""
    if "--check" in argv:
        print(f"postmortem kernels compiled ahead of time: {state()}")
        return 0 if module() is not None else 1
    try:
        path = build()
    except Exception as exc:  # no C compiler, no numba.pycc: numba compiles on first use instead
        print(
            f"note: kernels not compiled ahead of time ({type(exc).__name__}: {exc}); numba compiles them on first use"
        )
        return 0
    print(f"compiled the parsing kernels ahead of time: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
