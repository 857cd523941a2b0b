-- The last line any SGLang table holds for a unit before a time (its last sign of life).
-- Parameters: $unit, $before.
SELECT max(ts) AS ts FROM (
    SELECT max(ts) AS ts FROM sglang_batches WHERE unit = $unit AND ts <= $before
    UNION ALL SELECT max(ts) FROM sglang_events WHERE unit = $unit AND ts <= $before
    UNION ALL SELECT max(ts) FROM http_requests WHERE unit = $unit AND ts <= $before
) t
