-- The task table printed with an OOM kill. Parameter: $oom_id.
SELECT pid, uid, name, rss_pages, rss_anon_pages, rss_file_pages, rss_shmem_pages, total_vm_pages,
       oom_score_adj, line_no
FROM oom_tasks
WHERE oom_id = $oom_id
ORDER BY rss_pages DESC NULLS LAST, pid
