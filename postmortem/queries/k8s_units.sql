-- k8s_units: a pod's container known only by its cgroup takes its name.
--
-- The kernel's OOM record names a pod's container by its cgroup alone; the parser makes that
-- k8s:pod-<uid 8>/<container id 12>. A Pod object's status (containerID, lastState's
-- containerID), containerd's CreateContainer lines and CRI-O's "Started container" lines map
-- container ids to k8s:<namespace>/<pod>/<container> (rows of containers). Every oom_kills and
-- k8s_events row of such an id takes that unit; a runtime line that names only the id
-- (TaskOOM, TaskExit, kubelet's PLEG) takes it too, and a line about a pod of one container
-- that container's.
-- No parameters; idempotent.

CREATE OR REPLACE TEMP TABLE k8s_ids AS
SELECT container_id, arg_max(unit, (coalesce(ts, TIMESTAMPTZ '1970-01-01 00:00:00+00'), source_id, line_no)) AS unit
FROM containers
WHERE unit LIKE 'k8s:%/%/%'
GROUP BY container_id;

UPDATE oom_kills SET unit = m.unit
FROM k8s_ids m
WHERE oom_kills.unit LIKE 'k8s:pod-%/%'
  AND oom_kills.unit = 'k8s:pod-' || split_part(split_part(oom_kills.unit, ':pod-', 2), '/', 1) || '/' || left(m.container_id, 12);

UPDATE k8s_events SET unit = m.unit, namespace = coalesce(k8s_events.namespace, split_part(substr(m.unit, 5), '/', 1)),
       pod = coalesce(k8s_events.pod, split_part(m.unit, '/', 2)),
       container = coalesce(k8s_events.container, split_part(m.unit, '/', 3))
FROM k8s_ids m
WHERE k8s_events.unit IS NULL AND k8s_events.container_id = m.container_id;

-- A line about a pod, not one of its containers (kubelet's readiness, an eviction), is its
-- container's when the pod has one container (as far as the data names them).
CREATE OR REPLACE TEMP TABLE k8s_only AS
SELECT split_part(substr(unit, 5), '/', 1) AS namespace, split_part(unit, '/', 2) AS pod, min(unit) AS unit
FROM (SELECT unit FROM k8s_ids UNION SELECT unit FROM k8s_containers)
GROUP BY 1, 2
HAVING count(DISTINCT unit) = 1;

UPDATE k8s_events SET unit = m.unit, container = split_part(m.unit, '/', 3)
FROM k8s_only m
WHERE k8s_events.unit IS NULL AND k8s_events.namespace = m.namespace AND k8s_events.pod = m.pod;

DROP TABLE k8s_ids;
DROP TABLE k8s_only;
