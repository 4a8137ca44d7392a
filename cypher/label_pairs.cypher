// Every entity of a KG with its labels (its own and its aliases'), streamed: no ORDER BY and no
// aggregation, so the server sends rows as it reads them (label_page.cypher sorts every label after
// its key, a scan per page: over a large KG, paging is quadratic).
MATCH (e:Entity) WHERE e.kg = $kg
RETURN e.iri AS e, e.label AS label, [(a:Alias)-[:NAMES]->(e) WHERE a.kg = $kg | a.text] AS aliases
