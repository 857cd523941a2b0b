"""The CLI's start-up: pyarrow's pandas probe must not import pandas, and pandas must still work."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest


def _run(code: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


def test_probe_skips_pandas_but_conversions_still_work() -> None:
    out = _run(
        """
        import sys
        from postmortem.startup import arrow_without_pandas
        print(arrow_without_pandas())
        import numpy as np
        import pyarrow as pa
        pa.table({"a": np.arange(3)})
        print("pandas" in sys.modules)
        print(pa.table({"a": [1, 2]}).to_pandas()["a"].sum())
        print("pandas" in sys.modules)
        import pandas as pd
        print(pa.array(pd.Series([4, 5])).to_pylist())
        """
    )
    assert out.split("\n") == ["True", "False", "3", "True", "[4, 5]"]


def test_no_effect_once_pandas_is_imported() -> None:
    out = _run(
        """
        import pandas
        from postmortem.startup import arrow_without_pandas
        print(arrow_without_pandas())
        """
    )
    assert out == "False"


def test_cli_ingest_does_not_import_pandas(tmp_path) -> None:  # type: ignore[no-untyped-def]
    log = tmp_path / "k.log"
    log.write_text("2025-05-25T20:00:00+0000 gpu1 kernel: hello\n" * 5)
    out = _run(
        f"""
        import sys
        from postmortem.cli import main
        try:
            main(["ingest", {str(log)!r}, "--db", {str(tmp_path / "s.duckdb")!r}])
        except SystemExit as exc:
            assert exc.code == 0, exc.code
        print("pandas" in sys.modules)
        """
    )
    assert out.splitlines()[-1] == "False"


def test_probe_waits_for_pyarrow() -> None:
    """The CLI defers the probe until pyarrow is imported (a command that never needs pyarrow
    does not pay for it), then runs it before anything builds an array."""
    out = _run(
        """
        import sys
        from postmortem.startup import probe_after_pyarrow
        probe_after_pyarrow()
        print("pyarrow" in sys.modules)
        import numpy as np
        import pyarrow as pa
        pa.table({"a": np.arange(3)})
        print("pandas" in sys.modules)
        import pyarrow.compute as pc
        print(pc.sum(pa.array([1, 2])).as_py())
        """
    )
    assert out.splitlines() == ["False", "False", "3"]


def test_an_unchanged_reingest_loads_no_heavy_module(tmp_path: object) -> None:
    """Re-ingesting an unchanged file is told by the store's file index: DuckDB, the parsers,
    numpy, Arrow, numba, pandas, dateutil and pydantic (typer 0.29 parses options with it;
    pinned below) stay unloaded — their imports would be most of the re-ingest's time — and so
    do the collector (only its bundle-reading side, postmortem.bundle, is on this path) and
    tarfile."""
    from pathlib import Path

    base = Path(str(tmp_path))
    log, db = base / "j.log", base / "pm.duckdb"
    log.write_text("2025-05-25T00:00:00+00:00 gpu-a kernel: line\n")
    code = f"""
        import sys
        from postmortem.cli import main
        try:
            main(["ingest", {str(log)!r}, "--db", {str(db)!r}])
        except SystemExit:
            pass
        heavy = {{"pyarrow", "numba", "pandas", "dateutil", "pydantic", "numpy", "llvmlite", "tarfile",
                  "duckdb"}}
        loaded = {{m.split(".")[0] for m in sys.modules}} & heavy
        loaded |= {{"postmortem.collect"}} & set(sys.modules)
        print(sorted(loaded),
              [m for m in sys.modules if m.startswith("postmortem.parsers.") and m.count(".") > 2][:3])
        """
    first = _run(code).splitlines()
    assert first[0].endswith("ingested as journal-short: 1 lines, 2 records, 0 parse issues, 0 ignored")
    assert "'pyarrow'" in first[-1]  # the first ingest parses: they load
    again = _run(code).splitlines()
    assert again == [f"{log}: unchanged", "[] []"]


def test_the_drawing_process_loads_neither_the_analysis_nor_duckdb_nor_the_templates(
    tmp_path: object,
) -> None:
    """What the drawing process imports (matplotlib, the plotting code) and unpickles (a job of
    plain figure data): half its start-up was the analysis, DuckDB and Jinja, which it never uses."""
    out = _run(
        f"""
        import pickle, sys
        from datetime import datetime
        from pathlib import Path
        from postmortem.drawing import FigureJob
        from postmortem.figdata import MemoryData
        t = datetime(2025, 5, 25, 20, 17)
        data = MemoryData("t", "UTC", "a.service", ["gpu"], gpus=[("GPU 0", ([t], [70.0]))], kill=t)
        job = pickle.dumps(FigureJob("r", data, Path({str(tmp_path)!r}) / "m.png", None, Path("l.png")))
        print(sorted(m for m in sys.modules if m.startswith("postmortem.")))
        for m in [m for m in sys.modules if m.startswith("postmortem")]:
            del sys.modules[m]
        # the drawing process, from here on
        from postmortem import drawing, plots
        print(drawing.draw(pickle.loads(job))[0] is not None)
        heavy = {{"duckdb", "jinja2", "pyarrow", "numba", "typer", "pandas"}}
        print(sorted({{m.split(".")[0] for m in sys.modules}} & heavy))
        print(sorted(m for m in sys.modules if m.startswith(("postmortem.analysis", "postmortem.report"))))
        """
    )
    assert out.split("\n") == [
        "['postmortem.drawing', 'postmortem.figdata', 'postmortem.machine']",
        "True",
        "[]",
        "[]",
    ]


def test_the_machines_zone_from_a_copied_or_pointed_to_zone_file(tmp_path: Path) -> None:
    """/etc/localtime copied rather than linked (container images, some installers), and
    TZ=:/path: the zone is the zoneinfo file with the same bytes, or the one it links to. It
    was read as UTC, with no word said (zone-less times 9 h off on a Tokyo host)."""
    from postmortem.timeutil import zone_name_of_file

    tokyo = Path("/usr/share/zoneinfo/Asia/Tokyo")
    if not tokyo.exists():
        pytest.skip("no tzdata here")
    copied = tmp_path / "localtime"
    copied.write_bytes(tokyo.read_bytes())
    linked = tmp_path / "linked"
    linked.symlink_to(tokyo)
    assert zone_name_of_file(str(linked)) == "Asia/Tokyo"
    assert zone_name_of_file(str(copied)) in ("Asia/Tokyo", "Japan")  # the same bytes, both names
    assert zone_name_of_file(str(tmp_path / "missing")) is None


def test_a_tz_the_zone_database_cannot_name_says_it_came_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from postmortem.errors import UsageError
    from postmortem.timeutil import get_zone

    for tz, key in ((":Asia/Tokyo", "Asia/Tokyo"), ("UTC0", "UTC")):
        monkeypatch.setenv("TZ", tz)
        get_zone.cache_clear()
        assert getattr(get_zone(), "key", None) == key
    monkeypatch.setenv("TZ", "EST5EDT,M3.2.0,M11.1.0")
    get_zone.cache_clear()
    with pytest.raises(UsageError, match=r"TZ='EST5EDT,M3.2.0,M11.1.0' \(the environment\)"):
        get_zone()
    get_zone.cache_clear()


def _module_level_compiles(path: Path) -> list[int]:
    """Lines of ``re.compile(`` calls run when ``path`` is imported (outside any function)."""
    import ast

    hits: list[int] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inside = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            func = getattr(child, "func", None)
            if (
                not inside
                and isinstance(child, ast.Call)
                and isinstance(func, ast.Attribute)
                and func.attr == "compile"
                and isinstance(func.value, ast.Name)
                and func.value.id == "re"
            ):
                hits.append(child.lineno)
            visit(child, inside)

    visit(ast.parse(path.read_text()), False)
    return hits


def test_module_level_patterns_compile_on_first_use(tmp_path: Path) -> None:
    # importing every parser to detect a format compiled ~250 patterns a run did not use
    import postmortem

    root = Path(postmortem.__file__).parent
    eager = {
        str(p.relative_to(root)): lines
        for p in sorted(root.rglob("*.py"))
        if p.name != "lazyre.py" and (lines := _module_level_compiles(p))
    }
    assert not eager, f"use lazy_re at module level: {eager}"
    # the finder itself is not blind
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import re\nX = re.compile('a')\nY = [re.compile(p) for p in 'bc']\n\n\ndef f():\n    return re.compile('d')\n"
    )
    assert _module_level_compiles(probe) == [2, 3]


def test_every_lazy_pattern_compiles() -> None:
    # a lazy pattern fails only when first used: compile every one the package defines
    import importlib
    import pkgutil

    import postmortem
    from postmortem.lazyre import LazyPattern

    def patterns(value: object, depth: int = 0) -> list[LazyPattern]:
        if isinstance(value, LazyPattern):
            return [value]
        if depth < 4 and isinstance(value, tuple | list | dict | set | frozenset):
            items = value.values() if isinstance(value, dict) else value
            return [p for item in items for p in patterns(item, depth + 1)]
        return []

    seen = 0
    for info in pkgutil.walk_packages(postmortem.__path__, "postmortem."):
        if info.name.endswith(("__main__", ".aot")):
            continue
        module = importlib.import_module(info.name)
        for value in list(vars(module).values()):
            for pattern in patterns(value):
                pattern.compiled()
                seen += 1
    # (a few are class attributes or built in loops; the nested tables are here: vLLM's
    # events, the report's secret patterns)
    assert seen >= 270, seen


def test_a_lazy_pattern_pickles_and_copies_once_used() -> None:
    import copy
    import pickle

    from postmortem.lazyre import lazy_re

    p = lazy_re(r"(?P<n>\d+)")
    assert p.sub("#", "a 42") == "a #"  # (used: it holds the compiled pattern's methods now)
    for q in (pickle.loads(pickle.dumps(p)), copy.deepcopy(p)):
        assert q.sub("#", "b 7") == "b #"


def _entry(*args: str) -> list[str]:
    """The console script's command line (``postmortem.launch.main``, which ends the process
    without the interpreter's teardown)."""
    return [sys.executable, "-c", "from postmortem.launch import main; main()", *args]


def test_a_failed_command_s_end_runs_the_finalisers_of_its_cycles(tmp_path: Path) -> None:
    # a stdin ingest stopped by SIGTERM left its temporary copy in /tmp: the copy sat in a
    # reference cycle through the stop's traceback, which only a collection frees; the end
    # without teardown now collects once when the command failed (and not when it succeeded:
    # that collection is what the end saves)
    code = textwrap.dedent(
        """
        import gc, sys
        from pathlib import Path
        from postmortem import launch

        class Held:  # (as a NamedTemporaryFile's closer: it removes its file when freed)
            def __init__(self, path):
                self.path, self.me = path, self  # a cycle

            def __del__(self):
                self.path.unlink()

        gc.disable()  # (only the end's own collection may free it)
        mark = Path(sys.argv[1])
        mark.write_text("x")
        Held(mark)
        launch._end(int(sys.argv[2]))
        """
    )
    for status, left in ((1, False), (0, True)):
        mark = tmp_path / f"mark-{status}"
        r = subprocess.run([sys.executable, "-c", code, str(mark), str(status)], check=False)
        assert r.returncode == status
        assert mark.exists() is left, status


def test_the_end_without_teardown_with_a_standard_stream_closed(tmp_path: Path) -> None:
    import shlex

    cmd = " ".join(shlex.quote(a) for a in _entry("formats"))
    for closed in ("2>&-", ">&- 2>/dev/null"):
        r = subprocess.run(["bash", "-c", f"{cmd} {closed}"], capture_output=True, text=True, check=False)
        assert r.returncode == 0, (closed, r)  # (it was an internal error, exit 70)
        assert "Traceback" not in r.stderr


@pytest.mark.parametrize(("given", "pool"), [(None, "system"), ("jemalloc", "jemalloc")])
def test_arrow_allocates_from_malloc_unless_the_user_chose(
    tmp_path: Path, given: str | None, pool: str
) -> None:
    # mimalloc, pyarrow's default, gave freed pages back at once: a page fault and a zeroed
    # page per 4 kB of each block's columns (launch.main)
    import os

    log = tmp_path / "k.log"
    log.write_text("2025-05-25T20:00:00+0000 gpu1 kernel: hello\n" * 5)
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    if given:
        env["ARROW_DEFAULT_MEMORY_POOL"] = given
    code = f"""
        import atexit, sys
        sys.argv = ["postmortem", "ingest", {str(log)!r}, "--db", {str(tmp_path / "s.duckdb")!r}]
        atexit.register(lambda: print(__import__("pyarrow").default_memory_pool().backend_name))
        from postmortem.launch import main
        main()
        """
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, check=True, env=env
    )
    assert out.stdout.splitlines()[-1] == pool
    assert "Unsupported" not in out.stderr
