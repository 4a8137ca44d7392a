// Facts are a set: MERGE finds an existing (s)-[:FACT {relation}]->(o) by Expand(Into) from the
// end with fewer relationships, so writing next to a hub stays cheap.
UNWIND $facts AS f
MATCH (s:Entity {kg: $kg, iri: f.s})
MATCH (o:Entity {kg: $kg, iri: f.o})
MERGE (s)-[e:FACT {relation: f.r}]->(o)
ON CREATE SET e.out_group = $kg + ' ' + f.s + ' ' + f.r, e.in_group = $kg + ' ' + f.o + ' ' + f.r
