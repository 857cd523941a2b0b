-- Every ingested source with its counts and time span, oldest first.
SELECT source_id, path, format, compression, host, lines, parsed_lines, ignored_lines,
       records, parse_issues, first_ts, last_ts, notes, ingested_at
FROM sources
ORDER BY source_id
