-- Downtime per incident (time to recovery), and the ready that ended it. Parameters: $since, $until.
SELECT incident_id, ts, host, unit, cause, downtime_s, recovered_ts, recovery_unit, fallback_unit
FROM incidents
WHERE ts IS NOT NULL AND ($since IS NULL OR ts >= $since) AND ($until IS NULL OR ts <= $until)
ORDER BY ts, incident_id
