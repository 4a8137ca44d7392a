"""`kgqa openworld build`: an open-world benchmark from a KG (GLOW §4).

For each pattern, target entities are drawn (seeded) among those whose answer is in the pattern's
class set; the facts that answer them are deleted from the KG copy that the store loads and that the
GNN trains on, so neither sees them. One-hop: every (v, e_t, ·) fact of the target entity (and a fact
of e_t between the two written the other way round). Two-hop (a true chain, e.g. film → director →
nationality): every e_t fact of the middle entities; the first step stays. Template questions ask
for the deleted facts. KGs that ship with their missing facts (Countries S1–S3 test/valid) pass them
as `held_out`: the questions ask for those, and they are deleted wherever the KG files repeat them.

The folder written:
    kg.tsv           the KG without the deleted facts (subject<TAB>relation<TAB>object)
    labels.tsv       id<TAB>label, when labels were given
    deleted.tsv      the deleted facts
    questions.jsonl  {"question", "topics", "topic_id", "answers", "answer_ids", "pattern", "hop", "kg"}
    patterns.json    the patterns with their class sets filled in and the labels of the classes
    manifest.json    sources, seed, counts
"""

from __future__ import annotations

import gzip
import json
import random
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kgqa.methods.glow.patterns import Fact, Pattern, PatternSet, Step, class_set, follow

MIN_CONTEXT = 3  # a drawn entity keeps at least this many facts: something for the prompt and the GNN


@dataclass
class OpenWorld:
    kg: str
    facts: list[Fact]  # what remains
    deleted: list[Fact]
    questions: list[dict]
    patterns: PatternSet  # with class sets
    labels: dict[str, str] = field(default_factory=dict)
    manifest: dict = field(default_factory=dict)

    def write(self, out: Path) -> None:
        out.mkdir(parents=True, exist_ok=True)
        _write_tsv(out / "kg.tsv", self.facts)
        _write_tsv(out / "deleted.tsv", self.deleted)
        if self.labels:
            (out / "labels.tsv").write_text("".join(f"{k}\t{v}\n" for k, v in sorted(self.labels.items())), encoding="utf-8")
        with open(out / "questions.jsonl", "w", encoding="utf-8") as f:
            for q in self.questions:
                f.write(json.dumps(q, ensure_ascii=False) + "\n")
        data = self.patterns.to_json()
        for p in data["patterns"]:
            p["label_texts"] = [self.label(c) for c in p["labels"]]
        (out / "patterns.json").write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        (out / "manifest.json").write_text(json.dumps(self.manifest, indent=1) + "\n", encoding="utf-8")

    def label(self, node: str) -> str:
        return self.labels.get(node, node)


def read_facts(path: Path) -> list[Fact]:
    """Tab-separated facts, plain or gzipped; a line that is not three fields is an error naming it."""
    opener = gzip.open if path.suffix == ".gz" else open
    facts = []
    with opener(path, "rt", encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip() or line.startswith("#"):
                continue
            parts = [part.strip() for part in line.rstrip("\r\n").split("\t")]  # as the store's loader reads them
            if len(parts) != 3:
                raise ValueError(f"{path}:{number}: expected subject<TAB>relation<TAB>object, found {len(parts)} fields")
            facts.append((parts[0], parts[1], parts[2]))
    return facts


def read_labels(path: Path) -> dict[str, str]:
    """id<TAB>label lines, or FB15k-237's entity2wikidata.json(.gz) (MID → {"label": …})."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        if path.name.removesuffix(".gz").endswith(".json"):
            return {k: v["label"] for k, v in json.load(f).items() if isinstance(v, dict) and v.get("label")}
        labels = {}
        for number, line in enumerate(f, 1):
            if not line.strip() or line.startswith("#"):
                continue
            parts = [part.strip() for part in line.rstrip("\r\n").split("\t")]
            if len(parts) != 2:
                raise ValueError(f"{path}:{number}: expected id<TAB>label")
            labels[parts[0]] = parts[1]
        return labels


def _write_tsv(path: Path, facts: Iterable[Fact]) -> None:
    path.write_text("".join(f"{s}\t{r}\t{o}\n" for s, r, o in facts), encoding="utf-8")


def build(kg: str, facts: Sequence[Fact], patterns: PatternSet, per_pattern: int = 100, seed: int = 11,
          labels: dict[str, str] | None = None, held_out: Sequence[Fact] = (), sources: Sequence[str] = ()) -> OpenWorld:
    labels = dict(labels or {})
    rng = random.Random(seed)
    original = list(dict.fromkeys(facts))
    by_relation: dict[str, list[Fact]] = defaultdict(list)
    for f in original:
        by_relation[f[1]].append(f)

    def along(path: Sequence[Step], source: dict[str, list[Fact]] = by_relation) -> dict[str, set[str]]:
        return follow([f for r in dict.fromkeys(s.relation for s in path) for f in source.get(r, ())], path)

    degree = Counter(e for s, _, o in original for e in (s, o))
    resolved: list[Pattern] = []
    picked: list[tuple[Pattern, str, tuple[str, ...]]] = []
    to_delete: set[Fact] = set()
    used: set[str] = set()
    held: dict[str, list[Fact]] = defaultdict(list)
    for f in held_out:
        held[f[1]].append(f)
    for pattern in patterns.patterns:
        known = along(pattern.path)
        ends = (along(pattern.path, held) if pattern.hops == 1 else {}) if held_out else known
        classes = class_set(pattern, known)
        resolved.append(Pattern(pattern.name, pattern.entity_type, pattern.label_name, pattern.path, pattern.phrasings, classes,
                                pattern.min_class_size, pattern.max_classes))
        in_set = set(classes)
        candidates = sorted(e for e, answers in ends.items() if answers & in_set and e not in used
                            and (held_out or degree[e] - (len(known.get(e, ())) if pattern.hops == 1 else 0) >= MIN_CONTEXT))
        chosen = candidates if held_out else rng.sample(candidates, min(per_pattern, len(candidates)))
        for entity in chosen:
            used.add(entity)
            picked.append((pattern, entity, tuple(sorted(ends[entity] & in_set))))
        if held_out:
            continue  # the KG lacks exactly the held-out facts; it keeps the rest (Countries S1 keeps the subregion)
        # The facts that answer the chosen entities: every target-relation fact at the end the pattern leaves by.
        step = pattern.target
        if pattern.hops == 1:
            leaving = set(chosen)
        else:
            middles = along(pattern.path[:1])
            leaving = {m for e in chosen for m in middles.get(e, ())}
        for f in by_relation.get(step.relation, ()):
            if f[0] in leaving or f[2] in leaving:
                to_delete.add(f)
    to_delete |= set(held_out)  # absent already where the dataset held them out; listed either way
    kept = [f for f in original if f not in to_delete]
    questions = []
    for pattern, entity, gold in picked:
        name = labels.get(entity, entity.replace("_", " "))
        questions.append({"question": rng.choice(pattern.phrasings).format(entity=name), "topics": [labels.get(entity, entity)],
                          "topic_id": entity, "answers": [labels.get(g, g) for g in gold], "answer_ids": list(gold),
                          "pattern": pattern.name, "hop": pattern.hops, "kg": kg})
    per = Counter(q["pattern"] for q in questions)
    manifest = {"format": "kgqa-openworld/1", "kg": kg, "seed": seed, "per_pattern": per_pattern, "sources": list(sources),
                "facts": len(original), "kept": len(kept), "deleted": len(to_delete), "questions": dict(per),
                "classes": {p.name: len(p.labels) for p in resolved}}
    pattern_set = PatternSet(kg, patterns.description, tuple(resolved))
    return OpenWorld(kg, kept, sorted(to_delete), questions, pattern_set, {k: v for k, v in labels.items() if k in degree}, manifest)


def check_absent(world: OpenWorld) -> list[str]:
    """What the build promises, checked: no deleted fact remains, and no question's answer is one
    step of its pattern away in what remains. Empty when both hold."""
    kept = set(world.facts)
    problems = [f"deleted fact still present: {f}" for f in world.deleted if f in kept]
    by_name = {p.name: p for p in world.patterns.patterns}
    reach: dict[str, dict[str, set[str]]] = defaultdict(dict)
    for q in world.questions:
        pattern = by_name[q["pattern"]]
        if pattern.name not in reach:
            reach[pattern.name] = follow(world.facts, pattern.path)
        leaked = reach[pattern.name].get(q["topic_id"], set()) & set(q["answer_ids"])
        if leaked:
            problems.append(f"{q['question']!r}: the answer {sorted(leaked)} is still reachable by the pattern's path")
    return problems
