-- The first sample at which each of the given GPUs held no more than $freed_mib, between $from
-- and $to, seen within $gap_s of a sample before it: when memory left behind after a kill was
-- finally freed. A first low sample after a longer silence (a monitor that hung, a reboot)
-- tells only that it was freed some time in that silence, not when: it is not taken.
-- Parameters: $host, $from, $to, $freed_mib, $gap_s, $gpus (bus ids, UUIDs or indexes as text;
-- NULL: every GPU of the host).
WITH s AS (
    SELECT coalesce(bus_id, gpu_uuid, CAST(gpu_index AS VARCHAR)) AS gpu, gpu_index, ts, mem_used_mib,
           source_id, line_no,
           lag(ts) OVER (PARTITION BY coalesce(bus_id, gpu_uuid, CAST(gpu_index AS VARCHAR)) ORDER BY ts, line_no)
               AS prev_ts
    FROM gpu_samples
    WHERE ts >= $from AND ts <= $to
      AND ($host IS NULL OR host IS NULL OR host = $host)
      AND ($gpus IS NULL OR list_contains($gpus, bus_id) OR list_contains($gpus, gpu_uuid)
           OR list_contains($gpus, CAST(gpu_index AS VARCHAR)))
), first_low AS (
    SELECT gpu, min(gpu_index) AS gpu_index,
           arg_min(ts, (ts, line_no)) AS freed_ts,
           arg_min(prev_ts, (ts, line_no)) AS prev_ts,
           arg_min(source_id, (ts, line_no)) AS source_id,
           arg_min(line_no, (ts, line_no)) AS line_no
    FROM s
    WHERE ts > $from AND mem_used_mib <= $freed_mib
    GROUP BY gpu
)
SELECT gpu, gpu_index, freed_ts, source_id, line_no
FROM first_low
WHERE prev_ts IS NOT NULL AND freed_ts - prev_ts <= to_seconds($gap_s)
ORDER BY gpu_index NULLS LAST, gpu
