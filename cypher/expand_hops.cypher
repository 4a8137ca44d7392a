// APP retrieval (KGFR eq. 6-7) for all hops at once: one query, one round trip for the whole
// subgraph and the labels it shows. The part between "// @hop" and "// @end" is repeated once per
// hop, {{hop}} replaced by the hop's number (Neo4jStore.expand_hops). Each hop is expand_hop.cypher
// with the frontier and the reached set kept in the query as lists of nodes:
// a group with n <= λ is read whole through its group-key index; a larger group keeps only edges into
// `reached` — read whole and filtered when n <= |reached|, else each reached node is probed with
// Expand(Into), so a hub costs min(its degree, |reached|) lookups, never its full degree.
// An entity with no facts in one direction may lack that list (`kgqa load --bulk`: Neo4j's importer
// cannot store an empty array), hence the coalesce.
MATCH (t:Entity {kg: $kg}) WHERE t.iri IN $topics
WITH collect(t) AS frontier
WITH frontier, frontier AS reached, [] AS edges
// @hop
CALL (frontier, reached) {
  UNWIND frontier AS s
  CALL (s, reached) {
    UNWIND range(0, size(coalesce(s.out_rel, [])) - 1) AS i
    WITH s.out_rel[i] AS r, s.out_n[i] AS n
    WHERE n <= $lam OR n <= size(reached)
    MATCH ()-[f:FACT {out_group: $kg + ' ' + s.iri + ' ' + r}]->(o)
    WITH r, n, o WHERE n <= $lam OR o IN reached
    RETURN r, false AS inv, o
    UNION ALL
    UNWIND range(0, size(coalesce(s.in_rel, [])) - 1) AS i
    WITH s.in_rel[i] AS r, s.in_n[i] AS n
    WHERE n <= $lam OR n <= size(reached)
    MATCH (o)-[f:FACT {in_group: $kg + ' ' + s.iri + ' ' + r}]->()
    WITH r, n, o WHERE n <= $lam OR o IN reached
    RETURN r, true AS inv, o
    UNION ALL
    UNWIND range(0, size(coalesce(s.out_rel, [])) - 1) AS i
    WITH s.out_rel[i] AS r, s.out_n[i] AS n
    WHERE n > $lam AND n > size(reached)
    UNWIND reached AS o
    MATCH (s)-[f:FACT]->(o) WHERE f.relation = r
    RETURN r, false AS inv, o
    UNION ALL
    UNWIND range(0, size(coalesce(s.in_rel, [])) - 1) AS i
    WITH s.in_rel[i] AS r, s.in_n[i] AS n
    WHERE n > $lam AND n > size(reached)
    UNWIND reached AS o
    MATCH (s)<-[f:FACT]-(o) WHERE f.relation = r
    RETURN r, true AS inv, o
  }
  RETURN collect([s, r, inv, o]) AS found
}
CALL (found, reached) {
  UNWIND found AS x
  WITH DISTINCT x[3] AS o WHERE NOT o IN reached
  RETURN collect(o) AS new
}
WITH edges + [x IN found | [x[0].iri, x[1], x[2], x[3].iri, {{hop}}]] AS edges, new AS frontier, reached + new AS reached
// @end
CALL (edges) {
  UNWIND edges AS e
  WITH DISTINCT e[1] AS iri
  MATCH (x:Relation {kg: $kg, iri: iri})
  RETURN collect([iri, x.label]) AS relations
}
RETURN edges, [n IN reached | [n.iri, n.label, [(a:Alias)-[:NAMES]->(n) | a.text]]] AS nodes, relations
