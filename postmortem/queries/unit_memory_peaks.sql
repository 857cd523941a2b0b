-- The memory peaks systemd reported for a unit's earlier runs ("Consumed …, 603.4G memory peak"
-- when a run ends), latest first: those before the unit's last start before $before, so the
-- killed run's own (systemd says it as the unit dies, in the kill's second when it stamps whole
-- seconds, or before the kill on a clock a second behind) is never its "previous run"; with no
-- start in the data before $before, none.
-- Parameters: $unit, $before, $host.
WITH last_start AS (
    SELECT max(ts) AS ts
    FROM unit_events
    WHERE unit = $unit AND action IN ('starting', 'started') AND ts IS NOT NULL AND ts < $before
      AND ($host IS NULL OR host IS NULL OR host = $host)
)
SELECT e.ts, e.memory_peak_bytes, e.source_id, e.line_no
FROM unit_events e, last_start s
WHERE e.unit = $unit AND e.action = 'consumed' AND e.memory_peak_bytes IS NOT NULL AND e.ts <= s.ts
  AND ($host IS NULL OR e.host IS NULL OR e.host = $host)
ORDER BY e.ts DESC, e.line_no DESC
LIMIT 5
