-- server_runs: the runs of servers, for postmortem/analysis/server_units.py. $linked false: the
-- runs whose rows name no unit — a log file whose name says nothing (server.log, nohup.out), a
-- journal stream no unit claimed — to link to the unit the other sources say ran them. $linked
-- true: the runs whose unit is known (their own lines name it, a file named `x.service.log`, or
-- a link made before), whose starts under a Description teach the Description.
-- A run goes from one server start (its configuration line) to the last line before the next;
-- lines before a file's first configuration line are a run of their own. A journal's runs are
-- its processes' (one journal holds several servers' streams); a file's are its own.
-- Per run: its first and last line, and the pids it names (its own, uvicorn's main pid, a
-- subprocess it reports dead, a child whose lines a journal credits to the main process:
-- vLLM's "(EngineCore_DP0 pid=N)").
-- Parameters: $linked.
-- The bulk tables are grouped by UTC minute as whole microseconds since the epoch (floored):
-- the same groups as date_trunc('minute', ts) in the session's UTC, which costs seven times as
-- much (its calendar arithmetic: 150 against 23 ms over 1.6M rows).
WITH stats AS MATERIALIZED (
    SELECT source_id, any_value(host) AS host, pid, min(ts) AS lo, max(ts) AS hi, any_value(unit) AS unit
    FROM server_stats WHERE (CASE WHEN $linked THEN unit IS NOT NULL ELSE unit IS NULL END) AND ts IS NOT NULL
    GROUP BY source_id, pid, epoch_us(ts) - (epoch_us(ts) % 60000000 + 60000000) % 60000000
),
r AS (
    SELECT source_id, host, pid, ts, true AS config, CAST(NULL AS BIGINT) AS named, unit
    FROM server_configs WHERE (CASE WHEN $linked THEN unit IS NOT NULL ELSE unit IS NULL END) AND ts IS NOT NULL
    UNION ALL
    SELECT source_id, host, pid, ts, false,
           coalesce(TRY_CAST(json_extract_string(detail, '$.server_pid') AS BIGINT),
                    TRY_CAST(json_extract_string(detail, '$.subprocess_pid') AS BIGINT),
                    TRY_CAST(json_extract_string(detail, '$.process_pid') AS BIGINT)), unit
    FROM server_events WHERE (CASE WHEN $linked THEN unit IS NOT NULL ELSE unit IS NULL END) AND ts IS NOT NULL
    UNION ALL
    -- (the bulk tables: a run's first and last line are all they add)
    SELECT source_id, host, pid, lo, false, NULL, unit FROM stats
    UNION ALL
    SELECT source_id, host, pid, hi, false, NULL, unit FROM stats
    UNION ALL
    SELECT source_id, any_value(host), pid, max(ts), false, NULL, any_value(unit)
    FROM http_requests WHERE (CASE WHEN $linked THEN unit IS NOT NULL ELSE unit IS NULL END) AND ts IS NOT NULL
    GROUP BY source_id, pid, epoch_us(ts) - (epoch_us(ts) % 60000000 + 60000000) % 60000000
),
keyed AS (
    SELECT r.*, CASE WHEN s.format LIKE 'journal-%' THEN coalesce(r.pid, -1) ELSE -1 END AS stream,
           s.format LIKE 'journal-%' AS journal, s.path
    FROM r JOIN sources s USING (source_id)
),
starts AS (SELECT DISTINCT source_id, stream, ts FROM keyed WHERE config)
SELECT k.source_id, any_value(k.path) AS path, bool_or(k.journal) AS journal,
       CASE WHEN bool_or(k.journal) THEN k.stream END AS stream_pid, any_value(k.host) AS host,
       s.ts AS run_start, min(k.ts) AS first_ts, max(k.ts) AS last_ts,
       list_distinct(list(coalesce(k.named, k.pid)) FILTER (WHERE coalesce(k.named, k.pid) IS NOT NULL)) AS pids,
       any_value(k.unit) AS unit
FROM keyed k
ASOF LEFT JOIN starts s ON k.source_id = s.source_id AND k.stream = s.stream AND k.ts >= s.ts
GROUP BY k.source_id, k.stream, s.ts
ORDER BY k.source_id, first_ts
