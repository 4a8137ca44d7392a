MATCH (x:Relation {kg: $kg})
RETURN x.iri AS r, x.label AS label, x.facts AS facts
ORDER BY label, r
