-- postmortem schema, version 10: Parquet parts. A large file's rows of the bulk tables
-- (journal_entries, kernel_messages, server_stats, http_requests, gpu_samples) are written as
-- Parquet files in a directory beside the store (pm.duckdb.parts/<table>/), each listed here
-- once its source is complete. Every connection shows such a table through a temporary view of
-- the same name: its native rows and its parts. A store written before version 10 keeps its rows
-- native; nothing moves.

CREATE TABLE store_parts (
    source_id   INTEGER NOT NULL,
    table_name  VARCHAR NOT NULL,
    file        VARCHAR NOT NULL,
    rows        BIGINT NOT NULL
);
