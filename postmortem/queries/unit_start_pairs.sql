-- systemd's start of a unit and its server's configuration line (server_configs) (normally 1–10 s
-- later) on the same host: pairs used to infer the clock offset of server log files.
SELECT e.source_id, e.line_no, e.ts AS server_ts, u.source_id AS reference_source_id,
       u.ts AS unit_ts, e.unit
FROM server_events e
JOIN unit_events u
  ON u.unit = e.unit AND u.action IN ('starting', 'started') AND u.source_id <> e.source_id
 AND (e.host IS NULL OR u.host IS NULL OR e.host = u.host)
 AND abs(epoch(e.ts) - epoch(u.ts)) < 14 * 3600 + 120
WHERE e.kind = 'server_args' AND e.ts IS NOT NULL AND u.ts IS NOT NULL
ORDER BY e.source_id, e.line_no, u.ts
