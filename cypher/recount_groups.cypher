// Fan-out per (entity, relation) and per (entity, relation⁻¹), stored on the entity for APP's cap
// (KGFR eq. 7). Run in auto-commit transactions of a few thousand entities each.
MATCH (e:Entity {kg: $kg})
CALL (e) {
  OPTIONAL MATCH (e)-[f:FACT]->()
  WITH f.relation AS r, count(f) AS n WHERE r IS NOT NULL
  WITH r, n ORDER BY r
  RETURN collect(r) AS out_rel, collect(n) AS out_n
}
CALL (e) {
  OPTIONAL MATCH (e)<-[f:FACT]-()
  WITH f.relation AS r, count(f) AS n WHERE r IS NOT NULL
  WITH r, n ORDER BY r
  RETURN collect(r) AS in_rel, collect(n) AS in_n
}
CALL (e, out_rel, out_n, in_rel, in_n) {
  SET e.out_rel = out_rel, e.out_n = out_n, e.in_rel = in_rel, e.in_n = in_n
} IN TRANSACTIONS OF 5000 ROWS
