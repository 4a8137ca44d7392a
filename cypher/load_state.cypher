OPTIONAL MATCH (l:LoadRecord {kg: $kg, source: $source})
RETURN coalesce(l.committed, 0) AS committed, coalesce(l.complete, false) AS complete
