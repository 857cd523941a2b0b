"""Named queries rewritten for speed give what they gave before.

``server_runs.sql`` groups the bulk tables by UTC minute with integer arithmetic instead of
``date_trunc`` (seven times cheaper over the bench store): the runs it gives must be those the
``date_trunc`` grouping gives, whatever the times — either side of a minute, of 1970, of a run's
start. ``reboot_after.sql`` finds each journal's last boot before the kill from the last second
holding a boot id instead of an ``arg_max`` over six hours of entries."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from postmortem.query import named_sql
from postmortem.store.db import Store

#: the grouping expression the query uses (the test fails if it is no longer there)
MINUTE = "epoch_us(ts) - (epoch_us(ts) % 60000000 + 60000000) % 60000000"


def _store(seed: int, base: datetime) -> Store:
    rnd = random.Random(seed)
    store = Store.memory()
    for sid, fmt in ((1, "sglang-log"), (2, "journal-short")):
        store.execute(
            "INSERT INTO sources (source_id, path, format, sha256, bytes, lines, records, parse_issues, "
            "parsed_lines, ignored_lines, ingested_at) VALUES (?, ?, ?, ?, 0, 0, 0, 0, 0, 0, ?)",
            [sid, f"/f{sid}", fmt, f"{sid:064d}", base],
        )
    t = base
    for line in range(1, 200):
        # steps of 0-90 s, some landing on or a microsecond off a minute boundary
        t += timedelta(seconds=rnd.choice([0, 1, 9, 29, 59, 60]), microseconds=rnd.choice([0, 1, 999_999]))
        sid = rnd.choice([1, 2])
        pid = rnd.choice([None, 7, 8]) if sid == 2 else None
        unit = rnd.choice([None, None, "llm.service"])
        if line % 7 == 0:
            store.execute(
                "INSERT INTO server_configs (source_id, line_no, ts, unit, pid, engine) VALUES (?, ?, ?, ?, ?, 'sglang')",
                [sid, line, t, unit, pid],
            )
        if rnd.random() < 0.7:
            store.execute(
                "INSERT INTO server_stats (source_id, line_no, ts, unit, pid, phase, engine) "
                "VALUES (?, ?, ?, ?, ?, 'decode', 'sglang')",
                [sid, line, t, unit, pid],
            )
        else:
            store.execute(
                "INSERT INTO http_requests (source_id, line_no, ts, unit, pid, method, path, status, engine) "
                "VALUES (?, ?, ?, ?, ?, 'POST', '/generate', 200, 'sglang')",
                [sid, line, t, unit, pid],
            )
    return store


@pytest.mark.parametrize(
    "base", [datetime(2025, 5, 25, 20, 0, tzinfo=UTC), datetime(1969, 12, 31, 23, 58, 30, tzinfo=UTC)]
)
@pytest.mark.parametrize("seed", range(4))
def test_the_minute_groups_are_date_truncs(base: datetime, seed: int) -> None:
    sql = named_sql("server_runs")
    assert sql.count(MINUTE) == 2
    reference = sql.replace(MINUTE, "date_trunc('minute', ts)")
    store = _store(seed, base)
    try:
        for linked in (False, True):
            # (sorted: runs that start together come in either order)
            got = sorted(map(repr, store.con.execute(sql, {"linked": linked}).fetchall()))
            want = sorted(map(repr, store.con.execute(reference, {"linked": linked}).fetchall()))
            assert got == want and got
    finally:
        store.close()


def test_a_minute_before_1970_is_its_own() -> None:
    """Integer division in DuckDB truncates toward zero: minute -1 (1969-12-31 23:59) would fold
    into minute 0, and the run a start at 23:59:55 ends would end at its first line, not its last."""
    store = Store.memory()
    try:
        store.execute(
            "INSERT INTO sources (source_id, path, format, sha256, bytes, lines, records, parse_issues, "
            "parsed_lines, ignored_lines, ingested_at) VALUES (1, '/f', 'sglang-log', ?, 0, 0, 0, 0, 0, 0, now())",
            ["1" * 64],
        )
        midnight = datetime(1970, 1, 1, tzinfo=UTC)
        for line, sec in ((1, -50), (2, -40), (4, 10)):
            store.execute(
                "INSERT INTO server_stats (source_id, line_no, ts, phase, engine) VALUES (1, ?, ?, 'decode', 'sglang')",
                [line, midnight + timedelta(seconds=sec)],
            )
        store.execute(
            "INSERT INTO server_configs (source_id, line_no, ts, engine) VALUES (1, 3, ?, 'sglang')",
            [midnight - timedelta(seconds=5)],
        )
        runs = store.con.execute(named_sql("server_runs"), {"linked": False}).fetchall()
        assert [r[7] - midnight for r in runs] == [timedelta(seconds=-40), timedelta(seconds=10)]
    finally:
        store.close()


#: reboot_after.sql's first step before it read one second again (the reference the test
#: compares the rewrite with: the last entry with a boot id, by (ts, line_no))
_OLD_BEFORE = """WITH before AS (
    SELECT source_id, arg_max(boot_id, (ts, line_no)) AS old_boot
    FROM journal_entries
    WHERE ts <= $kill AND ts >= $kill - INTERVAL 6 HOUR
      AND ($host IS NULL OR host IS NULL OR host = $host)
    GROUP BY source_id
"""


@pytest.mark.parametrize("seed", range(6))
def test_reboot_after_finds_the_boot_the_old_query_found(seed: int) -> None:
    """Journals of a few boots, entries sharing seconds, boot ids missing on some lines, two
    hosts: for kills all over them, the candidates of the rewritten first step are the old
    one's."""
    rnd = random.Random(seed)
    store = Store.memory()
    base = datetime(2025, 5, 25, 20, 0, tzinfo=UTC)
    try:
        for sid in (1, 2, 3):
            store.execute(
                "INSERT INTO sources (source_id, path, format, sha256, bytes, lines, records, parse_issues, "
                "parsed_lines, ignored_lines, ingested_at) VALUES (?, ?, 'journal-export', ?, 0, 0, 0, 0, 0, 0, ?)",
                [sid, f"/j{sid}", f"{sid:064d}", base],
            )
            t, boot = base, f"b{sid}-0"
            for line in range(1, 300):
                t += timedelta(seconds=rnd.choice([0, 0, 1, 30, 200]))
                if rnd.random() < 0.02:
                    boot = f"b{sid}-{line}"
                store.execute(
                    "INSERT INTO journal_entries (source_id, line_no, ts, host, boot_id, message) VALUES (?, ?, ?, ?, ?, ?)",
                    [
                        sid,
                        line,
                        t,
                        rnd.choice(["h1", "h1", "h2", None]),
                        None if rnd.random() < 0.3 else boot,
                        f"m{line}",
                    ],
                )
        sql = named_sql("reboot_after")
        head = sql[sql.index("WITH last_known AS (") : sql.index("), after AS (")]
        reference = sql.replace(head, _OLD_BEFORE)
        assert reference != sql
        found = 0
        for _ in range(25):
            kill = base + timedelta(seconds=rnd.randrange(0, 6 * 3600))
            params = {
                "host": rnd.choice(["h1", None]),
                "kill": kill,
                "to": kill + timedelta(hours=1),
                "unit": "u",
            }
            got = store.con.execute(sql, params).fetchall()
            want = store.con.execute(reference, params).fetchall()
            assert got == want
            found += bool(got)
        assert found  # (some kills are followed by another boot)
    finally:
        store.close()


def test_service_loads_takes_the_probes_and_only_them() -> None:
    """``service_loads.sql`` tests the paths' prefixes before splitting off the query string:
    the same requests count as probes as before."""
    probes = [
        "/health",
        "/health?x=1",
        "/health_generate",
        "/v1/models",
        "/v1/models/m?a",
        "/ping",
        "/ping?q",
    ]
    others = [
        "/healthz",
        "/v1/modelsx",
        "/pingx",
        "/generate",
        "/HEALTH",
        "/",
        "/v1/chat/completions?/health",
    ]
    store = Store.memory()
    base = datetime(2025, 5, 25, 20, 0, tzinfo=UTC)
    try:
        for line, path in enumerate(probes + others, 1):
            store.execute(
                "INSERT INTO http_requests (source_id, line_no, ts, method, path, status, engine) "
                "VALUES (1, ?, ?, 'GET', ?, 200, 'sglang')",
                [line, base + timedelta(seconds=line), path],
            )
        rows = store.con.execute(named_sql("service_loads")).fetchall()
        assert sorted(r[13] for r in rows if r[0] == "http") == sorted(probes)
    finally:
        store.close()
