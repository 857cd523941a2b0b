"""A journal read with ``-o short-monotonic`` has no wall-clock times, but the SGLang lines in it
carry their own (issue #27, finding F05): queries/anchor_journal.sql dates each of its boots
from them, so systemd's lines about units (a restart's start) can be put beside the servers'."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

UNIT = "llm.service"
#: two boots (after a reboot monotonic_s starts again); SGLang's whole-second stamps are truncated
JOURNAL = f"""\
-- Logs begin at Thu 2025-05-01 12:00:00 UTC, end at Fri 2025-05-02 08:10:00 UTC. --
[  100.000000] gpu7 systemd[1]: Started {UNIT} - LLM server.
[  102.300000] gpu7 python3[4242]: [2025-05-01 12:01:42] server_args=ServerArgs(model_path='/m', tp_size=8, port=30000)
[  110.700000] gpu7 python3[4242]: [2025-05-01 12:01:50 TP0] Decode batch, #running-req: 3, #token: 100, \
token usage: 0.10, cuda graph: True, gen throughput (token/s): 50.00, #queue-req: 0
[  111.700000] gpu7 python3[4242]: [2025-05-01 12:01:51 TP0] Decode batch, #running-req: 4, #token: 120, \
token usage: 0.11, cuda graph: True, gen throughput (token/s): 51.00, #queue-req: 0
-- Reboot --
[   30.000000] gpu7 systemd[1]: Started {UNIT} - LLM server.
[   32.500000] gpu7 python3[1717]: [2025-05-02 08:00:32] server_args=ServerArgs(model_path='/m', tp_size=8, port=30000)
"""


def test_each_boot_of_a_monotonic_journal_is_dated_by_its_server_lines(cli: Any, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "journal.txt").write_text(JOURNAL)
    db = tmp_path / "pm.duckdb"
    r = cli("build", "--logs", logs, "--db", db, "--out", tmp_path / "out", "--tz", "UTC")
    assert r.code == 0, r
    sql = (
        "SELECT line_no, strftime(ts, '%Y-%m-%d %H:%M:%S.%f') AS t, ts_inferred FROM unit_events "
        "WHERE action = 'started' ORDER BY line_no"
    )
    rows = json.loads(cli("query", "--db", db, "--format", "json", sql).out)
    # boot = median(stamp - monotonic) + 0.5 s: 11:59:59.3 + 0.5 (boot 1), 07:59:59.5 + 0.5 (boot 2)
    assert [(x["t"], x["ts_inferred"]) for x in rows] == [
        ("2025-05-01 12:01:39.800000", "boot"),
        ("2025-05-02 08:00:30.000000", "boot"),
    ]
    again = cli("build", "--db", db, "--out", tmp_path / "out", "--tz", "UTC", "--no-ingest")
    assert again.code == 0, again
    assert json.loads(cli("query", "--db", db, "--format", "json", sql).out) == rows  # idempotent
