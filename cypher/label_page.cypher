// One page of (entity, label) pairs — id labels and aliases — in (entity, label) order, after a key.
CALL () {
  MATCH (e:Entity {kg: $kg}) WHERE e.label IS NOT NULL RETURN e.iri AS e, e.label AS label
  UNION
  MATCH (a:Alias {kg: $kg})-[:NAMES]->(e:Entity) RETURN e.iri AS e, a.text AS label
}
WITH e, label WHERE e > $after_iri OR (e = $after_iri AND label > $after_label)
RETURN e, label ORDER BY e, label LIMIT $limit
