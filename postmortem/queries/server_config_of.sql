-- The configuration a unit ran with most recently before a time. Parameters: $unit (NULL: the rows of $source, a server
-- log nothing ties to a unit), $source, $before, $host.
SELECT * FROM server_configs
WHERE (unit = $unit OR ($unit IS NULL AND unit IS NULL AND source_id = $source)) AND (ts IS NULL OR ts <= $before) AND ($host IS NULL OR host IS NULL OR host = $host)
ORDER BY ts DESC NULLS LAST, line_no DESC
LIMIT 1
