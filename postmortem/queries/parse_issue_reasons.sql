-- The most frequent parse-issue reasons per source (top 5 per source).
SELECT source_id, reason, n FROM (
    SELECT source_id, reason, count(*) AS n,
           row_number() OVER (PARTITION BY source_id ORDER BY count(*) DESC, reason) AS rk
    FROM parse_issues
    GROUP BY source_id, reason
) t
WHERE rk <= 5
ORDER BY source_id, n DESC, reason
