-- victim_serving: whether the killed unit ran a server, and whether the host's servers went on
-- serving after the kill (postmortem/analysis/facts.py, Incident.serving).
-- own: whether any server row (statistics, events, configurations, requests) is the unit's;
-- others_after: the other units whose servers logged statistics or requests on the host in the
-- 10 minutes after the kill; unlinked: server runs on the host no source ties to a unit that
-- were writing around the kill (one may be the killed unit's: then nothing can be said).
-- Parameters: $unit, $host (NULL: any), $kill.
SELECT
    EXISTS (SELECT 1 FROM server_configs WHERE unit = $unit AND ($host IS NULL OR host IS NULL OR host = $host))
    OR EXISTS (SELECT 1 FROM server_events WHERE unit = $unit AND ($host IS NULL OR host IS NULL OR host = $host))
    OR EXISTS (SELECT 1 FROM server_stats WHERE unit = $unit AND ($host IS NULL OR host IS NULL OR host = $host))
    OR EXISTS (SELECT 1 FROM http_requests WHERE unit = $unit AND ($host IS NULL OR host IS NULL OR host = $host))
        AS own,
    (SELECT list(DISTINCT unit ORDER BY unit) FROM (
        SELECT unit, host FROM server_stats
        WHERE ts > $kill AND ts <= $kill + INTERVAL 10 MINUTE AND unit IS NOT NULL AND unit <> $unit
        UNION ALL
        SELECT unit, host FROM http_requests
        WHERE ts > $kill AND ts <= $kill + INTERVAL 10 MINUTE AND unit IS NOT NULL AND unit <> $unit
     ) WHERE $host IS NULL OR host IS NULL OR host = $host) AS others_after,
    (SELECT count(*) FROM unit_links
     WHERE unit IS NULL AND ($host IS NULL OR host IS NULL OR host = $host)
       AND first_ts <= $kill + INTERVAL 2 MINUTE AND last_ts >= $kill - INTERVAL 10 MINUTE) AS unlinked;
