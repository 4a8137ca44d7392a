"""How a KG's strings become IRIs, and where its facts and bookkeeping live in an RDF store.

Each KG gets its own namespace `urn:kgqa:kg:<name>:` with named graphs: `…:data` holds the facts
(IRI → IRI edges only); `…:meta` holds labels, normalised labels, relation statistics and load
progress; `…:fanout` and `…:fanin` hold the per-(entity, relation) group sizes APP caps on. Facts from RDF sources keep their own IRIs; MetaQA/TSV ids are minted here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote, unquote

VOCAB = "urn:kgqa:vocab:"
RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
_KG_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")


def vocab(term: str) -> str:
    return VOCAB + term


def check_kg_name(name: str) -> str:
    if not _KG_NAME.match(name or ""):
        raise ValueError(
            f"KG name {name!r} is not allowed: use 1-64 letters, digits, '_', '-', '.', starting with a letter or digit"
        )
    return name


@dataclass(frozen=True)
class KGNamespace:
    name: str

    def __post_init__(self) -> None:
        check_kg_name(self.name)

    @property
    def base(self) -> str:
        return f"urn:kgqa:kg:{self.name}:"

    @property
    def iri(self) -> str:
        return self.base + "kg"

    @property
    def data_graph(self) -> str:
        return self.base + "data"

    @property
    def meta_graph(self) -> str:
        return self.base + "meta"

    def entity(self, original: str) -> str:
        return self.base + "e:" + quote(original, safe="")

    def relation(self, original: str) -> str:
        return self.base + "r:" + quote(original, safe="")

    @property
    def fanout_graph(self) -> str:
        """(e, r, n): e has n objects along r. Stored at load time for APP's cap (KGFR eq. 7)."""
        return self.base + "fanout"

    @property
    def fanin_graph(self) -> str:
        """(e, r, n): e is the object of n facts along r, i.e. the size of the (e, r⁻¹) group."""
        return self.base + "fanin"

    def load_record(self, source_key: str) -> str:
        return self.base + "load:" + quote(source_key, safe="")


def local_name(iri: str) -> str:
    """A readable fallback label for an IRI that came without one."""
    for sep in ("#", "/", ":"):
        if sep in iri:
            tail = iri.rsplit(sep, 1)[1]
            if tail:
                return unquote(tail)
    return iri
