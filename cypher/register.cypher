// Run by every writer once the schema is in place: registers its KG, and clears the mark a bulk
// import (`kgqa load --bulk`) leaves on its KG until kgqa's indexes exist.
MERGE (:KG {name: $kg})
WITH count(*) AS registered
MATCH (k:KG) WHERE k.indexes_pending
REMOVE k.indexes_pending
