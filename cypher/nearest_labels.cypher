// The labels nearest each text's embedding through the vector index kgqa_label_vectors
// (label_vectors_schema.cypher). The index ranks the entities of every KG in the database and the KG
// filter comes after, so $asked (more than $limit) nodes are asked for. Each $queries item: {text, vector}.
UNWIND $queries AS q
CALL (q) {
  CALL db.index.vector.queryNodes('kgqa_label_vectors', $asked, q.vector) YIELD node, score
  WITH node, score WHERE node.kg = $kg
  ORDER BY score DESC, node.iri
  LIMIT $limit
  RETURN collect([node.iri, node.label]) AS pairs
}
RETURN q.text AS text, pairs
