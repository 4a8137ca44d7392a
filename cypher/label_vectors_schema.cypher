// The opt-in vector index of entity labels (`kgqa index --vectors`, kgqa.cypher.label_vectors): each
// label's sentence embedding (kgqa.retrieval.text.TextEncoder, 384 dimensions, unit length) in the
// node property label_vector, searched by cosine for the entity linker's embedding fallback.
CREATE VECTOR INDEX kgqa_label_vectors IF NOT EXISTS FOR (e:Entity) ON (e.label_vector)
OPTIONS {indexConfig: {`vector.dimensions`: 384, `vector.similarity_function`: 'cosine'}};
