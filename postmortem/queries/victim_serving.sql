-- victim_serving: whether the killed unit ran a server, and whether the host's servers went on
-- serving after the kill (postmortem/analysis/facts.py, Incident.serving).
-- own: the unit's server rows at any time (statistics, events, configurations, requests);
-- others_after: the other units whose servers with statistics or requests on the host in the 10 minutes
-- after the kill; unlinked: server runs on the host no source ties to a unit that were writing
-- around the kill (one may be the killed unit's: then nothing can be said).
-- Parameters: $unit, $host (NULL: any), $kill.
WITH rows AS (
    SELECT unit, host, ts FROM server_stats WHERE unit IS NOT NULL
    UNION ALL SELECT unit, host, ts FROM server_events WHERE unit IS NOT NULL
    UNION ALL SELECT unit, host, ts FROM server_configs WHERE unit IS NOT NULL
    UNION ALL SELECT unit, host, ts FROM http_requests WHERE unit IS NOT NULL
),
near AS (
    SELECT * FROM rows
    WHERE ($host IS NULL OR host IS NULL OR host = $host)
)
SELECT
    (SELECT count(*) FROM near WHERE unit = $unit) AS own,
    (SELECT list(DISTINCT unit ORDER BY unit) FROM near
     WHERE unit <> $unit AND ts > $kill AND ts <= $kill + INTERVAL 10 MINUTE) AS others_after,
    (SELECT count(*) FROM unit_links
     WHERE unit IS NULL AND ($host IS NULL OR host IS NULL OR host = $host)
       AND first_ts <= $kill + INTERVAL 2 MINUTE AND last_ts >= $kill - INTERVAL 10 MINUTE) AS unlinked;
