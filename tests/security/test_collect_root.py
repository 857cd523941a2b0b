"""#29 item 3: ``postmortem collect`` run as root must not hand a root-only log to every local
user, nor take orders from another user's ``postmortem.toml``.

``collect`` runs here as a separate process with the stand-in commands of tests/data/collect/bin
(journalctl, dmesg, nvidia-smi, systemctl) and a root shell's umask (022), on this machine's
/proc; the SGLang log comes from ``[collect] sglang_logs`` of the ``postmortem.toml`` in the
working directory, as an operator would configure it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from conftest import DATA
from hostile import NOBODY, files_holding, one_error_line, root_only, run_process

STANDINS = DATA / "collect" / "bin"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STANDIN_")}
    env["PATH"] = f"{STANDINS}:/usr/bin:/bin"
    return env


def _config(directory: Path, pattern: str) -> Path:
    path = directory / "postmortem.toml"
    path.write_text(f'[collect]\nsglang_logs = ["{pattern}"]\n', encoding="utf-8")
    return path


def _mode(p: Path) -> int:
    return stat.S_IMODE(p.lstat().st_mode)


@root_only
def test_collect_as_root_keeps_a_root_only_log_private(tmp_path: Path) -> None:
    private = tmp_path / "var-log-sglang"
    private.mkdir(mode=0o700)
    log = private / "sglang.log"
    log.write_text("[2026-03-18 13:50:05] prompt of a customer: PRIVATE-PROMPT-TEXT\n")
    log.chmod(0o600)
    work = tmp_path / "work"
    work.mkdir()
    _config(work, f"{private}/*.log")
    out = tmp_path / "out"

    ran = run_process("collect", "--out", out, "--archive", "--since", "-1h", cwd=work, env=_env())

    assert ran.code == 0, ran
    (bundle,) = [p for p in out.iterdir() if p.is_dir()]
    (archive,) = out.glob("*.tar.gz")
    assert files_holding(bundle, "PRIVATE-PROMPT-TEXT")  # the log was collected
    wrong = {
        str(p.relative_to(out)): oct(_mode(p))
        for p in [bundle, *bundle.rglob("*"), archive]
        if _mode(p) != (0o700 if p.is_dir() else 0o600)
    }
    assert wrong == {}


@root_only
def test_collect_as_root_refuses_a_config_file_owned_by_another_user(tmp_path: Path) -> None:
    # a root-only file (a stand-in for /etc/shadow)
    vault = tmp_path / "vault"
    vault.mkdir(mode=0o700)
    secret = vault / "shadow"
    secret.write_text("root:$6$ROOT-ONLY-HASH$:19000:0:99999:7:::\n")
    secret.chmod(0o600)
    # a shared, sticky directory (like /tmp) where another user left a postmortem.toml
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    planted = _config(shared, str(secret))
    os.chown(planted, NOBODY, NOBODY)
    out = tmp_path / "out"

    ran = run_process("collect", "--out", out, "--archive", "--since", "-1h", cwd=shared, env=_env())

    leaked = files_holding(out, "ROOT-ONLY-HASH") if out.exists() else []
    assert leaked == []
    assert "postmortem.toml" in one_error_line(ran)
