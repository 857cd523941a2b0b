-- The incidents the last build stored, with the columns it filled from their facts: kept for
-- the incidents a windowed build does not analyse again.
SELECT incident_id, host, unit, ts, restart_count, running_at_kill, queued_at_kill,
       last_activity_ts, gpu_memory_freed, summary, serving
FROM incidents
WHERE ts IS NOT NULL
ORDER BY incident_id
