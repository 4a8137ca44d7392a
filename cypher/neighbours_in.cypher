// Baseline only (ToG-style): subjects of one (entity, relation⁻¹).
MATCH (s:Entity {kg: $kg, iri: $entity})<-[f:FACT]-(o)
WHERE f.relation = $relation
RETURN o.iri AS o
