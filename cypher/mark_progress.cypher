MERGE (l:LoadRecord {kg: $kg, source: $source})
SET l.committed = $committed, l.complete = $complete
