// Label vectors of one batch (kgqa.cypher.label_vectors), stored as float32 vectors.
UNWIND $rows AS row
MATCH (e:Entity {kg: $kg, iri: row.iri})
CALL db.create.setNodeVectorProperty(e, 'label_vector', row.vector)
