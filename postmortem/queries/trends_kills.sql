-- Incidents per host, unit and cause per day and per ISO week (UTC days). Parameters: $since, $until.
SELECT CAST(date_trunc('day', ts) AS DATE) AS day,
       CAST(date_trunc('week', ts) AS DATE) AS week,
       coalesce(host, '—') AS host, coalesce(unit, '(no unit)') AS unit, cause, count(*) AS incidents
FROM incidents
WHERE ts IS NOT NULL AND ($since IS NULL OR ts >= $since) AND ($until IS NULL OR ts <= $until)
GROUP BY ALL
ORDER BY day, host, unit, cause
