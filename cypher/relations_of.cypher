// Baseline only (ToG-style): the relations around one entity, each with its direction.
MATCH (s:Entity {kg: $kg, iri: $entity})
CALL (s) {
  MATCH (s)-[f:FACT]->() RETURN DISTINCT f.relation AS r, false AS inv
  UNION
  MATCH (s)<-[f:FACT]-() RETURN DISTINCT f.relation AS r, true AS inv
}
RETURN r, inv
