-- postmortem schema, version 12: whether an incident's unit served. A node or host OOM kills a
-- neighbour as often as a server (a batch job, an ETL pod beside the inference pods): with
-- none of its lines a server's and the host's servers going on serving after the kill, it is
-- no outage of serving (postmortem/analysis/facts.py, victim_serving.sql).

ALTER TABLE incidents ADD COLUMN serving BOOLEAN;
