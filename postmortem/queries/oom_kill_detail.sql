-- One kernel OOM kill with the memory figures of its record. Parameter: $oom_id.
SELECT oom_id, source_id, line_no, header_line_no, ts, host, killer, scope, victim_pid, victim_comm,
       unit, cgroup, oom_memcg, total_vm_kb, anon_rss_kb, file_rss_kb, shmem_rss_kb,
       memcg_usage_kb, memcg_limit_kb, swap_usage_kb, swap_limit_kb, invoker_comm, invoker_pid,
       gfp_mask, alloc_order, kernel_release, free_kb, free_swap_kb, total_swap_kb, ram_pages,
       message
FROM oom_kills
WHERE oom_id = $oom_id
