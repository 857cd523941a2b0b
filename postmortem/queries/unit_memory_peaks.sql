-- The memory peaks systemd reported for a unit's earlier runs ("Consumed …, 603.4G memory peak"
-- when a run ends), latest first. Parameters: $unit, $before, $host.
SELECT ts, memory_peak_bytes, source_id, line_no
FROM unit_events
WHERE unit = $unit AND action = 'consumed' AND memory_peak_bytes IS NOT NULL AND ts < $before
  AND ($host IS NULL OR host IS NULL OR host = $host)
ORDER BY ts DESC, line_no DESC
LIMIT 5
