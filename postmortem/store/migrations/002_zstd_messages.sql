-- postmortem schema, version 2: the message text of journal_entries and kernel_messages is
-- stored with ZSTD compression. Those columns hold nearly every byte of an ingested journal;
-- DuckDB's automatic choice (FSST/dictionary analysis) costs about twice the time to write
-- and takes three times the space. Columns, types and order are unchanged: the tables are
-- rebuilt with their rows.

CREATE TABLE journal_entries__v2 (
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
    message      VARCHAR USING COMPRESSION zstd
);
INSERT INTO journal_entries__v2 SELECT * FROM journal_entries;
DROP TABLE journal_entries;
ALTER TABLE journal_entries__v2 RENAME TO journal_entries;

CREATE TABLE kernel_messages__v2 (
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
    message      VARCHAR USING COMPRESSION zstd
);
INSERT INTO kernel_messages__v2 SELECT * FROM kernel_messages;
DROP TABLE kernel_messages;
ALTER TABLE kernel_messages__v2 RENAME TO kernel_messages;
