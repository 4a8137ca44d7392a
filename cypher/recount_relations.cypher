// Facts per relation, summed from the per-entity fan-out lists.
MATCH (x:Relation {kg: $kg})
SET x.facts = 0
WITH count(*) AS reset
MATCH (e:Entity {kg: $kg})
UNWIND range(0, size(coalesce(e.out_rel, [])) - 1) AS i
WITH e.out_rel[i] AS r, sum(e.out_n[i]) AS n
MATCH (x:Relation {kg: $kg, iri: r})
SET x.facts = n
