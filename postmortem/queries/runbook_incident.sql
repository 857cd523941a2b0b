-- runbook_incident: what a runbook needs of one incident: the killed unit, the unit that brought
-- service back (the fallback when it was another), and the host.
-- Parameter: $incident_id.
SELECT incident_id, ts, host, unit, cause, fallback_unit, recovery_unit, recovered_ts, downtime_s
FROM incidents
WHERE incident_id = $incident_id
