// Baseline only (bench/retrieval.py): every edge of the frontier, both directions, no cap.
UNWIND $frontier AS iri
MATCH (s:Entity {kg: $kg, iri: iri})
CALL (s) {
  MATCH (s)-[f:FACT]->(o) RETURN f.relation AS r, false AS inv, o.iri AS o
  UNION ALL
  MATCH (s)<-[f:FACT]-(o) RETURN f.relation AS r, true AS inv, o.iri AS o
}
RETURN s.iri AS s, r, inv, o
