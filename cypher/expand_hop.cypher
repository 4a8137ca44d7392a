// One APP hop (KGFR eq. 6-7) for a whole frontier, inverse edges included, in one query.
// Group sizes were stored on each entity at load time (out_rel/out_n: (e, r) has n objects;
// in_rel/in_n: e is the object of n facts along r). A group with n <= $scan_limit is read whole
// through the group-key index (exactly n index entries) and filtered here: n <= λ keeps it all,
// otherwise only edges into $reached. A larger group is never read: each reached entity is probed
// with Expand(Into), which walks the end with fewer relationships, so a hub costs
// min(its degree, |reached|) lookups, never its full degree. $scan_limit = max(λ, |reached|).
UNWIND $frontier AS iri
MATCH (s:Entity {kg: $kg, iri: iri})
CALL (s) {
  UNWIND range(0, size(coalesce(s.out_rel, [])) - 1) AS i
  WITH s.out_rel[i] AS r, s.out_n[i] AS n
  WHERE n <= $scan_limit
  MATCH ()-[f:FACT {out_group: $kg + ' ' + s.iri + ' ' + r}]->(o)
  WITH r, n, o WHERE n <= $lam OR o.iri IN $reached
  RETURN r, false AS inv, o.iri AS o
  UNION ALL
  UNWIND range(0, size(coalesce(s.in_rel, [])) - 1) AS i
  WITH s.in_rel[i] AS r, s.in_n[i] AS n
  WHERE n <= $scan_limit
  MATCH (o)-[f:FACT {in_group: $kg + ' ' + s.iri + ' ' + r}]->()
  WITH r, n, o WHERE n <= $lam OR o.iri IN $reached
  RETURN r, true AS inv, o.iri AS o
  UNION ALL
  UNWIND range(0, size(coalesce(s.out_rel, [])) - 1) AS i
  WITH s.out_rel[i] AS r, s.out_n[i] AS n
  WHERE n > $scan_limit
  UNWIND $reached AS x
  MATCH (o:Entity {kg: $kg, iri: x})
  WITH r, o
  MATCH (s)-[f:FACT]->(o) WHERE f.relation = r
  RETURN r, false AS inv, o.iri AS o
  UNION ALL
  UNWIND range(0, size(coalesce(s.in_rel, [])) - 1) AS i
  WITH s.in_rel[i] AS r, s.in_n[i] AS n
  WHERE n > $scan_limit
  UNWIND $reached AS x
  MATCH (o:Entity {kg: $kg, iri: x})
  WITH r, o
  MATCH (s)<-[f:FACT]-(o) WHERE f.relation = r
  RETURN r, true AS inv, o.iri AS o
}
RETURN s.iri AS s, r, inv, o
