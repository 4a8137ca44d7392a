"""Real human Freebase questions that can be asked of FB15k-237, as JSONL for `kgqa eval` and `kgqa train`.

    python bench/ground_freebase.py --out /tmp/transfer/freebase-human.jsonl   # where bench/transfer.py and bench/abstention.py look

Reads the question sets in shared/data/freebase_kgqa_questions (LMP's SimpleQuestions, WebQuestions, CWQ
and GrailQA; GraSP's WebQSP and CWQ; not GraSP's IKGWQ, whose answers are post-2017 facts) and keeps a
question when, in the FB15k-237 train split (what our store holds):
  1. at least one topic MID is an entity of the train graph;
  2. its answers map: MID answers (WebQSP, GrailQA) must all be train entities; name answers (the others)
     map to the one entity whose label in the labels file equals the name (case-insensitive) or, when no
     label does, to the one entity with that name among its Wikidata aliases (entity2wikidata.json.gz:
     "English Language" → English, "Franklin D. Roosevelt"); names that match no entity or several are
     left out; at least one answer must map;
  3. a kept answer lies 1-3 hops from a topic in the train graph taken as undirected (farther ones are
     dropped; `hop` is the shortest distance);
  4. a topic's label names one entity only (other topics are dropped; if none is left, so is the question).
Identical question texts (case and spacing aside) are written once, the first seen. A table of how many
questions pass each step per source file goes to stdout.

Licences of the question data (see SOURCE.md there): WebQSP CC BY 4.0, CWQ CC BY-SA, GrailQA CC BY-SA 4.0,
SimpleQuestions CC BY 3.0.
"""

from __future__ import annotations

import argparse
import gzip
import json
import urllib.parse
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
SOURCES = ("lmp_SimpleQA", "lmp_WebQuestions", "lmp_cwq", "lmp_grailqa", "grasp_WebQSP", "grasp_cwq_0.4")
IRI = "urn:kgqa:kg:fb15k237:e:"
MAX_HOPS = 3
FAR = np.int8(MAX_HOPS + 1)
STEPS = ("read", "topic in KG", "answers mapped", "<=3 hops", "d=1", "d=2", "d=3", "ambiguous topic", "duplicate", "kept")


@dataclass(frozen=True)
class Raw:
    """One question as its file gives it: MIDs written /m/..., answers as MIDs or as names."""

    source: str
    source_id: str
    question: str
    topics: tuple[str, ...]
    answer_mids: tuple[str, ...]
    answer_names: tuple[str, ...]


def _mid(freebase_id: str) -> str:
    return "/" + freebase_id.replace(".", "/", 1)


def _iri(mid: str) -> str:
    return IRI + urllib.parse.quote(mid, safe="")


def read_source(name: str) -> Iterator[Raw]:
    """The questions of one file, whatever its layout."""
    with gzip.open(SHARED / "freebase_kgqa_questions" / f"{name}.json.gz", "rt", encoding="utf-8") as f:
        items = json.load(f)
    for index, item in enumerate(items):
        topics = [_mid(m) for m in item["topic_entity"]]
        mids: list[str] = []
        names: list[str] = []
        if name == "grasp_WebQSP":
            topics += [_mid(p["TopicEntityMid"]) for p in item["Parses"] if p.get("TopicEntityMid")]
            mids = [_mid(a["AnswerArgument"]) for p in item["Parses"] for a in p["Answers"] if a["AnswerType"] == "Entity"]
            question, source_id = item["RawQuestion"], item["QuestionId"]
        elif name == "lmp_grailqa":
            mids = [_mid(a["answer_argument"]) for a in item["answer"] if a["answer_type"] == "Entity"]
            question, source_id = item["question"], item["qid"]
        else:
            answer = item.get("answers", item.get("answer"))
            names = [answer] if isinstance(answer, str) else list(answer)
            question, source_id = item["question"], item.get("ID", index)
        unique = (tuple(dict.fromkeys(values)) for values in (topics, mids, names))
        yield Raw(name, str(source_id), question.strip(), *unique)


class Graph:
    """The train split as an undirected graph in CSR form, with per-source BFS distances cached."""

    def __init__(self, triples: Path) -> None:
        with gzip.open(triples, "rt", encoding="utf-8") as f:
            pairs = [(h, t) for h, _, t in (line.rstrip("\n").split("\t") for line in f)]
        self.index = {m: i for i, m in enumerate(dict.fromkeys(m for pair in pairs for m in pair))}
        ends = np.array([(self.index[h], self.index[t]) for h, t in pairs], dtype=np.int32)
        heads, tails = np.concatenate([ends[:, 0], ends[:, 1]]), np.concatenate([ends[:, 1], ends[:, 0]])
        order = np.argsort(heads, kind="stable")
        self.neighbours = tails[order]
        self.offsets = np.concatenate([[0], np.cumsum(np.bincount(heads, minlength=len(self.index)))])
        self._cache: dict[int, np.ndarray] = {}

    def __contains__(self, mid: str) -> bool:
        return mid in self.index

    def distances(self, mid: str) -> np.ndarray:
        """Hops from `mid` to every entity, FAR beyond MAX_HOPS."""
        source = self.index[mid]
        if source not in self._cache:
            dist = np.full(len(self.index), FAR, dtype=np.int8)
            dist[source] = 0
            frontier = np.array([source])
            for hop in range(1, MAX_HOPS + 1):
                starts, counts = self.offsets[frontier], self.offsets[frontier + 1] - self.offsets[frontier]
                gather = np.repeat(starts - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())
                reached = self.neighbours[gather]
                frontier = np.unique(reached[dist[reached] == FAR])
                dist[frontier] = hop
            self._cache[source] = dist
        return self._cache[source]

    def nearest(self, topics: list[str], answers: list[str]) -> dict[str, int]:
        """Each answer's shortest distance from any topic, for answers 1..MAX_HOPS away."""
        if not topics:
            return {}
        dist = np.min([self.distances(t) for t in topics], axis=0)
        found = {a: int(dist[self.index[a]]) for a in answers}
        return {a: d for a, d in found.items() if 1 <= d <= MAX_HOPS}


def read_labels(path: Path) -> tuple[dict[str, str], dict[str, list[str]]]:
    """MID → label, and lower-cased label → the MIDs that carry it."""
    labels: dict[str, str] = {}
    by_name: dict[str, list[str]] = defaultdict(list)
    with open(path, encoding="utf-8") as f:
        for line in f:
            mid, label = line.rstrip("\n").split("\t", 1)
            labels[mid] = label
            by_name[label.lower()].append(mid)
    return labels, by_name


def read_aliases(path: Path) -> dict[str, list[str]]:
    """Lower-cased Wikidata alias → the MIDs that carry it."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        entities = json.load(f)
    by_alias: dict[str, list[str]] = defaultdict(list)
    for mid, entity in entities.items():
        for alias in dict.fromkeys(a.lower() for a in entity.get("alternatives", [])):
            by_alias[alias].append(mid)
    return by_alias


def ground(raw: Raw, graph: Graph, labels: dict[str, str], by_name: dict[str, list[str]], by_alias: dict[str, list[str]],
           tally: Counter) -> dict | None:
    """The JSONL record of a grounded question, or None; `tally` counts the steps it passed."""
    topics = [t for t in raw.topics if t in graph]
    if not topics:
        return None
    tally["topic in KG"] += 1
    if raw.answer_mids:
        answers = list(raw.answer_mids) if all(a in graph and a in labels for a in raw.answer_mids) else []
    else:
        unique = (by_name.get(n.lower()) or by_alias.get(n.lower(), []) for n in raw.answer_names)
        answers = list(dict.fromkeys(m[0] for m in unique if len(m) == 1 and m[0] in graph))
    if not answers:
        return None
    tally["answers mapped"] += 1
    joined = graph.nearest(topics, answers)
    if not joined:
        return None
    tally["<=3 hops"] += 1
    tally[f"d={min(joined.values())}"] += 1
    clear = [t for t in topics if t in labels and len(by_name[labels[t].lower()]) == 1]
    kept = graph.nearest(clear, list(joined))
    if not kept:
        tally["ambiguous topic"] += 1
        return None
    return {"question": raw.question, "answers": [labels[a] for a in kept], "topics": [labels[t] for t in clear],
            "hop": min(kept.values()), "shape": "path", "path": [], "answer_iris": [_iri(a) for a in kept],
            "topic_iris": [_iri(t) for t in clear], "source": raw.source, "source_id": raw.source_id}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="JSONL to write")
    parser.add_argument("--labels", type=Path, default=Path("/tmp/kgs/fb15k-labels.tsv"), help="MID<TAB>label per line")
    args = parser.parse_args()
    graph = Graph(SHARED / "fb15k237" / "train.txt.gz")
    labels, by_name = read_labels(args.labels)
    by_alias = read_aliases(SHARED / "fb15k237" / "entity2wikidata.json.gz")
    seen: set[str] = set()
    rows: list[dict] = []
    tallies: dict[str, Counter] = {}
    for name in SOURCES:
        tally = tallies[name] = Counter()
        for raw in read_source(name):
            tally["read"] += 1
            record = ground(raw, graph, labels, by_name, by_alias, tally)
            if record is None:
                continue
            key = " ".join(raw.question.lower().rstrip("?").split())
            if key in seen:
                tally["duplicate"] += 1
                continue
            seen.add(key)
            tally["kept"] += 1
            rows.append(record)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    tallies["total"] = sum(tallies.values(), Counter())
    width = max(map(len, tallies))
    print(f"{'source':<{width}}  " + "  ".join(STEPS))
    for name, tally in tallies.items():
        print(f"{name:<{width}}  " + "  ".join(f"{tally[step]:>{len(step)}}" for step in STEPS))
    print(f"kept by hop: {dict(sorted(Counter(row['hop'] for row in rows).items()))}; wrote {len(rows)} questions to {args.out}")


if __name__ == "__main__":
    main()
