-- The configuration a unit ran with most recently before a time. Parameters: $unit, $before, $host.
SELECT * FROM server_configs
WHERE unit = $unit AND (ts IS NULL OR ts <= $before) AND ($host IS NULL OR host IS NULL OR host = $host)
ORDER BY ts DESC NULLS LAST, line_no DESC
LIMIT 1
