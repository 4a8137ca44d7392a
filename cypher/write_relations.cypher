UNWIND $relations AS r
MERGE (x:Relation {kg: $kg, iri: r.iri})
ON CREATE SET x.label = r.label, x.facts = 0
