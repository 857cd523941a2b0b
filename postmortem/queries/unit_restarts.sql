-- Restart jobs systemd scheduled for a unit in a window. Parameters: $unit, $since, $until, $host.
SELECT ts, restart_count, source_id, line_no, message
FROM unit_events
WHERE unit = $unit AND action = 'restart_scheduled' AND ts >= $since AND ts <= $until
  AND ($host IS NULL OR host IS NULL OR host = $host)
ORDER BY ts, line_no
