"""#29 item 5: archives given to ``ingest``/``build`` — a bundle that is a decompression bomb, a
tar of a log directory that ``collect`` did not make, a ``.tar.xz``.

The plain-file guard (``io.iter_blocks``: ``--max-bytes`` and a 1000:1 ratio) covers a
compressed log; a bundle archive is extracted by ``bundle.extract_bundle`` with only the
20 GiB ``--max-bytes`` total, and any other tar is decompressed and read as one log file.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import struct
import subprocess
import sys
import tarfile
import zlib
from pathlib import Path

from hostile import Ran, dmesg, journal, one_error_line, run

#: a single file written past this (the extracted bomb) fails with EFBIG ("File too large"):
#: above the 256 MiB a streaming ratio check reads before it judges (io.RATIO_GRACE), far
#: below the gigabyte the bomb holds
WRITE_LIMIT = 320 << 20


def bomb(path: Path, size: int) -> Path:
    """A bundle archive of ~1 MB holding a manifest and ``size`` bytes of zeros (a multiple of
    16 MiB) as the journal export: each 16 MiB of zeros is compressed once (a full flush makes
    the deflate blocks of each the same) and repeated, so making it takes a fraction of a
    second and no disk."""
    manifest = json.dumps(
        {
            "postmortem_bundle": 1,
            "host": "gpu1",
            "commands": [{"name": "journal", "output": "journal/journal.export", "ingest": True}],
        }
    ).encode()
    first = tarfile.TarInfo("b/manifest.json")
    first.size = len(manifest)
    big = tarfile.TarInfo("b/journal/journal.export")
    big.size = size
    head = (
        first.tobuf(tarfile.GNU_FORMAT)
        + manifest
        + b"\0" * (-len(manifest) % 512)
        + big.tobuf(tarfile.GNU_FORMAT)
    )
    tail = b"\0" * (-size % 512 + 1024)  # the member's padding, then the end-of-archive blocks
    chunk = 16 << 20
    assert size % chunk == 0
    zeros = bytes(chunk)
    z = zlib.compressobj(9, zlib.DEFLATED, -15)  # raw deflate: the gzip frame is written here
    out = bytearray(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff")
    out += z.compress(head) + z.flush(zlib.Z_FULL_FLUSH)
    block = z.compress(zeros) + z.flush(zlib.Z_FULL_FLUSH)
    crc = zlib.crc32(head)
    for _ in range(size // chunk):
        out += block
        crc = zlib.crc32(zeros, crc)
    out += z.compress(tail) + z.flush(zlib.Z_FINISH)
    crc = zlib.crc32(tail, crc)
    out += struct.pack("<II", crc, (len(head) + size + len(tail)) & 0xFFFFFFFF)
    path.write_bytes(bytes(out))
    return path


def test_the_bomb_is_a_bundle_archive(tmp_path: Path) -> None:
    from postmortem.bundle import _archive_manifest

    archive = bomb(tmp_path / "b.tar.gz", 64 << 20)
    assert archive.stat().st_size < 100_000
    found = _archive_manifest(archive)
    assert found is not None and found[0]["host"] == "gpu1"
    with tarfile.open(archive, "r:gz") as tar:
        assert [(m.name, m.size) for m in tar.getmembers()][1] == ("b/journal/journal.export", 64 << 20)


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (WRITE_LIMIT, WRITE_LIMIT))


def test_bundle_bomb_is_refused_before_it_is_extracted(tmp_path: Path) -> None:
    archive = bomb(tmp_path / "bundle.tar.gz", 1 << 30)  # 1 GiB of zeros in ~1 MB (1000:1)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    p = subprocess.run(
        [sys.executable, "-m", "postmortem", "ingest", str(archive), "--db", str(tmp_path / "pm.duckdb")],
        env=dict(os.environ, TMPDIR=str(scratch)),
        preexec_fn=_limited,  # the extraction cannot fill the disk whatever it does
        capture_output=True,
        text=True,
        timeout=300,
    )
    line = one_error_line(Ran(p.returncode, p.stdout, p.stderr))
    assert "File too large" not in line  # refused by a check, not by the write limit
    assert "bundle.tar.gz" in line


# ----------------------------------------------------------------------------- a tar of logs


def _sglang_log() -> str:
    """An SGLang log long enough that its lines fill the head the format is sniffed from."""
    lines = ["[2026-03-18 13:50:05] server_args=ServerArgs(model_path='/m', tp_size=2, port=30000)"]
    lines += [
        f"[2026-03-18 13:{51 + i // 60:02d}:{i % 60:02d} TP0] Decode batch. #running-req: 12, #token: 51904, "
        "token usage: 0.46, cuda graph: True, gen throughput (token/s): 1599.78, #queue-req: 0, "
        for i in range(120)
    ]
    return "\n".join(lines) + "\n"


def _tar(directory: Path, archive: Path, names: list[str], flags: str) -> Path:
    """``tar c<flags>f ARCHIVE -C DIRECTORY NAMES…`` (members in the order given), as an
    operator makes one by hand; Python's tarfile where there is no tar."""
    tar = shutil.which("tar")
    if tar is not None:
        subprocess.run([tar, f"c{flags}f", str(archive), "-C", str(directory), *names], check=True)
        return archive
    mode = {"z": "w:gz", "J": "w:xz"}[flags]
    with tarfile.open(archive, mode) as t:
        for n in names:
            t.add(directory / n, arcname=n)
    return archive


def test_plain_tar_czf_of_a_log_directory_is_refused_or_read_member_by_member(tmp_path: Path) -> None:
    logs = tmp_path / "var-log"
    logs.mkdir()
    (logs / "sglang.log").write_text(_sglang_log())
    (logs / "journal.txt").write_text(journal())
    archive = _tar(logs, tmp_path / "logs.tar.gz", ["sglang.log", "journal.txt"], "z")

    ran = run(
        "build", "--logs", archive, "--db", tmp_path / "pm.duckdb", "--out", tmp_path / "r", "--tz", "UTC"
    )

    if ran.code == 0:  # read member by member: the journal's kill is found
        assert "1 incident(s)" in ran.out, ran
    else:  # or refused, saying so
        assert "logs.tar.gz" in one_error_line(ran)


def test_tar_xz_header_does_not_reach_a_kernel_record(tmp_path: Path) -> None:
    logs = tmp_path / "var-log"
    logs.mkdir()
    (logs / "dmesg.txt").write_text(dmesg("python3"))
    archive = _tar(logs, tmp_path / "dmesg.tar.xz", ["dmesg.txt"], "J")
    db = tmp_path / "pm.duckdb"

    ran = run("ingest", archive, "--db", db, "--host", "gpu1")

    if ran.code != 0:
        assert "dmesg.tar.xz" in one_error_line(ran)
        return
    rows = run(
        "query", "SELECT message FROM kernel_messages ORDER BY line_no", "--db", db, "--format", "json"
    )
    messages = [r["message"] for r in json.loads(rows.out)]
    assert messages, rows
    assert not [m for m in messages if "\x00" in m or "ustar" in m or "dmesg.txt" in m]


def test_a_tar_of_a_directory_made_with_dot_is_read(tmp_path: Path) -> None:
    """``tar czf logs.tar.gz -C dir .`` puts a ``./`` entry first: it is the archive's root,
    not an unsafe name."""
    logs = tmp_path / "var-log"
    logs.mkdir()
    (logs / "journal.txt").write_text(journal())
    archive = tmp_path / "logs.tar.gz"
    with tarfile.open(archive, "w:gz") as t:
        t.add(logs, arcname=".")
    ran = run(
        "build", "--logs", archive, "--db", tmp_path / "pm.duckdb", "--out", tmp_path / "r", "--tz", "UTC"
    )
    assert ran.code == 0 and "1 incident(s)" in ran.out, ran
