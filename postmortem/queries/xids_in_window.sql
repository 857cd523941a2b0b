-- NVIDIA Xid events in a window, and those whose time could not be told.
-- Parameters: $since, $until (TIMESTAMPTZ or NULL).
SELECT ts, source_id, line_no, host, bus_id, xid, pid, process_name, message
FROM gpu_xids
WHERE ts IS NULL
   OR (($since IS NULL OR ts >= $since) AND ($until IS NULL OR ts <= $until))
ORDER BY ts NULLS LAST, source_id, line_no
