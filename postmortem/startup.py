"""Process start-up settings of the command line (not applied when postmortem is a library).

pyarrow asks, the first time any array is built, whether its input is a pandas object, and to
answer it imports pandas: 0.3–0.4 s and about 45 MB of resident memory in every postmortem
process, though postmortem never hands pyarrow a pandas object. :func:`arrow_without_pandas`
lets that one probe find no pandas. pyarrow only caches the answer for its *probes*: anything
that explicitly converts to or from pandas still imports it then (pyarrow retries the import
when pandas is really needed), so nothing is lost but the wasted start-up.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Sequence
from types import ModuleType

__all__ = ["arrow_without_pandas"]


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
    except ImportError:
        return False
    finally:
        sys.meta_path.remove(finder)
    return "pandas" not in sys.modules
