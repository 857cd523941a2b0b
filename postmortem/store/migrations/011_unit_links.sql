-- postmortem schema, version 11: unit_links. A server's run whose own lines name no unit (a
-- log file named after nothing, a journal stream no unit claimed) is linked at build time to
-- the unit the other sources name (postmortem/analysis/server_units.py): its rows take that
-- unit, and the link is kept here with its evidence. A run nothing ties to a unit is listed
-- with unit NULL and why (the report says that nothing names it).

CREATE TABLE unit_links (
    source_id   INTEGER NOT NULL,
    stream_pid  BIGINT,
    host        VARCHAR,
    first_ts    TIMESTAMPTZ,
    last_ts     TIMESTAMPTZ,
    unit        VARCHAR,
    how         VARCHAR NOT NULL,
    evidence    VARCHAR
);
