-- The configuration a unit ran with most recently before a time. Parameters: $unit, $before.
SELECT * FROM server_configs
WHERE unit = $unit AND (ts IS NULL OR ts <= $before)
ORDER BY ts DESC NULLS LAST, line_no DESC
LIMIT 1
