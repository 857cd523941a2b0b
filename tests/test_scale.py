"""A generated 1M-line SGLang log ingests with exact counts (not timed: speed is `make bench`)."""

from __future__ import annotations

import sys
from pathlib import Path

from conftest import REPO

from postmortem.ingest import IngestOptions, ingest_paths
from postmortem.store.db import Store
from postmortem.timeutil import get_zone

sys.path.insert(0, str(REPO / "bench"))
from run import gen_sglang

LINES = 1_000_000


def test_million_lines_exact_counts(tmp_path: Path) -> None:
    log = tmp_path / "sglang-bench.log"
    gen_sglang(log, LINES)
    store = Store.open(tmp_path / "pm.duckdb")
    summary = ingest_paths(store, [str(log)], IngestOptions(zone=get_zone("UTC"), strict=True))
    (result,) = summary.files
    assert result.status == "ingested"
    # the generator writes: line 1 server_args; then for n in 1..LINES-1: n % 10 < 6 decode,
    # < 8 prefill, else an access line
    n = range(1, LINES)
    decode = sum(1 for i in n if i % 10 < 6)
    prefill = sum(1 for i in n if 6 <= i % 10 < 8)
    access = sum(1 for i in n if i % 10 >= 8)
    counts = store.fetchall(
        "SELECT (SELECT lines FROM sources), (SELECT parsed_lines FROM sources), "
        "(SELECT count(*) FROM server_stats WHERE phase = 'decode'), "
        "(SELECT count(*) FROM server_stats WHERE phase = 'prefill'), "
        "(SELECT count(*) FROM http_requests), (SELECT count(*) FROM server_configs), "
        "(SELECT count(DISTINCT line_no) FROM server_stats), "
        "(SELECT count(*) FROM server_stats WHERE ts IS NULL)"
    )[0]
    store.close()
    assert counts == (LINES, LINES, decode, prefill, access, 1, decode + prefill, 0)
