-- Every derived service load, in start order.
SELECT load_id, host, unit, pid, start_ts, start_source, ready_ts, ready_source, load_s,
       weight_load_s, draft_weight_load_s, kv_alloc_s, cuda_graph_s, draft_cuda_graph_s, outcome,
       model_path, speculative_algorithm, tp_size, port, health_polls, source_id, start_line_no,
       ready_line_no, start_source_id, ready_source_id
FROM service_loads
ORDER BY start_ts NULLS LAST, load_id
