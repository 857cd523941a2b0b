-- One incident. Parameter: $incident_id.
SELECT incident_id, ts, host, unit, cause, recovered_ts FROM incidents WHERE incident_id = $incident_id
