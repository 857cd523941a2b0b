-- GPU memory per GPU in time buckets (the highest and the lowest sample of each). Parameters: $host, $from, $to, $bucket_s (seconds),
-- $origin (a bucket starts there: the kill), $gpus (the unit's GPUs by bus id, UUID or index;
-- NULL: every GPU of the host).
SELECT time_bucket(to_microseconds(CAST($bucket_s * 1000000 AS BIGINT)), ts, $origin) AS bucket,
       coalesce(bus_id, gpu_uuid, CAST(gpu_index AS VARCHAR)) AS gpu,
       min(gpu_index) AS gpu_index,
       max(mem_used_mib) AS used_mib,
       min(mem_used_mib) AS low_mib,
       max(mem_total_mib) AS total_mib,
       avg(util_gpu_pct) AS util_pct,
       count(*) AS samples
FROM gpu_samples
WHERE ts >= $from AND ts <= $to AND ($host IS NULL OR host IS NULL OR host = $host)
  AND ($gpus IS NULL OR list_contains($gpus, bus_id) OR list_contains($gpus, gpu_uuid)
       OR list_contains($gpus, CAST(gpu_index AS VARCHAR)))
GROUP BY ALL
ORDER BY bucket, gpu_index NULLS LAST, gpu
