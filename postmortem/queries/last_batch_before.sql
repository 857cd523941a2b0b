-- The last statistics line of a unit's server before a time (requests in flight and queued), of the
-- run that was killed (not of the one before it: a run that died loading served nothing).
-- Parameters: $unit (NULL: the rows of $source, a server
-- log nothing ties to a unit), $source, $before, $host, $since (that run's start, or NULL).
SELECT ts, engine, running_req, queue_req, token_usage, gen_throughput, source_id, line_no
FROM server_stats
WHERE (unit = $unit OR ($unit IS NULL AND unit IS NULL AND source_id = $source)) AND ts <= $before AND ts >= $before - INTERVAL 2 HOUR
  AND ($host IS NULL OR host IS NULL OR host = $host) AND ($since IS NULL OR ts >= $since)
ORDER BY ts DESC, line_no DESC
LIMIT 1
