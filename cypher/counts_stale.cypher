OPTIONAL MATCH (k:KG {name: $kg})
RETURN coalesce(k.counts_stale, false) AS stale
