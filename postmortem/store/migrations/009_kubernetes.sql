-- postmortem schema, version 9: Kubernetes. k8s_containers holds each pod container as its Pod
-- object or `kubectl describe pod` showed it (spec: limits, probes, /dev/shm; status: state, the
-- previous termination, restarts); k8s_events what Kubernetes said about pods, containers and
-- nodes (Events, kubelet and container-runtime journal lines, terminations from a status), with
-- a normalised kind. A pod's container is the unit k8s:<namespace>/<pod>/<container>.

CREATE TABLE k8s_containers (
    source_id            INTEGER NOT NULL,
    line_no              BIGINT NOT NULL,
    ts                   TIMESTAMPTZ,
    host                 VARCHAR,
    namespace            VARCHAR NOT NULL,
    pod                  VARCHAR NOT NULL,
    pod_uid              VARCHAR,
    container            VARCHAR NOT NULL,
    container_id         VARCHAR,
    unit                 VARCHAR NOT NULL,
    owner                VARCHAR,
    qos_class            VARCHAR,
    phase                VARCHAR,
    pod_reason           VARCHAR,
    restart_count        INTEGER,
    ready                BOOLEAN,
    state                VARCHAR,
    state_reason         VARCHAR,
    state_started        TIMESTAMPTZ,
    last_reason          VARCHAR,
    last_exit_code       INTEGER,
    last_started         TIMESTAMPTZ,
    last_finished        TIMESTAMPTZ,
    last_container_id    VARCHAR,
    last_message         VARCHAR,
    limit_memory_bytes   BIGINT,
    request_memory_bytes BIGINT,
    gpus                 INTEGER,
    startup_probe        VARCHAR,
    liveness_probe       VARCHAR,
    readiness_probe      VARCHAR,
    shm_medium_memory    BOOLEAN,
    shm_size_bytes       BIGINT
);

CREATE TABLE k8s_events (
    source_id    INTEGER NOT NULL,
    line_no      BIGINT NOT NULL,
    ts           TIMESTAMPTZ,
    ts_raw       VARCHAR,
    first_ts     TIMESTAMPTZ,
    host         VARCHAR,
    origin       VARCHAR NOT NULL,
    kind         VARCHAR NOT NULL,
    namespace    VARCHAR,
    pod          VARCHAR,
    pod_uid      VARCHAR,
    container    VARCHAR,
    container_id VARCHAR,
    unit         VARCHAR,
    reason       VARCHAR,
    probe        VARCHAR,
    exit_code    INTEGER,
    count        INTEGER,
    message      VARCHAR NOT NULL
);
