-- Downtime per incident (time to recovery), and the ready that ended it: not of a unit that ran
-- no server while the host's servers went on (serving false: a neighbour, no outage of
-- serving; its kill is still counted among the kills). Parameters: $since, $until.
SELECT incident_id, ts, host, unit, cause, downtime_s, recovered_ts, recovery_unit, fallback_unit
FROM incidents
WHERE ts IS NOT NULL AND ($since IS NULL OR ts >= $since) AND ($until IS NULL OR ts <= $until)
  AND serving IS NOT FALSE
ORDER BY ts, incident_id
