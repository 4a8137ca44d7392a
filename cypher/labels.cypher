// The id label and the aliases of entities, and the labels of relations, by IRI.
UNWIND $iris AS iri
CALL (iri) {
  MATCH (e:Entity {kg: $kg, iri: iri})
  RETURN e.label AS label, [(a:Alias)-[:NAMES]->(e) | a.text] AS aliases
  UNION ALL
  MATCH (x:Relation {kg: $kg, iri: iri})
  RETURN x.label AS label, [] AS aliases
}
RETURN iri, label, aliases
