-- Per-GPU used memory just before a kill and how it fell in the seconds after it.
-- Parameters: $host, $kill, $after_s (seconds to look after the kill), $freed_mib (threshold).
WITH s AS (
    SELECT coalesce(bus_id, gpu_uuid, CAST(gpu_index AS VARCHAR)) AS gpu, gpu_index, ts, mem_used_mib,
           source_id, line_no
    FROM gpu_samples
    WHERE ts >= $kill - INTERVAL 10 MINUTE AND ts <= $kill + to_seconds($after_s)
      AND ($host IS NULL OR host IS NULL OR host = $host)
)
SELECT gpu, min(gpu_index) AS gpu_index,
       arg_max(mem_used_mib, ts) FILTER (WHERE ts <= $kill) AS before_mib,
       max(ts) FILTER (WHERE ts <= $kill) AS before_ts,
       min(mem_used_mib) FILTER (WHERE ts > $kill) AS min_after_mib,
       min(ts) FILTER (WHERE ts > $kill AND mem_used_mib <= $freed_mib) AS freed_ts,
       arg_min(source_id, (ts, line_no)) FILTER (WHERE ts > $kill AND mem_used_mib <= $freed_mib) AS freed_source_id,
       arg_min(line_no, (ts, line_no)) FILTER (WHERE ts > $kill AND mem_used_mib <= $freed_mib) AS freed_line_no,
       min(ts) FILTER (WHERE ts > $kill) AS first_after_ts
FROM s
GROUP BY gpu
ORDER BY gpu_index NULLS LAST, gpu
