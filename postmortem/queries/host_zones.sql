-- The zone each host's sources were read in (sources.tz), most sources first: a host's local
-- time in its reports. A fleet store holds hosts in several zones.
SELECT host, tz, count(*) AS sources
FROM sources
WHERE host IS NOT NULL AND tz IS NOT NULL AND status = 'complete'
GROUP BY host, tz
ORDER BY host, sources DESC, tz
