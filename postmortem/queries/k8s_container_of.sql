-- k8s_container_of: a pod's container as its Pod object showed it last (spec and status).
-- Parameters: $unit (k8s:<namespace>/<pod>/<container>).
SELECT c.*, s.path
FROM k8s_containers c JOIN sources s ON s.source_id = c.source_id
WHERE c.unit = $unit
ORDER BY c.ts DESC NULLS LAST, c.source_id DESC, c.line_no DESC
LIMIT 1
