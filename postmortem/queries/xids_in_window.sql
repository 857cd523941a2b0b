-- NVIDIA Xid events in a window, and those whose time could not be told. The same event in two
-- sources (the journal's kernel lines and a dmesg file) is listed once: per GPU, Xid and second,
-- the copy that names its host (then the first source).
-- Parameters: $since, $until (TIMESTAMPTZ or NULL).
SELECT ts, source_id, line_no, host, bus_id, xid, pid, process_name, message
FROM gpu_xids
WHERE ts IS NULL
   OR (($since IS NULL OR ts >= $since) AND ($until IS NULL OR ts <= $until))
QUALIFY ts IS NULL OR row_number() OVER (
    PARTITION BY coalesce(bus_id, ''), xid, date_trunc('second', ts)
    ORDER BY host NULLS LAST, source_id, line_no) = 1
ORDER BY ts NULLS LAST, source_id, line_no
