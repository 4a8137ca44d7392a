// Whether the opt-in vector index of labels exists and is online (kgqa.cypher.label_vectors).
SHOW VECTOR INDEXES YIELD name, state WHERE name = $index AND state = 'ONLINE'
RETURN count(*) AS n
