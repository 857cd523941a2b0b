-- year_spans: each source's span, host, and whether its year was guessed: year-less stamps
-- whose year came from the file's modification time (the ingest note), or any year-less
-- stamps, or kernel lines dated through a boot anchor (another source's clock, maybe the very
-- journal in question): then the source is no witness of the year. For
-- analysis.clock.year_offsets.
-- No parameters.
SELECT source_id, host, first_ts, last_ts, path,
       contains(coalesce(notes, ''), 'year-less stamps')
           OR EXISTS (SELECT 1 FROM kernel_messages AS k
                      WHERE k.source_id = sources.source_id AND k.ts_inferred = 'boot') AS yearless,
       contains(coalesce(notes, ''), 'is from the file''s modification time') AS year_from_mtime
FROM sources
WHERE first_ts IS NOT NULL AND last_ts IS NOT NULL AND status = 'complete'
ORDER BY source_id
