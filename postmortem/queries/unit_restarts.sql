-- Restart jobs systemd scheduled for a unit in a window. Parameters: $unit, $since, $until, $host.
-- A container (docker:<name>, podman:<name>) has no restart job: its runtime starts its scope
-- again under a restart policy. Each start of it in the window is such a restart, unless an
-- operator's docker/podman command naming it (sudo's journal line) came in the minute before.
WITH operator AS (
    SELECT ts, host
    FROM journal_entries
    WHERE regexp_matches($unit, '^(docker|podman):')
      AND ident = 'sudo' AND ts >= $since - INTERVAL 1 MINUTE AND ts <= $until
      AND regexp_matches(message, 'COMMAND=\S*\b(docker|podman) ')
      AND contains(message, regexp_extract($unit, ':(.*)$', 1))
)
SELECT ts, restart_count, source_id, line_no, message
FROM unit_events u
WHERE unit = $unit AND ts >= $since AND ts <= $until
  AND ($host IS NULL OR host IS NULL OR host = $host)
  AND (action = 'restart_scheduled'
       OR (action = 'started' AND regexp_matches($unit, '^(docker|podman):')
           AND NOT EXISTS (
               SELECT 1
               FROM operator o
               WHERE o.ts >= u.ts - INTERVAL 1 MINUTE AND o.ts <= u.ts
                 AND (o.host IS NULL OR u.host IS NULL OR o.host = u.host))))
ORDER BY ts, line_no
