"""Neo4j store and loader writer (the Cypher they run lives in this folder's *.cypher files).

    bolt://[user[:password]@]host:port[?database=neo4j&timeout=30]     (also neo4j://, neo4j+s://)

The graph: (:Entity {kg, iri, label})-[:FACT {relation, out_group, in_group}]->(:Entity), with
(:Relation), (:Alias)-[:NAMES]->(:Entity) for explicitly given labels, (:KG) and (:LoadRecord) beside
them; several KGs share one database, each node carrying its KG's name. See schema.cypher for why
facts have one relationship type and indexed group keys rather than one type per relation.
"""

__all__: list[str] = []
