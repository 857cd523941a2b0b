-- postmortem schema, version 14: journal_headers, a text journal's "-- Journal begins at …,
-- ends at … --" line (systemd before 250): the wall-clock times of the journal's first and last
-- entries, which date a `journalctl -o short-monotonic` file printed whole
-- (queries/anchor_journal.sql). A journal ingested before version 14 has none until it is
-- ingested into a new store.

CREATE TABLE journal_headers (
    source_id    INTEGER NOT NULL,
    line_no      BIGINT NOT NULL,
    begins_ts    TIMESTAMPTZ NOT NULL,
    ends_ts      TIMESTAMPTZ,
    ts_inferred  VARCHAR
);
