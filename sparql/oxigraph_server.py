"""Loading into an `oxigraph serve` server over HTTP: quads to its Graph Store endpoint (/store),
updates to /update. The engine reads the same server through its /query endpoint only."""

from __future__ import annotations

from collections.abc import Iterable
from itertools import islice

import pyoxigraph as ox

from kgqa.sparql.endpoint import DEFAULT_TIMEOUT_S, EndpointError, HttpClient, SparqlEndpointStore
from kgqa.sparql.label_index import LabelIndex, endpoint_index_path
from kgqa.sparql.writer import RdfWriter

CHUNK = 100_000  # quads per POST


class OxigraphServerWriter(RdfWriter):
    def __init__(self, base_url: str, kg: str, timeout: float = DEFAULT_TIMEOUT_S):
        self.base_url = base_url.rstrip("/")
        query_url = self.base_url + "/query"
        super().__init__(kg, SparqlEndpointStore(query_url, kg, timeout), LabelIndex.create(endpoint_index_path(query_url, kg)))
        self._http = HttpClient(self.base_url, timeout)

    @classmethod
    def open(cls, base_url: str, kg: str) -> "OxigraphServerWriter":
        writer = cls(base_url, kg)
        writer.register()
        return writer

    def _add(self, quads: Iterable[ox.Quad], bulk: bool) -> None:
        it = iter(quads)
        while chunk := list(islice(it, CHUNK)):
            body = ox.serialize(chunk, format=ox.RdfFormat.N_QUADS)
            self._check("/store", *self._http.post("/store", body, "application/n-quads"))

    def _update(self, sparql_update: str) -> None:
        self._check("/update", *self._http.post("/update", sparql_update.encode(), "application/sparql-update"))

    def _check(self, path: str, status: int, headers: dict[str, str], payload: bytes) -> None:
        if status not in (200, 201, 204):
            raise EndpointError(f"{self.base_url}{path} answered HTTP {status}: {payload[:300].decode(errors='replace')}")

    def close(self) -> None:
        self._http.close()
        self._read.close()
        super().close()
