// Candidate labels for names that may be misspelt, through the full-text index kgqa_label_keys
// (schema.cypher), for every query at once. Each $queries item: {text, lucene, length} — the Lucene
// query built by `store.lucene_query` from the text's normalised words, and its key's length.
// Lucene ranks the matching Entity/Alias nodes of every KG in the database; the KG filter can only
// come after that ranking, so $asked (more than $limit) nodes are asked for. An alias stands for the
// entities it names. Per query: at most $limit (entity, label) pairs, keys of the nearest length to
// the text's first, then by Lucene's score.
UNWIND $queries AS q
CALL (q) {
  CALL db.index.fulltext.queryNodes('kgqa_label_keys', q.lucene, {limit: $asked}) YIELD node, score
  WITH node, score WHERE node.kg = $kg
  CALL (node) {
    MATCH (node:Entity) RETURN node.iri AS e, node.label AS label
    UNION
    MATCH (node:Alias)-[:NAMES]->(x:Entity) RETURN x.iri AS e, node.text AS label
  }
  WITH e, label, min(abs(size(node.key) - q.length)) AS distance, max(score) AS score
  ORDER BY distance, score DESC, e, label
  LIMIT $limit
  RETURN collect([e, label]) AS pairs
}
RETURN q.text AS text, pairs
