-- Health and model-list requests to a unit in a window (a poller's footprint).
-- Parameters: $unit (NULL: the rows of $source, a server
-- log nothing ties to a unit), $source, $from, $to, $host.
SELECT ts, client, method, path, status, source_id, line_no
FROM http_requests
WHERE (unit = $unit OR ($unit IS NULL AND unit IS NULL AND source_id = $source)) AND ts >= $from AND ts <= $to
  AND ($host IS NULL OR host IS NULL OR host = $host)
  AND (path IN ('/health', '/health_generate', '/v1/models', '/get_model_info', '/model_info')
       OR path LIKE '/v1/models%')
ORDER BY ts, line_no
