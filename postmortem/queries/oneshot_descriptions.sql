-- oneshot_descriptions: Descriptions a oneshot's job teaches in a text journal whose job lines
-- name Descriptions (before systemd 249, or StatusUnitFormat=description): "Starting
-- <Description>...", then "<unit>: Succeeded." / "Deactivated successfully.", then "Finished
-- <Description>." (or "Started", before v246) — or, a oneshot that failed, "<unit>: Main
-- process exited, …" / "<unit>: Failed with result …" / "<unit> failed.", then "Failed to
-- start <Description>." — in this order in one source, on one host, within a few seconds,
-- with no other unit's own line between the unit's line and the Description's last (systemd
-- writes them one after the other; a server killed the same second may log its own lines
-- between the oneshot's start and its end). For postmortem/analysis/server_units.py:
-- such a oneshot's start is known as its unit's, so it is no server's start, and its end no
-- server's end. A Description two units teach, or a unit two Descriptions, teaches nothing.
-- No parameters.
WITH d AS (
    SELECT source_id, line_no, host, unit AS descr, ts, action
    FROM unit_events
    WHERE description IS NOT NULL AND unit = description AND ts IS NOT NULL
      AND action IN ('starting', 'started', 'finished', 'start_failed')
),
e AS (
    SELECT source_id, line_no, host, unit, ts, action = 'deactivated' AS ok
    FROM unit_events
    WHERE description IS NULL AND unit IS NOT NULL AND ts IS NOT NULL
      AND action IN ('deactivated', 'main_exited', 'failed')
),
pairs AS (
    SELECT s.descr, e.unit
    FROM d AS s
    JOIN e ON e.source_id = s.source_id AND e.line_no > s.line_no
          AND e.ts >= s.ts AND e.ts <= s.ts + INTERVAL 10 SECOND
          AND (s.host IS NULL OR e.host IS NULL OR s.host = e.host)
    JOIN d AS f ON f.source_id = s.source_id AND f.descr = s.descr AND f.line_no > e.line_no
               AND f.action IN (CASE WHEN e.ok THEN 'started' ELSE 'start_failed' END,
                                CASE WHEN e.ok THEN 'finished' ELSE 'start_failed' END)
               AND f.ts >= e.ts AND f.ts <= e.ts + INTERVAL 2 SECOND
    WHERE s.action = 'starting'
      AND NOT EXISTS (
          SELECT 1 FROM unit_events AS o
          WHERE o.source_id = s.source_id AND o.line_no > e.line_no AND o.line_no < f.line_no
            AND o.description IS NULL AND o.unit IS NOT NULL AND o.unit <> e.unit
      )
),
unique_desc AS (
    SELECT descr, any_value(unit) AS unit FROM pairs GROUP BY descr HAVING count(DISTINCT unit) = 1
)
SELECT descr AS description, unit
FROM unique_desc
WHERE unit IN (SELECT unit FROM unique_desc GROUP BY unit HAVING count(*) = 1)
ORDER BY descr;
