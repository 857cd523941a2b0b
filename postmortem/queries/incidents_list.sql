-- Incidents found by the last build, in time order. Parameters: $since, $until.
SELECT incident_id, ts, host, unit, cause, confidence, killer, victim_pid, victim_comm, victims,
       downtime_s, recovered_ts, recovery_unit, fallback_unit, restart_count, summary
FROM incidents
WHERE ($since IS NULL OR ts >= $since) AND ($until IS NULL OR ts <= $until)
ORDER BY ts, incident_id
