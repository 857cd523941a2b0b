-- When nvidia-smi last listed each GPU of a host in a window (a GPU that fell off the bus stops
-- being listed while the others go on). Parameters: $host, $from, $to.
SELECT bus_id, min(gpu_index) AS gpu_index, max(ts) AS last_ts, count(*) AS samples
FROM gpu_samples
WHERE bus_id IS NOT NULL AND ts >= $from AND ts <= $to
  AND ($host IS NULL OR host IS NULL OR host = $host)
GROUP BY bus_id
ORDER BY bus_id
