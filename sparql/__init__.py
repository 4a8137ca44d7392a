"""SPARQL stores: the embedded pyoxigraph store (and, later, any SPARQL 1.1 endpoint).

The queries live in this folder's *.rq files; every term spliced into them goes through
`kgqa.sparql.escape`.
"""

from kgqa.sparql.embedded import EmbeddedStore, EmbeddedWriter

__all__ = ["EmbeddedStore", "EmbeddedWriter"]
