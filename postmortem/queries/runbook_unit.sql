-- runbook_unit: a unit's loads that became ready on a host up to a time (their seconds), and its
-- server's last port and served model name before it.
-- Parameters: $unit, $host, $until.
WITH loads AS (
    SELECT load_s
    FROM service_loads
    WHERE unit = $unit AND outcome = 'ready' AND load_s IS NOT NULL
      AND ($host IS NULL OR host IS NULL OR host = $host) AND start_ts <= $until
),
cfg AS (
    SELECT port, served_model_name, model_path
    FROM server_configs
    WHERE unit = $unit AND ($host IS NULL OR host IS NULL OR host = $host) AND ts <= $until
    ORDER BY ts DESC
    LIMIT 1
)
SELECT (SELECT list(load_s ORDER BY load_s) FROM loads) AS loads,
       (SELECT port FROM cfg) AS port,
       (SELECT served_model_name FROM cfg) AS served_model_name,
       (SELECT model_path FROM cfg) AS model_path
