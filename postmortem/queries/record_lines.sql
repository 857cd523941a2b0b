-- Raw message text of one source between two line numbers (kernel copies first).
-- Parameters: $source_id, $first, $last.
SELECT line_no, any_value(message ORDER BY pri) AS message FROM (
    SELECT line_no, message, 0 AS pri FROM kernel_messages
    WHERE source_id = $source_id AND line_no BETWEEN $first AND $last
    UNION ALL
    SELECT line_no, message, 1 AS pri FROM journal_entries
    WHERE source_id = $source_id AND line_no BETWEEN $first AND $last
) t
GROUP BY line_no
ORDER BY line_no
