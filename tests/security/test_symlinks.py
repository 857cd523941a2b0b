"""#29 item 4: writes through symlinks planted in an output directory another user controls.

root runs ``build``, ``export`` or ``collect`` into a directory a local user can write (a shared
reports directory, a scratch directory); that user planted a symlink under a name postmortem
is about to write — every name here is predictable. Each test points the link at a root-owned
file outside and checks the file is untouched whatever the command did.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import DATA
from hostile import NOBODY, STEM, Ran, journal, root_only, run, write_logs

from postmortem.errors import PostmortemError

ORIGINAL = b"root-owned file, not postmortem's\n"


def _victim(tmp_path: Path) -> Path:
    safe = tmp_path / "root-only"
    safe.mkdir(mode=0o700)
    victim = safe / "target"
    victim.write_bytes(ORIGINAL)
    victim.chmod(0o644)
    return victim


def _user_dir(path: Path) -> Path:
    """A directory a local user (not root) owns."""
    path.mkdir(parents=True)
    if os.geteuid() == 0:
        os.chown(path, NOBODY, NOBODY)
    return path


def _finished(ran: Ran) -> None:
    """The command ran to its end: done, or refused with an error of its own (not a crash)."""
    assert ran.code in (0, 1), ran
    assert "internal error" not in ran.err, ran


def _plant(directory: Path, name: str, victim: Path) -> Path:
    link = directory / name
    link.symlink_to(victim)
    if os.geteuid() == 0:
        os.lchown(link, NOBODY, NOBODY)
    return link


@root_only
def test_build_does_not_write_through_a_planted_reports_manifest(tmp_path: Path) -> None:
    victim = _victim(tmp_path)
    out = _user_dir(tmp_path / "reports")
    _plant(out, ".postmortem-reports", victim)
    logs = write_logs(tmp_path, journal__txt=journal())

    _finished(run("build", "--logs", logs, "--db", tmp_path / "pm.duckdb", "--out", out, "--tz", "UTC"))

    assert victim.read_bytes() == ORIGINAL


@root_only
def test_build_bundle_does_not_write_through_a_planted_tarball(tmp_path: Path) -> None:
    victim = _victim(tmp_path)
    out = _user_dir(tmp_path / "reports")
    _plant(out, f"{STEM}.tar.gz", victim)
    logs = write_logs(tmp_path, journal__txt=journal())

    _finished(
        run("build", "--logs", logs, "--db", tmp_path / "pm.duckdb", "--out", out, "--tz", "UTC", "--bundle")
    )

    assert victim.read_bytes() == ORIGINAL


@root_only
def test_export_does_not_write_through_a_planted_unfinished_marker(tmp_path: Path) -> None:
    victim = _victim(tmp_path)
    logs = write_logs(tmp_path, journal__txt=journal())
    db = tmp_path / "pm.duckdb"
    assert run("ingest", logs, "--db", db).code == 0
    export = _user_dir(tmp_path / "export")
    _plant(export, "_postmortem.unfinished", victim)

    _finished(run("export", "--parquet", export, "--db", db))

    assert victim.read_bytes() == ORIGINAL


@root_only
def test_collect_archive_does_not_write_through_a_planted_part_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from postmortem.collect import CollectOptions, collect

    monkeypatch.setenv("PATH", f"{DATA / 'collect' / 'bin'}:/usr/bin:/bin")
    for var in ("STANDIN_JOURNAL", "STANDIN_DMESG", "STANDIN_NVIDIA", "STANDIN_SYSTEMD"):
        monkeypatch.delenv(var, raising=False)
    machine = tmp_path / "machine"
    shutil.copytree(DATA / "collect" / "root", machine, symlinks=True)
    victim = _victim(tmp_path)
    out = _user_dir(tmp_path / "out")
    # the name is the host's and the second's: the user plants it for the next seconds
    now = datetime(2026, 3, 20, 17, 30, 0, tzinfo=UTC)
    _plant(out, "postmortem-gpu-node-3-20260320T173000Z.tar.gz.part", victim)

    # refusing the link or writing around it are both fine: the target is what matters
    with contextlib.suppress(PostmortemError):
        collect(CollectOptions(out=out, archive=True, root=machine, host="gpu-node-3", now=now, since=None))

    assert (out / "postmortem-gpu-node-3-20260320T173000Z").is_dir()  # the bundle was collected
    assert victim.read_bytes() == ORIGINAL
