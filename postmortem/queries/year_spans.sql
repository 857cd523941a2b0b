-- year_spans: each source's span, host, and whether its year was guessed: year-less stamps
-- whose year came from the file's modification time (the ingest note), or kernel lines dated
-- through a boot anchor (another source's clock, maybe the very journal in question): then the
-- source is no witness of the year. A year from the file's own header or a full date in one of
-- its lines, --year or --since is a witness. For
-- analysis.clock.year_offsets (an anchored source overlapping a journal moved by a year moves
-- with it: it took its boot from that journal's clock).
-- No parameters.
WITH anchored AS (
    SELECT DISTINCT source_id FROM kernel_messages WHERE ts_inferred = 'boot'
)
SELECT source_id, host, first_ts, last_ts, path,
       source_id IN (SELECT source_id FROM anchored) AS anchored,
       contains(coalesce(notes, ''), 'is from the file''s modification time')
           OR source_id IN (SELECT source_id FROM anchored) AS yearless,
       contains(coalesce(notes, ''), 'is from the file''s modification time') AS year_from_mtime
FROM sources
WHERE first_ts IS NOT NULL AND last_ts IS NOT NULL AND status = 'complete'
ORDER BY source_id
