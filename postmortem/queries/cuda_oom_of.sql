-- The CUDA out-of-memory record an incident's evidence points at (its rank, GPU, sizes and the
-- phase it happened in; what PyTorch had allocated and reserved). Parameters: $source_id, $line_no.
SELECT ranks, gpu, tried_mib, free_mib, total_mib, allocated_mib, reserved_mib, phase, message
FROM cuda_ooms
WHERE source_id = $source_id AND line_no = $line_no
LIMIT 1
