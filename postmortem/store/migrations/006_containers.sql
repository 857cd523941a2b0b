-- postmortem schema, version 6: containers, the containers whose output a journal carries
-- (Docker's journald log driver, podman's conmon: CONTAINER_ID_FULL, CONTAINER_NAME,
-- IMAGE_NAME). Their lines are the container's unit (docker:<name>), not docker.service; the
-- analysis gives the container's cgroup scope (docker-<id>.scope) that unit too. A journal
-- ingested before version 6 keeps its container lines under docker.service until it is
-- ingested into a new store.

CREATE TABLE containers (
    source_id     INTEGER NOT NULL,
    line_no       BIGINT NOT NULL,
    ts            TIMESTAMPTZ,
    host          VARCHAR,
    runtime       VARCHAR NOT NULL,
    container_id  VARCHAR NOT NULL,
    name          VARCHAR NOT NULL,
    image         VARCHAR,
    unit          VARCHAR NOT NULL
);
