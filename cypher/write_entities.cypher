// The entities of one batch; `label` is the id a fact used (a labels file adds aliases instead).
UNWIND $entities AS n
MERGE (e:Entity {kg: $kg, iri: n.iri})
ON CREATE SET e.out_rel = [], e.out_n = [], e.in_rel = [], e.in_n = []
SET e.label = coalesce(e.label, n.label), e.key = coalesce(e.key, n.key)
