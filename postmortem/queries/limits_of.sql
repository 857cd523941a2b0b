-- The limits a server settled on at startup (e.g. "max_total_num_tokens=…, max_running_requests=…"
-- line), the last before a time within a run. Parameters: $unit (NULL: the rows of $source, a server
-- log nothing ties to a unit), $source, $since, $before, $host.
SELECT CAST(json_extract(detail, '$.max_running_requests') AS BIGINT) AS max_running_requests,
       num_tokens AS max_total_num_tokens, source_id, line_no
FROM server_events
WHERE kind = 'limits' AND (unit = $unit OR ($unit IS NULL AND unit IS NULL AND source_id = $source)) AND ts <= $before AND ($since IS NULL OR ts >= $since)
  AND ($host IS NULL OR host IS NULL OR host = $host)
ORDER BY ts DESC, line_no DESC
LIMIT 1
