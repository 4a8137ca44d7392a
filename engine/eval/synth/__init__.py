"""Questions from any loaded KG (`kgqa synth`): relation paths of 1–3 hops and two-topic
conjunctions sampled through the store protocol, answered by walking the graph, said in varied words.
Deterministic by seed; the JSONL is what `kgqa eval` and `kgqa train` read."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from kgqa.core.store import GraphStore
from kgqa.eval.synth.phrasing import Wording, finish, say_conjunction, say_path
from kgqa.eval.synth.synonyms import RelationSynonyms
from kgqa.eval.synth.walk import Walk, Walker
from kgqa.retrieval.relation_text import relation_words

PAGE = 5000


@dataclass(frozen=True)
class SynthQuestion:
    question: str
    answers: tuple[str, ...]  # labels
    topics: tuple[str, ...]  # labels
    hop: int
    shape: str  # "path" | "and"
    path: tuple[str, ...]  # relation labels walked, inverse ones marked ⁻¹
    answer_iris: tuple[str, ...]
    topic_iris: tuple[str, ...]

    def record(self) -> dict:
        return {"question": self.question, "answers": list(self.answers), "topics": list(self.topics), "hop": self.hop,
                "shape": self.shape, "path": list(self.path), "answer_iris": list(self.answer_iris), "topic_iris": list(self.topic_iris)}


_ID_LIKE = re.compile(r"^(/[mg]/\S+|[QP]\d+|[^A-Za-z\u00C0-\uFFFF]*)$")


def looks_like_id(label: str) -> bool:
    """A Freebase MID, a Wikidata id or a label without letters: no name a question could use."""
    return bool(_ID_LIKE.match(label))


def entity_labels(store: GraphStore, limit: int = 2_000_000) -> dict[str, str]:
    """IRI → the label the store shows for it, for every entity (up to `limit` of them)."""
    seen: dict[str, None] = {}  # an entity with several labels comes once per label
    for iri, _ in store.label_pairs():
        seen[iri] = None
        if len(seen) >= limit:
            break
    iris = list(seen)
    shown: dict[str, str] = {}
    for start in range(0, len(iris), PAGE):
        shown.update(store.labels(iris[start : start + PAGE]))
    return {iri: shown.get(iri, iri) for iri in iris}


def _unambiguous(store: GraphStore, labels: dict[str, str], iris: Sequence[str]) -> set[str]:
    """The IRIs whose label names that entity alone (a question naming it can be answered)."""
    found = store.resolve(sorted({labels[i] for i in iris}))
    return {i for i in iris if [h.entity.iri for h in found.get(labels[i], [])] == [i]}


def synthesise(store: GraphStore, count: int, seed: int = 0, hops: Sequence[int] = (1, 2, 3), conjunctions: float = 0.15,
               max_answers: int = 20, progress: Callable[[int], None] | None = None, max_tries: int | None = None,
               synonyms: RelationSynonyms | None = None, synonym_share: float = 0.5, event_share: float = 0.0) -> list[SynthQuestion]:
    """`count` questions (fewer if the KG cannot give them within `max_tries` samples): a share
    `conjunctions` of two-topic questions, the rest paths with hop counts drawn evenly from `hops`.
    No question is asked twice. With `synonyms`, each relation is said in other words (WordNet's,
    `kgqa.eval.synth.synonyms`) with probability `synonym_share`, where it has any; a share
    `event_share` of the paths ends in a relation that has an event wording (`synonyms.events`:
    "place of birth"), walked forwards and said with it ("where was X's spouse born"): uniform walks
    reach those few relations too rarely to teach a reader the form."""
    if count < 0 or not 0 <= conjunctions <= 1 or not hops or any(h not in (1, 2, 3) for h in hops):
        raise ValueError("count must be >= 0, conjunctions in [0, 1], hops among 1, 2, 3")
    if not 0 <= synonym_share <= 1 or not 0 <= event_share <= 1:
        raise ValueError(f"synonym_share and event_share must be in [0, 1], not {synonym_share}, {event_share}")
    rng = random.Random(seed)
    labels = entity_labels(store)
    if not labels:
        raise ValueError(f"KG {store.kg!r} has no entities: load it first")
    relation_labels = {r.iri: r.label for r in store.relations()}
    events = frozenset(iri for iri, label in relation_labels.items() if synonyms and label in synonyms.events)
    if event_share > 0 and not events:
        raise ValueError(f"event_share {event_share}: no relation of KG {store.kg!r} has an event wording (synonyms are needed to find them)")
    named = sorted(_unambiguous(store, labels, sorted(i for i, label in labels.items() if not looks_like_id(label))))
    walker = Walker(store, named, relation_labels, rng, max_answers=max_answers)
    out: list[SynthQuestion] = []
    seen: set[tuple] = set()
    tries, max_tries = 0, max_tries or 50 * count + 100
    usable = set(named)
    while len(out) < count and tries < max_tries:
        tries += 1
        shape_and = rng.random() < conjunctions
        steered = not shape_and and rng.random() < event_share
        walk = walker.conjunction() if shape_and else walker.path(rng.choice(list(hops)), last=events if steered else None)
        if walk is None or not all(t in usable for t in walk.topics):  # a conjunction's second topic may be unnamed
            continue
        key = (walk.topics, tuple(s.name for s in walk.steps))
        if key in seen:
            continue
        seen.add(key)
        out.append(_said(walk, labels, store, rng, _wording(synonyms, synonym_share, rng, walk.steps[-1].label if steered else None)))
        if progress:
            progress(len(out))
    return out


def _wording(synonyms: RelationSynonyms | None, share: float, rng: random.Random, event_label: str | None) -> Wording | None:
    """How a walk's relations are said: `event_label` (a steered walk's last relation) with its event
    wording, the others as `RelationSynonyms.wording` draws them (None: each in its own words)."""
    if synonyms is None or (share == 0 and event_label is None):
        return None
    found = synonyms
    return lambda label: found.events[label] if label == event_label else (found.wording(label, rng, share) if share > 0 else relation_words(label))


def _said(walk: Walk, labels: dict[str, str], store: GraphStore, rng: random.Random, wording: Wording | None) -> SynthQuestion:
    topics = tuple(labels[t] for t in walk.topics)
    if walk.shape == "and":
        text = say_conjunction(walk.steps, topics, rng, wording)
    else:
        text = say_path(walk.steps, topics[0], walk.excludes_topic, rng, wording)
    answer_iris = tuple(sorted(walk.answers))
    missing = [i for i in answer_iris if i not in labels]
    found = store.labels(missing) if missing else {}
    return SynthQuestion(finish(text, rng), tuple(labels.get(i) or found.get(i, i) for i in answer_iris), topics, 1 if walk.shape == "and" else len(walk.steps),
                         walk.shape, tuple(s.name for s in walk.steps), answer_iris, walk.topics)


def write_jsonl(questions: Sequence[SynthQuestion], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for q in questions:
            f.write(json.dumps(q.record(), ensure_ascii=False) + "\n")
    tmp.replace(path)


def read_jsonl(path: Path) -> Iterator[dict]:
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)
