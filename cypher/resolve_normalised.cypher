// Entities with a label whose normalised form is a given key, with that label.
UNWIND $keys AS key
CALL (key) {
  MATCH (e:Entity {kg: $kg, key: key}) RETURN e.iri AS e, e.label AS label
  UNION
  MATCH (a:Alias {kg: $kg, key: key})-[:NAMES]->(e:Entity) RETURN e.iri AS e, a.text AS label
}
RETURN key, e, label
