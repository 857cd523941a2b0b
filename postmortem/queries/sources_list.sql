-- What was ingested: one row per source file with its line accounting and time span.
-- parsed + ignored + unparsed = lines; parse_issues also counts warnings on parsed lines.
SELECT s.source_id, s.path, s.format, s.lines, s.parsed_lines AS parsed, s.ignored_lines AS ignored,
       coalesce(u.unparsed, 0) AS unparsed, s.parse_issues, s.records, s.first_ts, s.last_ts, s.notes
FROM sources s
LEFT JOIN (
    SELECT source_id, count(*) AS unparsed FROM parse_issues WHERE unparsed GROUP BY source_id
) u USING (source_id)
ORDER BY s.source_id
