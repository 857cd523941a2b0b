-- What systemd-oomd logged in the seconds before its kill ("Considered N cgroups for killing, top
-- candidates were:" and, per candidate, "Path: …", "Current Memory Usage: …").
-- Parameters: $host, $kill.
SELECT ts, trim(message) AS message, source_id, line_no
FROM journal_entries
WHERE ident = 'systemd-oomd' AND ts >= $kill - INTERVAL 10 SECOND AND ts <= $kill
  AND ($host IS NULL OR host IS NULL OR host = $host)
ORDER BY ts, source_id, line_no
