"""QA examples → scorer inputs: APP subgraphs from a store with the gold answers located in them,
cached on disk so training epochs never query the store again."""

from __future__ import annotations

import hashlib
import pickle
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path


from kgqa.core.labels import normalise_label
from kgqa.loaders.qa import QAExample
from kgqa.retrieval.app import retrieve
from kgqa.core.store import GraphStore
from kgqa.core.subgraph import Subgraph


@dataclass
class Prepared:
    example: QAExample
    subgraph: Subgraph | None  # None: no topic entity could be resolved
    answers: list[int]  # local node ids of gold answers found in the subgraph
    answers_in_kb: bool  # at least one gold answer label is an entity of the KB


def locate_answers(sg: Subgraph, answers: Sequence[str]) -> list[int]:
    """Nodes whose label is a gold answer (exact; failing that, normalised)."""
    wanted = set(answers)
    exact = [i for i, label in enumerate(sg.node_labels) if label in wanted]
    if exact:
        return exact
    keys = {normalise_label(a) for a in answers}
    return [i for i, label in enumerate(sg.node_labels) if normalise_label(label) in keys]


def prepare(
    store: GraphStore,
    examples: Sequence[QAExample],
    hops: int,
    lam: int,
    topics_of: Callable[[QAExample], list[str]] | None = None,
    cache_dir: Path | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[Prepared]:
    """Subgraphs for `examples` (topics: the gold ones unless `topics_of` gives IRIs)."""
    cache = None
    if cache_dir is not None:
        key = hashlib.sha256(
            repr((store.kg, store.counts(), hops, lam, topics_of is None, [(e.qid, e.question, e.topics) for e in examples])).encode()
        ).hexdigest()[:24]
        cache = Path(cache_dir) / f"prepared-{key}.pkl"
        if cache.exists():
            with open(cache, "rb") as f:
                return pickle.load(f)
    in_kb: dict[str, bool] = {}
    out = []
    for i, ex in enumerate(examples):
        if topics_of is not None:
            topics = topics_of(ex)
        else:
            found = store.resolve(list(ex.topics))
            topics = [hits[0].entity.iri for hits in found.values() if hits]
        missing = [a for a in ex.answers if a not in in_kb]
        if missing:
            for label, hits in store.resolve(missing).items():
                in_kb[label] = bool(hits)
        answers_in_kb = any(in_kb[a] for a in ex.answers)
        if not topics:
            out.append(Prepared(ex, None, [], answers_in_kb))
        else:
            sg = retrieve(store, topics, hops, lam)
            gold = [n for n in locate_answers(sg, ex.answers) if n not in set(sg.topics.tolist())]
            out.append(Prepared(ex, sg, gold, answers_in_kb))
        if progress:
            progress(i + 1)
    if cache is not None:
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_suffix(".tmp")
        with open(tmp, "wb") as f:
            pickle.dump(out, f, protocol=pickle.HIGHEST_PROTOCOL)
        tmp.replace(cache)
    return out

