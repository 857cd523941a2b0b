-- HiCache's host-memory pools a unit's run allocated before a kill (one line per rank:
-- "Allocating N GB host memory for hierarchical KV cache"). Parameters: $unit (NULL: the rows of $source, a server
-- log nothing ties to a unit), $source, $since (the
-- run's start, or NULL: the hour before), $before, $host.
SELECT ts, ranks, mem_usage_gb AS gb, source_id, line_no
FROM server_events
WHERE kind = 'hicache_host_alloc' AND (unit = $unit OR ($unit IS NULL AND unit IS NULL AND source_id = $source)) AND ts <= $before
  AND ts >= coalesce($since, $before - INTERVAL 1 HOUR)
  AND ($host IS NULL OR host IS NULL OR host = $host)
ORDER BY ts, source_id, line_no
