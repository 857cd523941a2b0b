-- container_units: a container's cgroup is the container's unit.
--
-- The kernel and systemd name a container by its cgroup: docker-<id>.scope (Docker and containerd
-- under systemd's cgroup driver; "libcontainer container <id>" in older text renderings of its
-- start), /docker/<id> (the cgroupfs driver), the bare id (the cpuset of old kernels' OOM
-- records), libpod-<id>.scope (podman), cri-containerd-<id>.scope and crio-<id>.scope (a Kubernetes
-- pod's container under systemd's cgroup driver, in systemd's own lines). The container's own lines, relayed by its runtime, name
-- it by CONTAINER_ID_FULL and CONTAINER_NAME (containers). Every unit_events and oom_kills row
-- whose unit is one of those cgroup names of a known container takes the container's unit
-- (docker:<name>), so that its start, its OOM kill and its server's lines are one unit's. A
-- container seen under several names takes the one its lines carried last.
-- No parameters; idempotent (a renamed row no longer matches).

CREATE OR REPLACE TEMP TABLE container_scope_units AS
WITH latest AS (
    SELECT container_id, arg_max(unit, (ts, source_id, line_no)) AS unit
    FROM containers
    GROUP BY container_id
)
SELECT DISTINCT cgroup_unit, unit
FROM latest,
     unnest(['docker-' || container_id || '.scope', 'libpod-' || container_id || '.scope',
             '/docker/' || container_id, container_id,
             'libcontainer container ' || container_id, 'cri-containerd-' || container_id || '.scope',
             'crio-' || container_id || '.scope']) AS t(cgroup_unit)
ORDER BY cgroup_unit;

UPDATE unit_events SET unit = m.unit
FROM container_scope_units m
WHERE unit_events.unit = m.cgroup_unit;

UPDATE oom_kills SET unit = m.unit
FROM container_scope_units m
WHERE oom_kills.unit = m.cgroup_unit;

DROP TABLE container_scope_units;

-- A container no line names (a text journal carries no CONTAINER_* fields; its output was saved
-- by `docker logs`) is still a container, not a scope nobody restarts: its scope's start, end
-- and OOM kill are the unit docker:<short id> (podman:<short id> for libpod-<id>.scope).
UPDATE unit_events
SET unit = CASE WHEN unit LIKE 'libpod-%' THEN 'podman:' ELSE 'docker:' END
           || substr(regexp_extract(unit, '[0-9a-f]{64}'), 1, 12)
WHERE regexp_full_match(unit, '(docker|libpod)-[0-9a-f]{64}\.scope');

UPDATE oom_kills
SET unit = CASE WHEN unit LIKE 'libpod-%' THEN 'podman:' ELSE 'docker:' END
           || substr(regexp_extract(unit, '[0-9a-f]{64}'), 1, 12)
WHERE regexp_full_match(unit, '(docker|libpod)-[0-9a-f]{64}\.scope');
