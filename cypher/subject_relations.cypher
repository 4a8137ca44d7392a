// The relations each given entity is the subject of, by label, from the fan-out lists stored on it
// at load time (out_rel): the answer's kind reads Freebase property names as their subjects' types.
UNWIND $iris AS iri
MATCH (e:Entity {kg: $kg, iri: iri})
UNWIND coalesce(e.out_rel, []) AS r
MATCH (x:Relation {kg: $kg, iri: r})
RETURN e.iri AS e, x.label AS label
