-- The zone each host's sources were read in (sources.tz), most sources first: a host's local
-- time in its reports. A source's host is its own (--host, the configuration, a merged export)
-- or the one its systemd and kernel rows name (a journal names its host on every line); a
-- fleet store holds hosts in several zones.
WITH hosts AS (
    SELECT source_id, host FROM sources WHERE host IS NOT NULL
    UNION SELECT DISTINCT source_id, host FROM unit_events WHERE host IS NOT NULL
    UNION SELECT DISTINCT source_id, host FROM oom_kills WHERE host IS NOT NULL
)
SELECT h.host, s.tz, count(DISTINCT s.source_id) AS sources
FROM hosts h
JOIN sources s ON s.source_id = h.source_id
WHERE s.tz IS NOT NULL AND s.status = 'complete'
GROUP BY h.host, s.tz
ORDER BY h.host, sources DESC, s.tz
