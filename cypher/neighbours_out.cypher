// Baseline only (ToG-style): objects of one (entity, relation).
MATCH (s:Entity {kg: $kg, iri: $entity})-[f:FACT]->(o)
WHERE f.relation = $relation
RETURN o.iri AS o
