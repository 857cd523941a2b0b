"""The single-file collector (``make collector`` → ``dist/postmortem-collect.pyz``, issue #32):
built from the same ``postmortem.collect`` code, it runs under a bare interpreter — the oldest
Python found here (3.8 when pyenv has it), isolated (``-I``: no user site, no ``PYTHONPATH``) and
without site-packages (``-S``) — imports nothing outside the standard library, and writes a
bundle holding the same files as ``postmortem collect`` on the same machine."""

from __future__ import annotations

import glob
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))
from build_collector import build  # noqa: E402


def _oldest_python() -> str:
    """The oldest Python 3.8+ on this machine (pyenv's or on PATH), else this one."""
    candidates = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.[89].*/bin/python")))
    candidates += [p for v in ("3.8", "3.9", "3.10") for p in [f"/usr/bin/python{v}"] if os.path.exists(p)]
    return candidates[0] if candidates else sys.executable


@pytest.fixture(scope="module")
def pyz(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("dist") / "postmortem-collect.pyz")


def _bare(python: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(cwd or "/tmp")}
    return subprocess.run(
        [python, "-I", "-S", *args], capture_output=True, text=True, timeout=600, env=env, cwd=cwd
    )


def test_it_runs_on_the_oldest_python_here(pyz: Path) -> None:
    ran = _bare(_oldest_python(), str(pyz), "--version")
    assert ran.returncode == 0 and ran.stdout.startswith("postmortem-collect "), ran


def test_it_imports_only_the_standard_library(pyz: Path) -> None:
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import postmortem._compat, postmortem.collect_main, "
        "postmortem.collect, postmortem.config, postmortem.bundle; postmortem.collect.default_unit_patterns(); "
        "mods = {m.split('.')[0] for m in sys.modules}; "
        "print(sorted(m for m in mods - set(sys.stdlib_module_names) - {'postmortem', '__main__'} "
        "if not m.startswith('_sysconfigdata')))"
    )
    ran = _bare(sys.executable, "-c", code, str(pyz))
    assert ran.returncode == 0 and ran.stdout.strip() == "[]", ran


def test_a_usage_error_is_one_line(pyz: Path, tmp_path: Path) -> None:
    ran = _bare(_oldest_python(), str(pyz), "--since=yesterday-ish", "--out", str(tmp_path), cwd=tmp_path)
    assert ran.returncode == 2 and ran.stderr.count("Error:") == 1 and "Traceback" not in ran.stderr, ran


def _files(out: Path) -> set[str]:
    (bundle,) = [p for p in out.iterdir() if p.name.startswith("postmortem-") and p.is_dir()]
    return {p.relative_to(bundle).as_posix() for p in bundle.rglob("*") if p.is_file()}


def test_the_same_bundle_as_postmortem_collect(pyz: Path, tmp_path: Path) -> None:
    args = ("--since=-1h", "--timeout", "20")
    ran = _bare(_oldest_python(), str(pyz), *args, "--out", str(tmp_path / "pyz"), cwd=tmp_path)
    assert ran.returncode == 0, ran
    cli = subprocess.run(
        [sys.executable, "-m", "postmortem", "collect", *args, "--out", str(tmp_path / "cli")],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert cli.returncode == 0, cli
    got, want = _files(tmp_path / "pyz"), _files(tmp_path / "cli")
    assert got == want and "manifest.json" in got


@pytest.mark.skipif(
    not glob.glob(os.path.expanduser("~/.pyenv/versions/3.8.*/bin/python")), reason="no Python 3.8"
)
def test_the_zoneinfo_backport_agrees_with_zoneinfo(pyz: Path) -> None:
    from datetime import datetime, timedelta
    from zoneinfo import ZoneInfo

    zones = ("America/Los_Angeles", "Europe/Berlin", "Asia/Kolkata", "Australia/Sydney", "UTC")
    naive = [datetime(2025, m, 15, 12) + timedelta(hours=h) for m in (1, 3, 7, 11) for h in (0, 13)]  # noqa: DTZ001
    cases = [(z, t) for z in zones for t in naive]
    code = (
        "import sys, datetime as d; sys.path.insert(0, sys.argv[1]); import postmortem._compat; "
        "from zoneinfo import ZoneInfo; "
        "[print(d.datetime(*map(int, a.split(',')[1:]), tzinfo=ZoneInfo(a.split(',')[0])).utcoffset()"
        ".total_seconds()) for a in sys.argv[2:]]"
    )
    args = [f"{z},{t.year},{t.month},{t.day},{t.hour}" for z, t in cases]
    ran = _bare(_oldest_python(), "-c", code, str(pyz), *args)
    assert ran.returncode == 0, ran
    want = [t.replace(tzinfo=ZoneInfo(z)).utcoffset().total_seconds() for z, t in cases]  # type: ignore[union-attr]
    assert [float(x) for x in ran.stdout.split()] == want
