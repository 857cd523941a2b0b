-- What systemd said a unit's run consumed when it ended ("Consumed …, 402.7G memory peak, 7.8G
-- memory swap peak"): the first such line in the minutes after a kill. Parameters: $unit, $kill, $host.
SELECT ts, memory_peak_bytes, message, source_id, line_no
FROM unit_events
WHERE unit = $unit AND action = 'consumed' AND memory_peak_bytes IS NOT NULL
  AND ts >= $kill - INTERVAL 5 SECOND AND ts <= $kill + INTERVAL 15 MINUTE
  AND ($host IS NULL OR host IS NULL OR host = $host)
ORDER BY ts, line_no
LIMIT 1
