MATCH (k:KG) RETURN k.name AS name, coalesce(k.indexes_pending, false) AS indexes_pending ORDER BY name
