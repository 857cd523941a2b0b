-- The GPUs nvidia-smi listed on a host around a time, by index, with every name a row may use
-- for them (bus id, UUID). Parameters: $host, $from, $to.
SELECT gpu_index, list(DISTINCT bus_id) FILTER (WHERE bus_id IS NOT NULL) AS bus_ids,
       list(DISTINCT gpu_uuid) FILTER (WHERE gpu_uuid IS NOT NULL) AS uuids
FROM gpu_samples
WHERE gpu_index IS NOT NULL AND ts >= $from AND ts <= $to
  AND ($host IS NULL OR host IS NULL OR host = $host)
GROUP BY gpu_index
ORDER BY gpu_index
