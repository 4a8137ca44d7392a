"""The read side (`kgqa.store.GraphStore`) over any SPARQL 1.1 engine.

Subclasses say how a query runs (`_execute`: embedded pyoxigraph, or HTTP to an endpoint); every
query is one of this folder's *.rq files, rendered with escaped terms only.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Iterable, Iterator, Sequence
from pathlib import Path

from kgqa.core.errors import NoLabelIndex, StoreError, UnknownKG
from kgqa.core.labels import display_label, normalise_label, resolved
from kgqa.core.namespace import KGNamespace
from kgqa.sparql import escape
from kgqa.sparql.queries import graph_terms, render, render_union
from kgqa.core.store import RelationInfo, StoreCounts, WholeRetrieval
from kgqa.core.types import Edge, LinkedEntity
from kgqa.sparql.label_index import LabelIndex

Row = dict[str, str]  # variable → lexical value; unbound variables are absent
Sizes = dict[tuple[str, str, bool], int]  # (entity, relation, inverse) → the group's stored size


def is_true(value: str) -> bool:
    """An xsd:boolean's lexical value (`BIND(true AS ?inv)` comes back as "true", or "1" from Virtuoso)."""
    return value in ("true", "1")


def _slices(items: Sequence[str], size: int | None) -> list[Sequence[str]]:
    if size is None or len(items) <= size:
        return [items]
    return [items[i : i + size] for i in range(0, len(items), size)]


class SparqlReader:
    #: Longest VALUES list one query may carry (None: no limit). Virtuoso's SPARQL compiler refuses
    #: a few thousand ("SP030: Too many arguments"); longer lists are sent in slices, one round trip each.
    max_values: int | None = None
    #: How many queries one hop sends: 1 (expand_hop.rq), or 2 (expand_groups.rq, then
    #: expand_members.rq with subject and relation bound: for planners that would scan hubs; in a
    #: whole retrieval the second also brings the next hop's group sizes: k hops, k + 1 queries).
    expand_round_trips: int = 1

    def __init__(self, kg: str, label_index: "LabelIndex | Path | None" = None):
        self.ns = KGNamespace(kg)
        self.kg = kg
        self.round_trips = 0
        self._graphs = graph_terms(self.ns)
        #: the KG's label index beside the store (kgqa.retrieval.label_index): an open one, or the
        #: path it is opened from on first use; None where no such index is known
        self.label_index = label_index
        self._label_index_lock = threading.Lock()

    def _execute(self, name: str, query: str) -> list[Row]:
        raise NotImplementedError

    @property
    def asked_graphs(self) -> tuple[str, str]:
        """The graphs a query written elsewhere (text2query) may read: the KG's data and meta graphs."""
        return self.ns.data_graph, self.ns.meta_graph

    def select_asked(self, query: str) -> list[Row] | bool:
        """A checked query written elsewhere (text2query) over `asked_graphs` only: they are the default
        graph and the only named graphs, whatever the query's own FROM says (the protocol's dataset
        wins). Rows of strings (IRIs as written), or ASK's answer."""
        raise NotImplementedError

    def _select(self, name: str, **terms: escape.SparqlTerm) -> list[Row]:
        self.round_trips += 1
        return self._execute(name, render(name, **self._graphs, **terms))

    def _select_union(self, name: str, branches: dict[str, dict[str, escape.SparqlTerm]]) -> list[Row]:
        """The branches of `name.rq` that are named (see `queries.render_union`); no query if none."""
        query = render_union(name, branches, **self._graphs)
        if query is None:
            return []
        self.round_trips += 1
        return self._execute(name, query)

    def close(self) -> None:
        index = self.label_index
        if isinstance(index, LabelIndex) and not index.writable:
            index.close()
            self.label_index = None

    def search_labels(self, texts: Sequence[str], any_word: bool = False, limit: int = 50) -> dict[str, list[tuple[str, str]]]:
        """Candidates from the KG's label index beside the store (see `kgqa.store.SearchesLabels`)."""
        return self._open_label_index().search(texts, any_word=any_word, limit=limit)

    def _open_label_index(self) -> LabelIndex:
        with self._label_index_lock:
            if isinstance(self.label_index, Path):
                try:
                    self.label_index = LabelIndex.open(self.label_index)
                except NoLabelIndex:
                    raise NoLabelIndex(
                        f"KG {self.kg!r} has no label index at {self.label_index} (it was loaded by an older kgqa, or "
                        f"by another program): build it once with `kgqa index --kg {self.kg} --store …`") from None
            if self.label_index is None:
                raise NoLabelIndex(f"KG {self.kg!r}: this store has no label index (build one with `kgqa index`)")
            return self.label_index

    def resolve(self, labels: Sequence[str]) -> dict[str, list[LinkedEntity]]:
        # Rows carry stored labels only, never the query's own terms (see resolve_exact.rq).
        def exact(wanted: list[str]) -> list[tuple[str, str]]:
            rows = self._select("resolve_exact", labels=escape.SparqlTerm(" ".join(escape.literal(x) for x in wanted)))
            asked = set(wanted)
            return [(row["label"], row["e"]) for row in rows if row["label"] in asked]

        def normalised(keys: list[str]) -> list[tuple[str, str, str]]:
            rows = self._select("resolve_normalised", keys=escape.SparqlTerm(" ".join(escape.literal(k) for k in keys)))
            return [(normalise_label(row["label"]), row["e"], row["label"]) for row in rows]

        return resolved(labels, exact, normalised)

    def expand(self, frontier: Sequence[str], reached: Collection[str], lam: int) -> list[Edge]:
        """One round trip for the hop (two where `expand_round_trips` says so) — more only where `max_values`
        makes the lists too long."""
        if not frontier:
            return []
        if self.expand_round_trips == 2:
            return self._expand_two_step(frontier, reached, lam)
        scan_limit = escape.integer(max(lam, len(reached)))
        reached_slices = _slices(list(reached), self.max_values)
        relations, relation_terms = self._relation_numbering()
        edges: list[Edge] = []
        for part in _slices(frontier, self.max_values):
            front = escape.numbered_iris(part)
            terms = {"frontier": front, "relations": relation_terms, "scan_limit": scan_limit}
            rows = self._select("expand_hop", reached=escape.iri_list(reached_slices[0]), **terms)
            for more in reached_slices[1:]:
                rows += self._select("expand_probe", reached=escape.iri_list(more), **terms)
            # Groups over λ that were read whole (λ < n <= scan_limit) keep only edges into `reached`.
            edges += [
                Edge(part[int(r["ks"])], relations[int(r["kr"])] if "kr" in r else r["rr"], is_true(r["inv"]), r["o"])
                for r in rows
                if int(r["n"]) <= lam or r["o"] in reached
            ]
        return edges

    def _relation_numbering(self) -> tuple[Sequence[str], escape.SparqlTerm]:
        """The relations (IRIs) expand_hop.rq may name by position, and their `VALUES (?kr ?r)` rows;
        any it lacks come back by IRI. None here: listing them would cost a round trip (the embedded
        store reads them directly)."""
        return (), escape.NOTHING_NUMBERED

    def _group_sizes(self, frontier: Sequence[str]) -> Sizes:
        """The stored size of every (entity, relation, direction) group of `frontier` (expand_groups.rq)."""
        sizes: Sizes = {}
        for part in _slices(frontier, self.max_values):
            for r in self._select("expand_groups", frontier=escape.iri_list(part)):
                sizes[(r["s"], r["r"], is_true(r["inv"]))] = int(r["n"])
        return sizes

    def _expand_two_step(
        self, frontier: Sequence[str], reached: Collection[str], lam: int, seen: "LabelRows | None" = None,
        also_label: Sequence[str] = (), sizes: Sizes | None = None, next_sizes: Sizes | None = None,
    ) -> list[Edge]:
        """The same hop as expand_hop.rq in two queries: group sizes first (unless `sizes` has them,
        brought by the previous hop), then the members of the groups to read (n <= max(λ, |reached|))
        and probes of the larger ones, as (s, r) rows. The labels of the entities read, of `also_label`
        and of the hop's relations are added to `seen`; where `next_sizes` is given, the group sizes of
        the entities read are added to it, for the next hop."""
        scan_limit = max(lam, len(reached))
        if sizes is None:
            sizes = self._group_sizes(frontier)
        else:
            wanted = set(frontier)
            sizes = {group: n for group, n in sizes.items() if group[0] in wanted}
        lists: list[list[tuple[str, str]]] = [[], [], [], []]  # read out, read in, probe out, probe in
        for (s, r, inv), n in sorted(sizes.items()):
            lists[(2 if n > scan_limit else 0) + int(inv)].append((s, r))
        size = self.max_values or max(1, *map(len, lists))
        reached_slices = _slices(list(reached), self.max_values)
        to_label: list[str] = []
        if seen is not None:
            to_label = [iri for iri in dict.fromkeys([*also_label, *(r for _, r, _ in sizes)]) if iri not in seen.asked]
            if self.max_values is not None and len(to_label) > self.max_values:
                to_label = []  # left to the closing labels query, which slices
        rows: list[Row] = []
        for c in range(0, max(map(len, lists)), size):
            read_out, read_in, probe_out, probe_in = (items[c : c + size] for items in lists)
            for k, some_reached in enumerate(reached_slices):
                branches: dict[str, dict[str, escape.SparqlTerm]] = {}
                if k == 0:  # further reached slices only matter to probes
                    for read, sizes_of_read, pairs in (("read_out", "sizes_out", read_out), ("read_in", "sizes_in", read_in)):
                        if pairs:
                            branches[read] = {"pairs": escape.iri_pairs(pairs)}
                            if next_sizes is not None:
                                branches[sizes_of_read] = branches[read]
                reached_terms = escape.iri_list(some_reached)
                branches |= {"probe_out": {"pairs": escape.iri_pairs(probe_out), "reached": reached_terms}} if probe_out else {}
                branches |= {"probe_in": {"pairs": escape.iri_pairs(probe_in), "reached": reached_terms}} if probe_in else {}
                if to_label:  # with the first query only
                    branches["labels"] = {"entities": escape.iri_list(to_label)}
                    seen.asked.update(to_label)  # type: ignore[union-attr]
                    to_label = []
                rows += self._select_union("expand_members", branches)
        edges: dict[Edge, None] = {}  # an entity with several labels comes back once per label
        for r in rows:
            if "e" in r:
                seen.add(r["e"], r["label"], r.get("preferred"))  # type: ignore[union-attr]
                continue
            if "o" not in r or ("inv" in r) == ("g" in r):
                # Seen on Virtuoso 7 while the size branches named their entity ?c: read_in rows came
                # back without ?o, depending on the plan. A row like that must never pass as an edge.
                raise StoreError(f"expand_members.rq on KG {self.kg!r}: the store returned a row that is not an edge, a group size or a label: {r}")
            if "g" in r:  # sent only where next_sizes is wanted
                if next_sizes is not None:
                    next_sizes[(r["o"], r["g"], is_true(r["ginv"]))] = int(r["n"])
                continue
            inv = is_true(r["inv"])
            n = sizes[(r["s"], r["r"], inv)]
            if n <= lam or r["o"] in reached:
                edges[Edge(r["s"], r["r"], inv, r["o"])] = None
            if seen is not None and n <= scan_limit:  # a group read whole: its rows carry the labels
                seen.asked.add(r["o"])
                if "label" in r:
                    seen.add(r["o"], r["label"], r.get("preferred"))
        return list(edges)

    def expand_hops(self, topics: Sequence[str], hops: int, lam: int) -> WholeRetrieval:
        """What `retrieve` asks hop by hop, and the labels. Where a hop is two queries (Virtuoso), the
        second brings the labels of the entities it reads, of the hop's relations and (hop 1) of
        the topics, so that no closing labels query is needed (2-hop λ=100 around a director's
        films, a labels query of ~230 IRIs took 17 ms; one of topics and relations ~1 ms), and the
        group sizes of the entities it reads, so that only hop 1 asks for sizes: k + 1 queries."""
        reached = dict.fromkeys(topics)
        frontier = list(reached)
        found: list[tuple[Edge, int]] = []
        seen = LabelRows()
        sizes: Sizes | None = None  # the frontier's group sizes, where the previous hop brought them
        for hop in range(1, hops + 1):
            if not frontier:
                break
            if self.expand_round_trips == 2:
                next_sizes: Sizes | None = {} if hop < hops else None
                edges = self._expand_two_step(
                    frontier, reached, lam, seen, also_label=topics if hop == 1 else (), sizes=sizes, next_sizes=next_sizes
                )
                sizes = next_sizes
            else:
                edges = self.expand(frontier, reached, lam)
            frontier = list(dict.fromkeys(e.tail for e in edges if e.tail not in reached))
            reached.update(dict.fromkeys(frontier))
            found += [(edge, hop) for edge in edges]
        wanted = [*reached, *dict.fromkeys(edge.relation for edge, _ in found)]
        labels = self.labels([iri for iri in wanted if iri not in seen.asked])
        labels.update((iri, display_label(iri, seen.plain.get(iri, ()), seen.preferred.get(iri, ()))) for iri in wanted if iri in seen.asked)
        return WholeRetrieval(found, labels)

    def labels(self, iris: Iterable[str]) -> dict[str, str]:
        """One label per IRI: an explicitly given label (a labels file, rdfs:label in RDF) over the
        id a fact used; among several, the smallest — the same answer from every store."""
        iris = list(dict.fromkeys(iris))
        plain: dict[str, list[str]] = {}
        preferred: dict[str, list[str]] = {}
        for part in _slices(iris, self.max_values):
            for row in self._select("labels", entities=escape.numbered_iris(part)) if part else []:
                iri = part[int(row["k"])]
                if "label" in row:
                    plain.setdefault(iri, []).append(row["label"])
                if "preferred" in row:
                    preferred.setdefault(iri, []).append(row["preferred"])
        return {iri: display_label(iri, plain.get(iri, ()), preferred.get(iri, ())) for iri in iris}

    def label_page(self, after: tuple[str, str] | None, limit: int) -> list[tuple[str, str]]:
        iri, label = after or ("", "")
        rows = self._select("label_page", after_iri=escape.literal(iri), after_label=escape.literal(label), limit=escape.integer(limit))
        return [(row["e"], row["label"]) for row in rows]

    def label_pairs(self, page: int = 5000) -> Iterator[tuple[str, str]]:
        """Every (entity IRI, label) pair of the KG, page by page (`label_page`): what an endpoint that
        caps its results is read with (the embedded store and other endpoints stream them instead)."""
        after = None
        while True:
            rows = self.label_page(after, page)
            yield from rows
            if len(rows) < page:
                return
            after = rows[-1]

    def relations(self) -> list[RelationInfo]:
        return [RelationInfo(r["r"], r["label"], int(r["facts"])) for r in self._select("relations")]

    def subject_relations(self, iris: Sequence[str]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for part in _slices(list(dict.fromkeys(iris)), self.max_values):
            for row in self._select("subject_relations", entities=escape.iri_list(part)) if part else []:
                out.setdefault(row["e"], []).append(row["label"])
        return out

    def counts(self) -> StoreCounts:
        facts = int(self._select("count_facts")[0]["n"])
        entities = int(self._select("count_entities")[0]["n"])
        return StoreCounts(facts=facts, entities=entities, relations=len(self.relations()))

    # --- baselines for bench/retrieval.py; not used by the engine ---
    def expand_uncapped(self, frontier: Sequence[str]) -> list[Edge]:
        if not frontier:
            return []
        rows = self._select("expand_all", frontier=escape.iri_list(frontier))
        return [Edge(r["s"], r["r"], is_true(r["inv"]), r["o"]) for r in rows]

    def relations_of(self, entity: str) -> list[tuple[str, bool]]:
        return [(r["r"], is_true(r["inv"])) for r in self._select("relations_of", entity=escape.iri(entity))]

    def neighbours(self, entity: str, relation: str, inverse: bool) -> list[str]:
        name = "neighbours_in" if inverse else "neighbours_out"
        return [r["o"] for r in self._select(name, entity=escape.iri(entity), relation=escape.iri(relation))]


class LabelRows:
    """Label rows gathered while expanding: every id label and preferred label per IRI."""

    def __init__(self) -> None:
        self.plain: dict[str, set[str]] = {}
        self.preferred: dict[str, set[str]] = {}
        self.asked: set[str] = set()  # IRIs whose label rows (possibly none) are all in

    def add(self, iri: str, label: str, preferred: str | None) -> None:
        self.plain.setdefault(iri, set()).add(label)
        if preferred is not None:
            self.preferred.setdefault(iri, set()).add(preferred)


def pick_kg(kgs: list[str], kg: str | None, where: str) -> str:
    """The KG to read: the one named, or the only one there is."""
    if kg is None:
        if len(kgs) == 1:
            return kgs[0]
        if not kgs:
            raise UnknownKG(f"the store at {where} holds no KG yet")
        raise UnknownKG(f"the store at {where} holds several KGs ({', '.join(kgs)}); name one with --kg")
    if kg not in kgs:
        raise UnknownKG(f"no KG named {kg!r} in the store at {where}; it holds: {', '.join(kgs) or 'none'}")
    return kg
