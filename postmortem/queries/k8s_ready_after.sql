-- k8s_ready_after: when a pod's container was ready again after a death, as kubelet saw it (its
-- readiness probe passing: "SyncLoop (probe)" probe="readiness" status="ready"), and that line.
-- Parameters: $unit, $after (TIMESTAMPTZ).
SELECT ts, source_id, line_no
FROM k8s_events
WHERE unit = $unit AND kind = 'ready' AND ts > $after
ORDER BY ts
LIMIT 1
