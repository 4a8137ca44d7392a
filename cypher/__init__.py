"""Neo4j store and loader writer (Cypher in this folder's *.cypher files).

Not built yet: the Neo4j store lands with the "Real stores" issue. `kgqa.store_url.open_store`
answers `neo4j://…` URLs with a clear error until then.
"""

__all__: list[str] = []
