-- operator_descriptions: Descriptions an operator's command teaches in a text journal whose job
-- lines name Descriptions (before systemd 249, or StatusUnitFormat=description): sudo's line
-- "COMMAND=/usr/bin/systemctl start <unit>" (or restart), then, in the same source within 5
-- seconds, the next "Starting <Description>..." of the host is that unit's. For
-- postmortem/analysis/server_units.py: a server linked to that Description takes the unit's
-- name, which is the one an operator acts on. A Description two units teach, or a unit two
-- Descriptions, teaches nothing; so does a command naming several units.
-- No parameters.
WITH cmds AS (
    SELECT source_id, line_no, host, ts,
           regexp_extract(message,
               'COMMAND=\S*systemctl\s+(?:-\S+\s+)*(?:re)?start\s+([A-Za-z0-9@_.:\\-]+)\s*$', 1) AS unit
    FROM journal_entries
    WHERE ident = 'sudo' AND ts IS NOT NULL AND message LIKE '%COMMAND=%systemctl%start %'
),
starts AS (
    SELECT source_id, line_no, host, ts, unit AS descr
    FROM unit_events
    WHERE description IS NOT NULL AND unit = description AND action = 'starting' AND ts IS NOT NULL
),
pairs AS (
    SELECT c.source_id, c.line_no,
           CASE WHEN c.unit LIKE '%.%' THEN c.unit ELSE c.unit || '.service' END AS unit,
           arg_min(s.descr, s.line_no) AS descr
    FROM cmds AS c
    JOIN starts AS s ON s.source_id = c.source_id AND s.line_no > c.line_no
     AND s.ts >= c.ts AND s.ts <= c.ts + INTERVAL 5 SECOND
     AND (s.host IS NULL OR c.host IS NULL OR s.host = c.host)
    WHERE c.unit <> ''
    GROUP BY c.source_id, c.line_no, c.unit
),
unique_desc AS (
    SELECT descr, any_value(unit) AS unit FROM pairs GROUP BY descr HAVING count(DISTINCT unit) = 1
)
SELECT descr AS description, unit
FROM unique_desc
WHERE unit IN (SELECT unit FROM unique_desc GROUP BY unit HAVING count(*) = 1)
ORDER BY descr
