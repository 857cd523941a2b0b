"""``postmortem hook``: a unit's failure starts a capture. The files ``install`` writes under a
temporary root are checked by ``systemd-analyze verify``; the ``--then`` command line is run as
systemd would run it; bad names and values end in one ``Error:``."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from postmortem.errors import UsageError
from postmortem.hook import Hook, install, installed_units, status, uninstall

UNIT = "sglang-k26-eagle3.service"


def _systemd_line(line: str, instance: str) -> list[str]:
    """An Exec line's argv as systemd runs it: ``%I`` the instance, ``%%`` a percent sign, ``$$``
    a dollar sign (``$VAR`` expansion is not used by what install writes)."""
    value = line.split("=", 1)[1]
    out, i = [], 0
    while i < len(value):
        two = value[i : i + 2]
        if two == "%I":
            out.append(instance)
        elif two == "%%":
            out.append("%")
        elif two == "$$":
            out.append("$")
        else:
            out.append(value[i])
            i += 1
            continue
        i += 2
    return shlex.split("".join(out))


def test_install_writes_the_drop_in_and_the_capture_unit(tmp_path: Path) -> None:
    written = install(tmp_path, Hook(UNIT, then="echo {bundle}"))
    dropin, template = (p.relative_to(tmp_path).as_posix() for p in written)
    assert dropin == f"etc/systemd/system/{UNIT}.d/50-postmortem-capture.conf"
    assert template == "etc/systemd/system/postmortem-capture@.service"
    assert "OnFailure=postmortem-capture@%n.service" in written[0].read_text()
    unit = written[1].read_text()
    assert "UMask=0077" in unit and "TimeoutStartSec=300" in unit
    assert "--unit %I --since=-6h --out /var/lib/postmortem/%I" in unit
    assert installed_units(tmp_path) == [UNIT]
    assert status(tmp_path, UNIT)[0] == (UNIT, "installed")


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze")
def test_systemd_accepts_what_install_writes(tmp_path: Path) -> None:
    install(tmp_path, Hook(UNIT, then="postmortem build --logs {bundle} --out /srv/reports/100%"))
    units = tmp_path / "etc" / "systemd" / "system"
    (units / UNIT).write_text("[Unit]\nDescription=x\n[Service]\nExecStart=/bin/sleep 1\n")
    ran = subprocess.run(
        ["systemd-analyze", "verify", str(units / UNIT), str(units / f"postmortem-capture@{UNIT}.service")],
        env={"SYSTEMD_UNIT_PATH": f"{units}:", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode == 0 and ran.stderr == "", ran.stderr


def test_then_runs_with_the_newest_bundle(tmp_path: Path) -> None:
    dest = tmp_path / "var lib"  # a space in the path: quoted all the way
    for name, age in (("postmortem-h-20260101T000000Z", 100), ("postmortem-h-20260102T000000Z", 0)):
        (dest / UNIT / name).mkdir(parents=True)
        os.utime(dest / UNIT / name, (time.time() - age, time.time() - age))
    out = tmp_path / "said"
    hook = Hook(UNIT, dest=str(dest), then=f"printf '%s' {{bundle}} > {shlex.quote(str(out))}")
    install(tmp_path, hook)
    line = next(
        ln
        for ln in (tmp_path / "etc/systemd/system/postmortem-capture@.service").read_text().splitlines()
        if ln.startswith("ExecStartPost=")
    )
    subprocess.run(_systemd_line(line, UNIT), check=True, timeout=30)
    assert out.read_text() == f"{dest}/{UNIT}/postmortem-h-20260102T000000Z"


def test_uninstall_removes_what_is_no_longer_named(tmp_path: Path) -> None:
    install(tmp_path, Hook(UNIT))
    install(tmp_path, Hook("vllm.service"))
    assert [p.name for p in uninstall(tmp_path, UNIT)] == ["50-postmortem-capture.conf"]
    assert installed_units(tmp_path) == ["vllm.service"]
    assert [p.name for p in uninstall(tmp_path, "vllm.service")] == [
        "50-postmortem-capture.conf",
        "postmortem-capture@.service",
    ]
    assert status(tmp_path, UNIT) == [(UNIT, "not installed")]


def test_a_changed_drop_in_is_said(tmp_path: Path) -> None:
    (dropin, _) = install(tmp_path, Hook(UNIT))
    dropin.write_text(dropin.read_text() + "OnFailure=other.service\n")
    assert status(tmp_path, UNIT)[0] == (UNIT, "differs")


@pytest.mark.parametrize(
    "hook",
    [
        Hook("bad unit"),
        Hook("../../etc/passwd.service"),
        Hook("x"),
        Hook(UNIT, dest="relative/dir"),
        Hook(UNIT, dest="/var/../etc"),
        Hook(UNIT, then="echo a\nExecStart=/bin/sh"),
        Hook(UNIT, timeout_s=1),
    ],
)
def test_bad_values_are_refused(tmp_path: Path, hook: Hook) -> None:
    with pytest.raises(UsageError):
        install(tmp_path, hook)
    assert not (tmp_path / "etc").exists()


def _cli(*args: object) -> tuple[int, str, str]:
    ran = subprocess.run(
        [sys.executable, "-m", "postmortem", *(str(a) for a in args)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return ran.returncode, ran.stdout, ran.stderr


def test_the_cli_says_what_it_did(tmp_path: Path) -> None:
    code, out, _ = _cli("hook", "install", UNIT, "--root", tmp_path, "--timeout", "10min")
    assert code == 0 and "then: systemctl daemon-reload" in out
    assert "TimeoutStartSec=600" in (tmp_path / "etc/systemd/system/postmortem-capture@.service").read_text()
    assert f"{UNIT}: installed" in _cli("hook", "status", "--root", tmp_path)[1]
    for bad in (("install", "a b"), ("frobnicate", UNIT)):
        code, _, err = _cli("hook", *bad, "--root", tmp_path)
        assert code == 2 and err.count("Error:") == 1 and "Traceback" not in err, err
