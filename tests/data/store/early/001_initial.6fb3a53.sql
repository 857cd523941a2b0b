-- postmortem schema, version 1. Column names and the columns documented in docs/schema.md are a
-- public contract: add columns in later migrations, never rename these.
-- Every ts column is UTC; ts_raw keeps the text as printed; ts_inferred says what was assumed.

CREATE SEQUENCE IF NOT EXISTS source_id_seq START 1;

CREATE TABLE sources (
    source_id      INTEGER PRIMARY KEY,
    path           VARCHAR NOT NULL,
    format         VARCHAR NOT NULL,
    sha256         VARCHAR NOT NULL,
    bytes          BIGINT NOT NULL,
    lines          BIGINT NOT NULL,
    records        BIGINT NOT NULL,
    parse_issues   BIGINT NOT NULL,
    parsed_lines   BIGINT NOT NULL,
    ignored_lines  BIGINT NOT NULL,
    compression    VARCHAR,
    host           VARCHAR,
    tz             VARCHAR,
    file_size      BIGINT,
    file_mtime     TIMESTAMPTZ,
    first_ts       TIMESTAMPTZ,
    last_ts        TIMESTAMPTZ,
    notes          VARCHAR,
    ingested_at    TIMESTAMPTZ NOT NULL
);

CREATE TABLE parse_issues (
    source_id  INTEGER NOT NULL,
    line_no    BIGINT NOT NULL,
    reason     VARCHAR NOT NULL,
    excerpt    VARCHAR,
    unparsed   BOOLEAN NOT NULL
);

CREATE TABLE journal_entries (
    source_id    INTEGER NOT NULL,
    line_no      BIGINT NOT NULL,
    ts           TIMESTAMPTZ,
    ts_raw       VARCHAR,
    ts_inferred  VARCHAR,
    monotonic_s  DOUBLE,
    host         VARCHAR,
    ident        VARCHAR,
    pid          INTEGER,
    unit         VARCHAR,
    priority     TINYINT,
    transport    VARCHAR,
    boot_id      VARCHAR,
    message      VARCHAR
);

CREATE TABLE kernel_messages (
    source_id    INTEGER NOT NULL,
    line_no      BIGINT NOT NULL,
    ts           TIMESTAMPTZ,
    ts_raw       VARCHAR,
    ts_inferred  VARCHAR,
    monotonic_s  DOUBLE,
    host         VARCHAR,
    boot_id      VARCHAR,
    level        TINYINT,
    seq          BIGINT,
    message      VARCHAR
);

CREATE TABLE boots (
    source_id  INTEGER NOT NULL,
    line_no    BIGINT NOT NULL,
    boot_id    VARCHAR NOT NULL,
    host       VARCHAR,
    boot_ts    TIMESTAMPTZ NOT NULL,
    method     VARCHAR NOT NULL
);

CREATE TABLE unit_events (
    source_id          INTEGER NOT NULL,
    line_no            BIGINT NOT NULL,
    ts                 TIMESTAMPTZ,
    ts_raw             VARCHAR,
    ts_inferred        VARCHAR,
    host               VARCHAR,
    unit               VARCHAR NOT NULL,
    action             VARCHAR NOT NULL,
    code               VARCHAR,
    status             VARCHAR,
    result             VARCHAR,
    restart_count      INTEGER,
    cpu_s              DOUBLE,
    memory_peak_bytes  BIGINT,
    wall_s             DOUBLE,
    message            VARCHAR
);

CREATE TABLE oom_kills (
    source_id       INTEGER NOT NULL,
    line_no         BIGINT NOT NULL,
    oom_id          BIGINT NOT NULL,
    ts              TIMESTAMPTZ,
    ts_raw          VARCHAR,
    ts_inferred     VARCHAR,
    monotonic_s     DOUBLE,
    host            VARCHAR,
    killer          VARCHAR NOT NULL,
    scope           VARCHAR,
    victim_pid      INTEGER,
    victim_comm     VARCHAR,
    victim_uid      INTEGER,
    unit            VARCHAR,
    cgroup          VARCHAR,
    oom_memcg       VARCHAR,
    total_vm_kb     BIGINT,
    anon_rss_kb     BIGINT,
    file_rss_kb     BIGINT,
    shmem_rss_kb    BIGINT,
    pgtables_kb     BIGINT,
    oom_score_adj   INTEGER,
    memcg_usage_kb  BIGINT,
    memcg_limit_kb  BIGINT,
    swap_usage_kb   BIGINT,
    swap_limit_kb   BIGINT,
    invoker_comm    VARCHAR,
    invoker_pid     INTEGER,
    gfp_mask        VARCHAR,
    alloc_order     INTEGER,
    kernel_release  VARCHAR,
    free_kb         BIGINT,
    free_swap_kb    BIGINT,
    total_swap_kb   BIGINT,
    ram_pages       BIGINT,
    header_line_no  BIGINT,
    message         VARCHAR
);

CREATE TABLE oom_tasks (
    source_id        INTEGER NOT NULL,
    line_no          BIGINT NOT NULL,
    oom_id           BIGINT NOT NULL,
    pid              INTEGER NOT NULL,
    uid              BIGINT,
    tgid             INTEGER,
    total_vm_pages   BIGINT,
    rss_pages        BIGINT,
    rss_anon_pages   BIGINT,
    rss_file_pages   BIGINT,
    rss_shmem_pages  BIGINT,
    pgtables_bytes   BIGINT,
    nr_ptes          BIGINT,
    swapents         BIGINT,
    oom_score_adj    INTEGER,
    name             VARCHAR
);

CREATE TABLE server_configs (
    source_id                     INTEGER NOT NULL,
    line_no                       BIGINT NOT NULL,
    ts                            TIMESTAMPTZ,
    ts_raw                        VARCHAR,
    ts_inferred                   VARCHAR,
    host                          VARCHAR,
    unit                          VARCHAR,
    pid                           INTEGER,
    model_path                    VARCHAR,
    served_model_name             VARCHAR,
    tp_size                       INTEGER,
    dp_size                       INTEGER,
    ep_size                       INTEGER,
    mem_fraction_static           DOUBLE,
    speculative_algorithm         VARCHAR,
    speculative_draft_model_path  VARCHAR,
    speculative_num_steps         INTEGER,
    speculative_eagle_topk        INTEGER,
    speculative_num_draft_tokens  INTEGER,
    cuda_graph_max_bs             INTEGER,
    max_running_requests          INTEGER,
    context_length                INTEGER,
    chunked_prefill_size          INTEGER,
    port                          INTEGER,
    raw                           VARCHAR
);

CREATE TABLE sglang_events (
    source_id     INTEGER NOT NULL,
    line_no       BIGINT NOT NULL,
    ts            TIMESTAMPTZ,
    ts_raw        VARCHAR,
    ts_inferred   VARCHAR,
    host          VARCHAR,
    unit          VARCHAR,
    pid           INTEGER,
    ranks         VARCHAR,
    kind          VARCHAR NOT NULL,
    role          VARCHAR,
    phase         VARCHAR,
    avail_mem_gb  DOUBLE,
    mem_usage_gb  DOUBLE,
    elapsed_s     DOUBLE,
    num_tokens    BIGINT,
    exit_code     INTEGER,
    message       VARCHAR
);

CREATE TABLE sglang_batches (
    source_id         INTEGER NOT NULL,
    line_no           BIGINT NOT NULL,
    ts                TIMESTAMPTZ,
    ts_raw            VARCHAR,
    host              VARCHAR,
    unit              VARCHAR,
    pid               INTEGER,
    ranks             VARCHAR,
    phase             VARCHAR NOT NULL,
    running_req       INTEGER,
    queue_req         INTEGER,
    num_tokens        BIGINT,
    token_usage       DOUBLE,
    gen_throughput    DOUBLE,
    input_throughput  DOUBLE,
    accept_len        DOUBLE,
    accept_rate       DOUBLE,
    new_seq           INTEGER,
    new_token         BIGINT,
    cached_token      BIGINT,
    cuda_graph        BOOLEAN,
    extra             VARCHAR
);

CREATE TABLE http_requests (
    source_id     INTEGER NOT NULL,
    line_no       BIGINT NOT NULL,
    ts            TIMESTAMPTZ,
    ts_raw        VARCHAR,
    host          VARCHAR,
    unit          VARCHAR,
    pid           INTEGER,
    client        VARCHAR,
    method        VARCHAR NOT NULL,
    path          VARCHAR NOT NULL,
    http_version  VARCHAR,
    status        SMALLINT NOT NULL
);

CREATE TABLE cuda_ooms (
    source_id      INTEGER NOT NULL,
    line_no        BIGINT NOT NULL,
    ts             TIMESTAMPTZ,
    ts_raw         VARCHAR,
    host           VARCHAR,
    unit           VARCHAR,
    pid            INTEGER,
    ranks          VARCHAR,
    gpu            INTEGER,
    tried_mib      DOUBLE,
    total_mib      DOUBLE,
    free_mib       DOUBLE,
    allocated_mib  DOUBLE,
    reserved_mib   DOUBLE,
    phase          VARCHAR,
    message        VARCHAR
);

CREATE TABLE gpu_samples (
    source_id         INTEGER NOT NULL,
    line_no           BIGINT NOT NULL,
    ts                TIMESTAMPTZ,
    ts_raw            VARCHAR,
    ts_inferred       VARCHAR,
    host              VARCHAR,
    gpu_index         INTEGER,
    gpu_uuid          VARCHAR,
    bus_id            VARCHAR,
    name              VARCHAR,
    mem_used_mib      BIGINT,
    mem_total_mib     BIGINT,
    mem_free_mib      BIGINT,
    mem_reserved_mib  BIGINT,
    util_gpu_pct      DOUBLE,
    util_mem_pct      DOUBLE,
    temp_c            DOUBLE,
    power_w           DOUBLE,
    pstate            VARCHAR,
    driver_version    VARCHAR
);

CREATE TABLE gpu_processes (
    source_id     INTEGER NOT NULL,
    line_no       BIGINT NOT NULL,
    ts            TIMESTAMPTZ,
    ts_raw        VARCHAR,
    ts_inferred   VARCHAR,
    host          VARCHAR,
    gpu_index     INTEGER,
    gpu_uuid      VARCHAR,
    bus_id        VARCHAR,
    pid           INTEGER,
    process_name  VARCHAR,
    used_mib      BIGINT,
    truncated     BOOLEAN NOT NULL
);

CREATE TABLE gpu_xids (
    source_id     INTEGER NOT NULL,
    line_no       BIGINT NOT NULL,
    ts            TIMESTAMPTZ,
    ts_raw        VARCHAR,
    ts_inferred   VARCHAR,
    monotonic_s   DOUBLE,
    host          VARCHAR,
    bus_id        VARCHAR,
    xid           INTEGER NOT NULL,
    pid           INTEGER,
    process_name  VARCHAR,
    message       VARCHAR
);

CREATE TABLE gpu_events (
    source_id    INTEGER NOT NULL,
    line_no      BIGINT NOT NULL,
    ts           TIMESTAMPTZ,
    ts_raw       VARCHAR,
    ts_inferred  VARCHAR,
    host         VARCHAR,
    bus_id       VARCHAR,
    kind         VARCHAR NOT NULL,
    message      VARCHAR
);

-- Derived tables: recomputed from the tables above by the analysis stage (`build`).

CREATE TABLE service_loads (
    load_id                INTEGER NOT NULL,
    host                   VARCHAR,
    unit                   VARCHAR,
    pid                    INTEGER,
    start_ts               TIMESTAMPTZ,
    start_source           VARCHAR,
    ready_ts               TIMESTAMPTZ,
    ready_source           VARCHAR,
    load_s                 DOUBLE,
    weight_load_s          DOUBLE,
    draft_weight_load_s    DOUBLE,
    kv_alloc_s             DOUBLE,
    cuda_graph_s           DOUBLE,
    draft_cuda_graph_s     DOUBLE,
    outcome                VARCHAR NOT NULL,
    model_path             VARCHAR,
    speculative_algorithm  VARCHAR,
    tp_size                INTEGER,
    port                   INTEGER,
    health_polls           INTEGER,
    source_id              INTEGER,
    start_line_no          BIGINT,
    ready_line_no          BIGINT
);

CREATE TABLE incidents (
    incident_id     INTEGER NOT NULL,
    host            VARCHAR,
    ts              TIMESTAMPTZ,
    unit            VARCHAR,
    cause           VARCHAR NOT NULL,
    confidence      DOUBLE,
    killer          VARCHAR,
    victim_pid      INTEGER,
    victim_comm     VARCHAR,
    victims         INTEGER,
    anon_rss_kb     BIGINT,
    memcg_limit_kb  BIGINT,
    recovered_ts    TIMESTAMPTZ,
    downtime_s      DOUBLE,
    fallback_unit   VARCHAR,
    recovery_unit   VARCHAR,
    recovery_load_s DOUBLE,
    restart_count   INTEGER,
    summary         VARCHAR
);

CREATE TABLE incident_evidence (
    incident_id  INTEGER NOT NULL,
    source_id    INTEGER,
    line_no      BIGINT,
    ts           TIMESTAMPTZ,
    kind         VARCHAR NOT NULL,
    detail       VARCHAR
);

CREATE TABLE recommendations (
    incident_id  INTEGER NOT NULL,
    rule         VARCHAR NOT NULL,
    severity     VARCHAR NOT NULL,
    title        VARCHAR NOT NULL,
    detail       VARCHAR NOT NULL
);
