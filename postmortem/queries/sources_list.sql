-- What was ingested: one row per source file with its line accounting and time span.
-- parsed + ignored + unparsed = lines; parse_issues also counts warnings on parsed lines.
-- units: the unit(s) a server's lines were linked to at the last build (unit_links), or why
-- none was ("unit unknown: nothing names its unit").
SELECT s.source_id, s.path, s.format, s.lines, s.parsed_lines AS parsed, s.ignored_lines AS ignored,
       coalesce(u.unparsed, 0) AS unparsed, s.parse_issues, s.records, s.first_ts, s.last_ts,
       concat_ws('; ', s.notes, l.units) AS notes
FROM sources s
LEFT JOIN (
    SELECT source_id, count(*) AS unparsed FROM parse_issues WHERE unparsed GROUP BY source_id
) u USING (source_id)
LEFT JOIN (
    SELECT source_id,
           string_agg(DISTINCT CASE WHEN unit IS NULL THEN 'unit unknown: ' || evidence
                                    ELSE 'linked to ' || unit || ' (' || evidence || ')' END, '; ') AS units
    FROM unit_links GROUP BY source_id
) l USING (source_id)
ORDER BY s.source_id
