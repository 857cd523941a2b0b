"""The kernels compiled ahead of time (postmortem.parsers.aot): used when built for the sources
as they are, the same rows as numba's, never handed an argument they would misread."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO

from postmortem.parsers import aot, jit

sys.path.insert(0, str(REPO / "bench"))
from run import gen_journal, gen_nvidia, gen_sglang

PKG = REPO / "postmortem"


def _kernel_modules() -> list[Path]:
    return sorted(p for p in PKG.rglob("*.py") if "@kernel" in p.read_text() and p.name != "jit.py")


def test_the_fingerprint_covers_every_source_the_compiled_code_depends_on() -> None:
    rels = {str(p.relative_to(PKG)) for p in _kernel_modules()}
    assert rels <= set(aot.SOURCES), rels - set(aot.SOURCES)
    # a kernel module that took a constant from elsewhere in postmortem would leave the module
    # stale after that other file changed, with nothing to tell
    for path in _kernel_modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                assert node.module is not None and node.module.endswith("jit"), (path, node.module)
            elif isinstance(node, ast.ImportFrom | ast.Import):
                names = [node.module] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
                assert all(n in ("__future__", "typing", "numpy") for n in names), (path, names)


def test_every_entry_point_is_a_kernel_and_its_signature_reads() -> None:
    import importlib

    for module_name, name in aot.ENTRY_POINTS:
        k = getattr(importlib.import_module(module_name), name)
        assert hasattr(k, "py_func"), (module_name, name)
        sig = aot.signature(module_name, name)
        assert sig.count("(") == sig.count(")") and "!" not in sig


def test_a_module_built_for_other_sources_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(aot, "_LOADED", [])
    monkeypatch.setattr(aot, "fingerprint", lambda: 12345)
    assert aot.module() is None
    monkeypatch.setattr(aot, "_LOADED", [])
    monkeypatch.setenv("POSTMORTEM_AOT", "0")
    assert aot.module() is None


def test_the_fingerprint_changes_with_any_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for rel in aot.SOURCES:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(PKG / rel, tmp_path / rel)
    monkeypatch.setattr(aot, "_ROOT", tmp_path)
    before = aot.fingerprint()
    assert before == aot.fingerprint()
    with (tmp_path / aot.SOURCES[-1]).open("a") as fh:
        fh.write("\n# an edit\n")
    assert aot.fingerprint() != before


def test_arguments_the_signature_does_not_take_go_to_numba() -> None:
    """The compiled code checks no type: int32 offsets would be read as int64 ones (a crash).
    Such a call runs through numba, which compiles for the types it is given."""
    buf = np.frombuffer(b"hello world", np.uint8)
    wide = jit.gather_spans(buf, np.array([0, 6]), np.array([5, 11]), -1, 0)
    narrow = jit.gather_spans(buf, np.array([0, 6], np.int32), np.array([5, 11], np.int32), -1, 0)
    assert bytes(wide[1]) == bytes(narrow[1]) == b"helloworld"
    assert not aot.accepts(
        "postmortem.parsers.jit", "gather_spans", (buf, np.array([0], np.int32), np.array([1]), 0, 0)
    )
    # an output array that cannot be written (bytes seen through numpy) is not taken either
    out = np.frombuffer(b"\0" * 8, np.bool_)
    assert not aot.accepts(
        "postmortem.parsers.journal.kernels", "gather_messages", (buf, np.array([0]), np.array([5]), out)
    )


def _built() -> bool:
    return any(PKG.glob("parsers/_aot*.so")) and aot.module() is not None


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    d = tmp_path_factory.mktemp("aot")
    paths = [d / "journal.log", d / "sglang.log", d / "gpu.csv"]
    gen_journal(paths[0], 40_000)
    gen_sglang(paths[1], 40_000)
    gen_nvidia(paths[2], 40_000)
    return paths


_PROBE = """
import json, sys
from postmortem import cli
try:
    cli.main(sys.argv[1:])
except SystemExit:
    pass
from postmortem.parsers import aot
print(json.dumps({"numba": "numba" in sys.modules, "fallbacks": aot.FALLBACKS, "module": aot.module() is not None}))
"""


def _ingest(paths: list[Path], db: Path, *, compiled: bool) -> dict[str, object]:
    env = {**os.environ, "POSTMORTEM_AOT": "1" if compiled else "0"}
    ran = subprocess.run(
        [sys.executable, "-c", _PROBE, "ingest", *map(str, paths), "--db", str(db), "--tz", "UTC"],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        check=True,
    )
    result: dict[str, object] = json.loads(ran.stdout.strip().splitlines()[-1])
    return result


def test_compiled_kernels_give_numba_s_rows_without_loading_numba(inputs: list[Path], tmp_path: Path) -> None:
    if not _built():
        if shutil.which("cc") is None and shutil.which("gcc") is None:
            pytest.skip("no C compiler: the kernels are not compiled ahead of time here")
        pytest.fail(
            "the ahead-of-time kernels are not built for these sources: run make (or python -m postmortem.parsers.aot)"
        )
    fast = _ingest(inputs, tmp_path / "aot.duckdb", compiled=True)
    assert fast == {"numba": False, "fallbacks": [], "module": True}
    slow = _ingest(inputs, tmp_path / "numba.duckdb", compiled=False)
    assert slow["numba"] is True and slow["module"] is False

    from postmortem.store.db import Store

    tables: dict[str, list[set[tuple[object, ...]]]] = {}
    for db in ("aot.duckdb", "numba.duckdb"):
        with Store.open_readonly(tmp_path / db) as store:
            for t in ("journal_entries", "server_stats", "http_requests", "gpu_samples", "kernel_messages"):
                rows = store.con.sql(f"SELECT * EXCLUDE (source_id) FROM {t}").fetchall()
                tables.setdefault(t, []).append(rows)  # type: ignore[arg-type]
    for t, (a, b) in tables.items():
        assert len(a) > 1000 or t == "kernel_messages", (t, len(a))
        assert sorted(map(repr, a)) == sorted(map(repr, b)), t


def test_arguments_the_compiled_types_would_misread_go_to_numba() -> None:
    """The compiled signature types its arrays as aligned and its scalars as int64: an int64
    array seen at an odd byte offset, or a scalar past int64's range (numba types it uint64;
    the compiled code raised OverflowError), is not taken."""
    buf = np.frombuffer(b"hello world", np.uint8)
    starts, ends = np.array([0, 6]), np.array([5, 11])
    raw = np.zeros(17, np.uint8)
    odd = np.frombuffer(raw.data, np.int64, count=2, offset=1)
    assert not odd.flags.aligned and odd.flags.c_contiguous
    name = ("postmortem.parsers.jit", "gather_spans")
    assert aot.accepts(*name, (buf, starts, ends, -1, 0))
    assert not aot.accepts(*name, (buf, odd, ends, -1, 0))
    for big in (1 << 63, np.uint64(1 << 63), -(1 << 63) - 1):
        assert not aot.accepts(*name, (buf, starts, ends, big, 0)), big
    assert aot.accepts(*name, (buf, starts, ends, np.int32(-1), np.uint64(0)))
    assert bytes(jit.gather_spans(buf, starts, ends, np.uint64(2), 1)[1]) == b"helowold"


def _numba_type(spec: str, readonly: bool) -> object:
    from numba import types

    names = {"u1": types.uint8, "i1": types.int8, "i4": types.int32, "i8": types.int64}
    names |= {"f8": types.float64, "b1": types.boolean, "Tuple": types.Tuple, "UniTuple": types.UniTuple}
    made = eval(spec.replace("!", ""), names)  # the module's own signatures
    if isinstance(made, types.Array) and readonly and not spec.endswith("!"):
        return made.copy(readonly=True)
    return made


def test_the_compiled_code_writes_only_to_arrays_marked_as_outputs() -> None:
    """accepts() lets read-only arrays (np.frombuffer of a block's bytes) through for every
    argument not marked ``!``: the compiled code, which checks nothing, would write into them.
    numba types such arguments as read-only and refuses any kernel that writes to one."""
    import importlib

    jit._with_numba()
    for (module_name, name), (_result, args) in aot.ENTRY_POINTS.items():
        dispatcher = getattr(importlib.import_module(module_name), name)
        dispatcher.compile(tuple(_numba_type(a, readonly=True) for a in args))


_LOAD = """
import sys
sys.path.insert(0, sys.argv[1])
from postmortem.parsers import aot
aot.MODULE = "_aot"
print(aot.module() is not None)
"""


def test_a_truncated_module_is_not_loaded(tmp_path: Path) -> None:
    """A build cut short, or one another build is still writing, leaves a truncated ``_aot*.so``;
    loading it killed the process with SIGBUS (found by truncating it), beyond any except.
    The build writes the module's digest beside it; a module that does not match is not loaded."""
    if not _built():
        pytest.skip("the ahead-of-time kernels are not built here")
    so = next(PKG.glob("parsers/_aot*.so"))
    shutil.copy(so, tmp_path / so.name)
    shutil.copy(PKG / "parsers" / aot.DIGEST, tmp_path / aot.DIGEST)

    def load() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", _LOAD, str(tmp_path)],
            capture_output=True,
            text=True,
            cwd=REPO,
            check=False,
        )

    assert load().stdout.split() == ["True"]
    data = so.read_bytes()
    for damaged in (data[:5000], data[: len(data) // 2], b"\0" * len(data)):
        (tmp_path / so.name).write_bytes(damaged)
        ran = load()
        assert (ran.returncode, ran.stdout.split()) == (0, ["False"]), ran.stderr[-500:]
    (tmp_path / so.name).write_bytes(data)
    (tmp_path / aot.DIGEST).unlink()
    assert load().stdout.split() == ["False"]


def test_check_says_why_the_module_is_not_used(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--check`` said "not built or stale" when it was turned off, or damaged; each says so."""
    monkeypatch.setattr(aot, "_LOADED", [])
    monkeypatch.setenv("POSTMORTEM_AOT", "0")
    assert aot.main(["--check"]) == 1
    assert "turned off (POSTMORTEM_AOT=0)" in capsys.readouterr().out
    monkeypatch.setenv("POSTMORTEM_AOT", "1")
    monkeypatch.setattr(aot, "MODULE", "postmortem.parsers._no_such_module")
    assert aot.main(["--check"]) == 1
    assert "not built" in capsys.readouterr().out
    if _built():
        monkeypatch.setattr(aot, "MODULE", "postmortem.parsers._aot")
        monkeypatch.setattr(aot, "DIGEST", "no-such-digest")
        assert aot.main(["--check"]) == 1
        assert "damaged" in capsys.readouterr().out
        monkeypatch.setattr(aot, "DIGEST", "_aot.sha256")
        monkeypatch.setattr(aot, "fingerprint", lambda: 12345)
        assert aot.main(["--check"]) == 1
        assert "stale" in capsys.readouterr().out


def test_only_the_kernels_python_calls_count_references() -> None:
    """The kernels other kernels call run without numba's reference counting (an atomic call
    per array argument, on entry and on return); those Python calls keep it (they allocate)."""
    import importlib

    for module_name, _name in aot.ENTRY_POINTS:
        importlib.import_module(module_name)
    jit._with_numba()
    # every kernel: those made when numba was first loaded (an earlier test may have loaded it
    # before all the kernel modules were imported) and those made as dispatchers since
    dispatchers = list(jit._KERNELS)
    names = [(d.py_func.__module__, d.py_func.__name__) for d in dispatchers]
    assert len([n for n in names if n not in aot.ENTRY_POINTS]) > 20
    for dispatcher, name in zip(dispatchers, names, strict=True):
        assert dispatcher.targetoptions.get("_nrt", True) is (name in aot.ENTRY_POINTS), name
