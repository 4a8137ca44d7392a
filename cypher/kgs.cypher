MATCH (k:KG) RETURN k.name AS name ORDER BY name
