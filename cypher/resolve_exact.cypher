// Entities one of whose labels (the id a fact used, or an alias) equals a given label.
UNWIND $labels AS label
CALL (label) {
  MATCH (e:Entity {kg: $kg, label: label}) RETURN e.iri AS e
  UNION
  MATCH (:Alias {kg: $kg, text: label})-[:NAMES]->(e:Entity) RETURN e.iri AS e
}
RETURN label, e
