-- How many of each source's timestamps were printed as absolute instants (ts_inferred NULL).
SELECT source_id, count(*) AS rows, count(*) FILTER (WHERE ts_inferred IS NULL) AS exact
FROM (
    SELECT source_id, ts_inferred FROM journal_entries WHERE ts IS NOT NULL
    UNION ALL SELECT source_id, ts_inferred FROM kernel_messages WHERE ts IS NOT NULL
) t
GROUP BY source_id
ORDER BY source_id
