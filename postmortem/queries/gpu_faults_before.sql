-- NVIDIA Xid events of a host that mean a GPU failed (hardware, driver or firmware), in the
-- minutes before a death, the earliest first. The same event in two sources (the journal's
-- kernel lines and a dmesg file) is one: the first copy of each (GPU, Xid, second) is kept.
-- Parameters: $host, $from, $to (TIMESTAMPTZ), $xids (list of Xid numbers).
SELECT ts, source_id, line_no, host, bus_id, xid, pid, process_name, message
FROM gpu_xids
WHERE ts >= $from AND ts <= $to AND list_contains($xids, xid)
  AND ($host IS NULL OR host IS NULL OR host = $host)
QUALIFY row_number() OVER (
    PARTITION BY coalesce(bus_id, ''), xid, date_trunc('second', ts) ORDER BY source_id, line_no) = 1
ORDER BY ts, source_id, line_no
