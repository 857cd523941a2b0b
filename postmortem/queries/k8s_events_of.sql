-- k8s_events_of: what Kubernetes said about a pod's container (or its pod, or its node) around a
-- death: from $from to $to, its Events, kubelet's and the runtime's lines, its terminations.
-- Parameters: $unit, $namespace, $pod, $host, $from, $to.
SELECT e.kind, e.origin, e.ts, e.first_ts, e.reason, e.probe, e.exit_code, e.count, e.message,
       e.source_id, e.line_no
FROM k8s_events e
WHERE (e.unit = $unit
       OR (e.unit IS NULL AND e.namespace = $namespace AND e.pod = $pod)
       OR (e.pod IS NULL AND e.host = $host))
  AND e.ts BETWEEN $from AND $to
ORDER BY e.ts, e.source_id, e.line_no
