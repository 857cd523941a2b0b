-- victim_serving: whether the killed unit ran a server, and whether the host's servers went on
-- serving after the kill (postmortem/analysis/facts.py, Incident.serving).
-- own: whether any server row (statistics, events, configurations, requests) is the unit's;
-- others_after: the other units whose servers logged statistics, or answered requests (not a
-- 5xx, not a health check), on the host in the 10 minutes after the kill — less those that died
-- themselves from a minute before the kill on (a restart is no "went on serving"). A row with
-- no host counts only when the store holds one host ($one_host): a plain log file names none.
-- unlinked: server runs on the host no source ties to a unit, begun before the kill and writing
-- in the 6 hours before it (one may be the killed unit's, idle since: then nothing is said).
-- Parameters: $unit, $host (NULL: any), $kill, $one_host.
WITH here AS (
    SELECT unit, host FROM server_stats
    WHERE ts > $kill AND ts <= $kill + INTERVAL 10 MINUTE AND unit IS NOT NULL AND unit <> $unit
    UNION ALL
    SELECT unit, host FROM http_requests
    WHERE ts > $kill AND ts <= $kill + INTERVAL 10 MINUTE AND unit IS NOT NULL AND unit <> $unit
      AND coalesce(status, 0) < 500 AND coalesce(path, '') NOT LIKE '/health%'
),
died AS (
    SELECT unit FROM unit_events
    WHERE ts >= $kill - INTERVAL 1 MINUTE AND ts <= $kill + INTERVAL 10 MINUTE AND unit IS NOT NULL
      AND action IN ('main_exited', 'failed', 'oom_killed', 'stopping', 'stopped', 'deactivated')
    UNION ALL
    SELECT unit FROM oom_kills
    WHERE ts >= $kill - INTERVAL 1 MINUTE AND ts <= $kill + INTERVAL 10 MINUTE AND unit IS NOT NULL
)
SELECT
    EXISTS (SELECT 1 FROM server_configs WHERE unit = $unit AND ($host IS NULL OR host IS NULL OR host = $host))
    OR EXISTS (SELECT 1 FROM server_events WHERE unit = $unit AND ($host IS NULL OR host IS NULL OR host = $host))
    OR EXISTS (SELECT 1 FROM server_stats WHERE unit = $unit AND ($host IS NULL OR host IS NULL OR host = $host))
    OR EXISTS (SELECT 1 FROM http_requests WHERE unit = $unit AND ($host IS NULL OR host IS NULL OR host = $host))
        AS own,
    (SELECT list(DISTINCT unit ORDER BY unit) FROM here
     WHERE (host = $host OR (host IS NULL AND $one_host) OR ($host IS NULL AND $one_host))
       AND unit NOT IN (SELECT unit FROM died)) AS others_after,
    (SELECT count(*) FROM unit_links
     WHERE unit IS NULL AND ($host IS NULL OR host IS NULL OR host = $host)
       AND first_ts <= $kill + INTERVAL 2 MINUTE AND last_ts >= $kill - INTERVAL 6 HOUR) AS unlinked;
