-- What was ingested: one row per source file with its line accounting and time span.
SELECT source_id, path, format, lines, parsed_lines AS parsed, ignored_lines AS ignored,
       parse_issues, records, first_ts, last_ts, notes
FROM sources
ORDER BY source_id
