MERGE (:KG {name: $kg})
