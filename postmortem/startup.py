"""Process start-up settings of the command line (not applied when postmortem is a library).

pyarrow asks, the first time any array is built, whether its input is a pandas object, and to
answer it imports pandas: 0.3–0.4 s and about 45 MB of resident memory in every postmortem
process, though postmortem never hands pyarrow a pandas object. :func:`arrow_without_pandas`
lets that one probe find no pandas. pyarrow only caches the answer for its *probes*: anything
that explicitly converts to or from pandas still imports it then (pyarrow retries the import
when pandas is really needed), so nothing is lost but the wasted start-up.
:func:`probe_after_pyarrow` runs it right after pyarrow's first import, so a command that never
needs pyarrow (re-ingesting unchanged files) does not import it either. The price, and the
reason only the command line does this: in that process pyarrow takes a pandas object handed
to ``pa.array`` for a plain sequence until something has converted to pandas.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any

__all__ = ["arrow_without_pandas", "probe_after_pyarrow"]


class _NoPandas(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname == "pandas" or fullname.startswith("pandas."):
            raise ImportError(f"{fullname} is not imported for pyarrow's probe")
        return None


def arrow_without_pandas() -> bool:
    """Run pyarrow's pandas probe with pandas hidden; True when the probe found no pandas
    (False: pandas was already imported, or this pyarrow probes differently)."""
    if "pandas" in sys.modules:
        return False
    finder = _NoPandas()
    sys.meta_path.insert(0, finder)
    try:
        import pyarrow as pa

        pa.array([0])  # the first array built runs the probe
    except Exception:  # whatever a future pyarrow does: no saving, and no failure either
        return False
    finally:
        sys.meta_path.remove(finder)
    return "pandas" not in sys.modules


class _AfterPyarrow(importlib.abc.MetaPathFinder):
    """Finds pyarrow as usual, and runs the probe once its import has finished."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != "pyarrow":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        loader: Any = spec.loader
        run = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            run(module)
            with contextlib.suppress(Exception):  # a skipped saving must never break the import
                arrow_without_pandas()

        loader.exec_module = exec_module  # this spec's own loader instance
        return spec


def probe_after_pyarrow() -> None:
    """:func:`arrow_without_pandas` now if pyarrow is loaded, else right after it is."""
    if "pyarrow" in sys.modules:
        arrow_without_pandas()
    elif not any(isinstance(f, _AfterPyarrow) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterPyarrow())
