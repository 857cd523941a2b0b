-- task_table_units: the unit of a kill no cgroup names, from the OOM record's task table.
--
-- Kernels before 4.19 name no cgroup in a host-wide OOM record, and without a journal no
-- systemd line says whose process died. The record's task table still lists every process
-- alive at the kill. A server's log names its own pid (uvicorn's "Started server process
-- [N]", a subprocess it names); when that pid is in the table, the server was alive then.
-- A victim that is an inference server's process (its name is an engine's process title —
-- the registered engines' process_prefixes — or it is the pid the server's log names) is the
-- server's whose pid is in the same record's table, when exactly one server unit's is and it
-- wrote in the ten minutes up to the kill (a pid named hours before may be reused).
-- Parameters: $prefixes (the engines' process-title prefixes, lower case).
-- Idempotent: only kills that name no unit are given one.

UPDATE oom_kills SET unit = m.unit
FROM (
    WITH named AS (
        SELECT unit, host, pid, min(ts) AS first_ts
        FROM (
            SELECT unit, host, ts,
                   coalesce(TRY_CAST(json_extract_string(detail, '$.server_pid') AS BIGINT),
                            TRY_CAST(json_extract_string(detail, '$.process_pid') AS BIGINT),
                            TRY_CAST(json_extract_string(detail, '$.subprocess_pid') AS BIGINT)) AS pid
            FROM server_events
            WHERE unit IS NOT NULL AND ts IS NOT NULL
        )
        WHERE pid IS NOT NULL
        GROUP BY ALL
    ),
    kills AS (
        SELECT k.source_id, k.oom_id, k.host, k.ts, k.victim_pid,
               EXISTS (SELECT 1 FROM unnest($prefixes) AS e(prefix)
                       WHERE starts_with(lower(coalesce(k.victim_comm, '')), e.prefix)) AS engine_process
        FROM oom_kills k
        WHERE k.unit IS NULL AND k.ts IS NOT NULL
    ),
    hits AS (
        SELECT DISTINCT k.source_id, k.oom_id, n.unit
        FROM kills k
        JOIN oom_tasks t ON t.source_id = k.source_id AND t.oom_id = k.oom_id
        JOIN named n ON n.pid = t.pid AND n.first_ts <= k.ts
                    AND (n.host IS NULL OR k.host IS NULL OR n.host = k.host)
        WHERE (k.engine_process OR k.victim_pid = n.pid)
          AND EXISTS (
              SELECT 1 FROM (
                  SELECT unit, ts FROM server_stats
                  UNION ALL SELECT unit, ts FROM server_events
                  UNION ALL SELECT unit, ts FROM http_requests
              ) w
              WHERE w.unit = n.unit AND w.ts > k.ts - INTERVAL 10 MINUTE AND w.ts <= k.ts + INTERVAL 2 SECOND
          )
    )
    SELECT source_id, oom_id, any_value(unit) AS unit
    FROM hits
    GROUP BY source_id, oom_id
    HAVING count(*) = 1
) m
WHERE oom_kills.source_id = m.source_id AND oom_kills.oom_id = m.oom_id AND oom_kills.unit IS NULL;
