-- Per-GPU used memory just before a kill and how it fell in the seconds after it: the lowest
-- sample after it (and when), and the first sample that shows the memory released — at or below
-- $freed_mib, or 5 % of the memory before (a CUDA context and a driver's reserve stay).
-- A sample stamped in the kill's own second counts as after it: nvidia-smi's loop stamps whole
-- seconds, and a GPU it shows freed then was freed by the death (taken as before, the GPU read
-- as idle before the kill and its release as unknown).
-- Parameters: $host, $kill, $after_s (seconds to look after the kill), $freed_mib (threshold).
WITH s AS (
    SELECT coalesce(bus_id, gpu_uuid, CAST(gpu_index AS VARCHAR)) AS gpu, gpu_index, ts, mem_used_mib,
           source_id, line_no
    FROM gpu_samples
    WHERE ts >= $kill - INTERVAL 10 MINUTE AND ts <= $kill + to_seconds($after_s)
      AND ($host IS NULL OR host IS NULL OR host = $host)
),
b AS (
    SELECT gpu, arg_max(mem_used_mib, ts) FILTER (WHERE ts < date_trunc('second', $kill)) AS before_mib
    FROM s
    GROUP BY gpu
),
f AS (
    SELECT s.*, b.before_mib,
           s.ts >= date_trunc('second', $kill) AND (s.mem_used_mib <= $freed_mib OR s.mem_used_mib <= 0.05 * b.before_mib) AS low
    FROM s JOIN b USING (gpu)
)
SELECT gpu, min(gpu_index) AS gpu_index,
       any_value(before_mib) AS before_mib,
       max(ts) FILTER (WHERE ts < date_trunc('second', $kill)) AS before_ts,
       min(mem_used_mib) FILTER (WHERE ts >= date_trunc('second', $kill)) AS min_after_mib,
       arg_min(ts, (mem_used_mib, ts)) FILTER (WHERE ts >= date_trunc('second', $kill)) AS min_after_ts,
       arg_min(source_id, (mem_used_mib, ts, line_no)) FILTER (WHERE ts >= date_trunc('second', $kill)) AS min_source_id,
       arg_min(line_no, (mem_used_mib, ts, line_no)) FILTER (WHERE ts >= date_trunc('second', $kill)) AS min_line_no,
       min(ts) FILTER (WHERE low) AS freed_ts,
       arg_min(source_id, (ts, line_no)) FILTER (WHERE low) AS freed_source_id,
       arg_min(line_no, (ts, line_no)) FILTER (WHERE low) AS freed_line_no,
       min(ts) FILTER (WHERE ts >= date_trunc('second', $kill)) AS first_after_ts
FROM f
GROUP BY gpu
ORDER BY gpu_index NULLS LAST, gpu
