-- linked_server_runs: the runs of servers whose lines were linked to a unit by
-- postmortem/analysis/server_units.py (before the clocks were compared, by the file's name or a
-- pid): as unlinked_server_runs, with the unit. A start of such a run under a Description
-- teaches the Description.
-- No parameters.
WITH linked AS (SELECT DISTINCT source_id FROM unit_links WHERE unit IS NOT NULL),
r AS (
    SELECT source_id, host, pid, ts, true AS config, CAST(NULL AS BIGINT) AS named, unit
    FROM server_configs WHERE unit IS NOT NULL AND ts IS NOT NULL AND source_id IN (SELECT source_id FROM linked)
    UNION ALL
    SELECT source_id, host, pid, ts, false,
           coalesce(TRY_CAST(json_extract_string(detail, '$.server_pid') AS BIGINT),
                    TRY_CAST(json_extract_string(detail, '$.subprocess_pid') AS BIGINT)), unit
    FROM server_events WHERE unit IS NOT NULL AND ts IS NOT NULL AND source_id IN (SELECT source_id FROM linked)
    UNION ALL
    -- (the bulk tables: a run's first and last line are all they add)
    SELECT source_id, any_value(host), pid, min(ts), false, NULL, any_value(unit)
    FROM server_stats WHERE unit IS NOT NULL AND ts IS NOT NULL AND source_id IN (SELECT source_id FROM linked) GROUP BY source_id, pid, date_trunc('minute', ts)
    UNION ALL
    SELECT source_id, any_value(host), pid, max(ts), false, NULL, any_value(unit)
    FROM server_stats WHERE unit IS NOT NULL AND ts IS NOT NULL AND source_id IN (SELECT source_id FROM linked) GROUP BY source_id, pid, date_trunc('minute', ts)
    UNION ALL
    SELECT source_id, any_value(host), pid, max(ts), false, NULL, any_value(unit)
    FROM http_requests WHERE unit IS NOT NULL AND ts IS NOT NULL AND source_id IN (SELECT source_id FROM linked) GROUP BY source_id, pid, date_trunc('minute', ts)
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
