#!/usr/bin/env python3
"""Build ``dist/postmortem-collect.pyz``: ``postmortem collect`` as one file for a sick host.

The zip holds the ``postmortem`` package's Python files (the same code ``postmortem collect``
runs) and a ``__main__`` that applies :mod:`postmortem._compat` (Python 3.8-3.10 backports) and
calls :func:`postmortem.collect_main.main`. Nothing outside the standard library is imported on
its path (tests/test_collector.py runs it under ``python3.8 -I -S``). Deterministic: the files in
name order with a fixed time, so the same tree builds the same bytes.

Usage: ``python scripts/build_collector.py [OUT]`` (default ``dist/postmortem-collect.pyz``).
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAIN = """import sys
import postmortem._compat  # noqa: F401 - backports first
from postmortem.collect_main import main
sys.exit(main())
"""


def build(out: Path) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    files = sorted(p for p in (ROOT / "postmortem").rglob("*.py") if "__pycache__" not in p.parts)
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for path in files:
            info = zipfile.ZipInfo(path.relative_to(ROOT).as_posix(), date_time=(2020, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, path.read_bytes())
        info = zipfile.ZipInfo("__main__.py", date_time=(2020, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_DEFLATED
        zf.writestr(info, MAIN)
    data = b"#!/usr/bin/env python3\n" + tmp.read_bytes()
    tmp.unlink()
    out.write_bytes(data)
    out.chmod(0o755)
    return out


if __name__ == "__main__":
    print(build(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "dist" / "postmortem-collect.pyz"))
