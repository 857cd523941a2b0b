-- Every load that reached ready, for the load-time trend per host, unit and model.
-- Parameters: $since, $until.
SELECT coalesce(host, '—') AS host, unit, model_path, speculative_algorithm, start_ts, ready_ts, load_s, weight_load_s,
       cuda_graph_s, outcome
FROM service_loads
WHERE start_ts IS NOT NULL AND ($since IS NULL OR start_ts >= $since)
  AND ($until IS NULL OR start_ts <= $until)
ORDER BY host, unit, start_ts
