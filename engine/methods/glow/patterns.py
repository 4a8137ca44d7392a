"""Open-world question patterns (GLOW §3.1, App. A.3): an entity type, a target relation path of one
or two steps, and the small set of classes its answers come from.

A KG's patterns are declared in a small JSON file (`kgqa/methods/glow/patterns/<kg>.json` for the
KGs shipped here) or discovered from the facts: relations whose objects form a small class set.

    {"kg": "countries", "description": "a geography", "patterns": [
      {"name": "country-region", "entity_type": "country", "label_name": "region",
       "path": [{"relation": "locatedin", "direction": "out"}],
       "labels": ["africa", "americas", "asia", "europe", "oceania"],
       "phrasings": ["Which region is {entity} located in?"]}]}

Relations and labels are the ids the KG's source files use (the store mints IRIs from them).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

DECLARED = Path(__file__).resolve().parent / "patterns"
MIN_CLASSES, MAX_CLASSES = 2, 100  # GLOW's label sets: a small class set (App. A.3: 2 to 102 classes)

Fact = tuple[str, str, str]


@dataclass(frozen=True)
class Step:
    relation: str
    direction: str = "out"  # "out": (entity, relation, next); "in": (next, relation, entity)

    def __post_init__(self) -> None:
        if self.direction not in ("out", "in"):
            raise ValueError(f"a pattern step's direction must be 'out' or 'in', got {self.direction!r}")


@dataclass(frozen=True)
class Pattern:
    name: str
    entity_type: str
    label_name: str  # what is asked: "nationality", "region"
    path: tuple[Step, ...]
    phrasings: tuple[str, ...]  # question templates with {entity}
    labels: tuple[str, ...] = ()  # the class set (ids); empty: the most frequent answers, at least `min_class_size` each
    min_class_size: int = 10
    max_classes: int = MAX_CLASSES

    @property
    def hops(self) -> int:
        return len(self.path)

    @property
    def target(self) -> Step:
        """The step whose facts the open world lacks: the last one (for 2 hops, e.g. the director's nationality)."""
        return self.path[-1]

    def to_json(self) -> dict:
        data = asdict(self)
        data["path"] = [asdict(s) for s in self.path]
        data["phrasings"], data["labels"] = list(self.phrasings), list(self.labels)
        return data

    @staticmethod
    def from_json(data: dict, where: str = "pattern") -> "Pattern":
        try:
            path = tuple(Step(**s) for s in data["path"])
            if not 1 <= len(path) <= 2:
                raise ValueError(f"a path of 1 or 2 steps, got {len(path)}")
            phrasings = tuple(data["phrasings"])
            if not phrasings or any("{entity}" not in p for p in phrasings):
                raise ValueError("every phrasing needs {entity}")
            return Pattern(data["name"], data["entity_type"], data["label_name"], path, phrasings,
                           tuple(data.get("labels", ())), int(data.get("min_class_size", 10)), int(data.get("max_classes", MAX_CLASSES)))
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"{where}: {error}") from error


@dataclass(frozen=True)
class PatternSet:
    kg: str
    description: str
    patterns: tuple[Pattern, ...] = field(default_factory=tuple)

    def get(self, name: str) -> Pattern:
        for p in self.patterns:
            if p.name == name:
                return p
        raise ValueError(f"no pattern {name!r} for KG {self.kg!r}: it has {', '.join(p.name for p in self.patterns)}")

    def to_json(self) -> dict:
        return {"kg": self.kg, "description": self.description, "patterns": [p.to_json() for p in self.patterns]}


def load_patterns(path: str | Path) -> PatternSet:
    """A declared pattern file: a path, or the name of one shipped here (`fb15k237`, `countries`)."""
    file = Path(path)
    if not file.exists() and (DECLARED / f"{path}.json").exists():
        file = DECLARED / f"{path}.json"
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        shipped = ", ".join(sorted(p.stem for p in DECLARED.glob("*.json")))
        raise ValueError(f"pattern file {str(path)!r} does not exist (shipped: {shipped})") from None
    except ValueError as error:
        raise ValueError(f"{file}: not JSON: {error}") from error
    patterns = tuple(Pattern.from_json(p, f"{file}: pattern {i + 1}") for i, p in enumerate(data.get("patterns", [])))
    if not patterns:
        raise ValueError(f"{file}: no patterns")
    return PatternSet(str(data.get("kg", file.stem)), str(data.get("description", "")), patterns)


def follow(facts: Iterable[Fact], path: Sequence[Step]) -> dict[str, set[str]]:
    """entity → the ends of `path` from it, over `facts`."""
    by_step: list[dict[str, set[str]]] = [defaultdict(set) for _ in path]
    wanted = {s.relation for s in path}
    for s, r, o in facts:
        if r in wanted:
            for i, step in enumerate(path):
                if step.relation == r:
                    a, b = (s, o) if step.direction == "out" else (o, s)
                    by_step[i][a].add(b)
    ends = {e: set(v) for e, v in by_step[0].items()}
    for step_map in by_step[1:]:
        ends = {e: {z for m in mids for z in step_map.get(m, ())} for e, mids in ends.items()}
    return {e: v for e, v in ends.items() if v}


def class_set(pattern: Pattern, ends: dict[str, set[str]]) -> tuple[str, ...]:
    """The pattern's declared labels, else its answers held by at least `min_class_size` entities,
    the most frequent `max_classes` of them (ties by id, so the set is the same on every run)."""
    if pattern.labels:
        return pattern.labels
    counts = Counter(label for labels in ends.values() for label in labels)
    common = sorted((c for c in counts.items() if c[1] >= pattern.min_class_size), key=lambda c: (-c[1], c[0]))
    return tuple(label for label, _ in common[: pattern.max_classes])


def discover_patterns(facts: Sequence[Fact], kg: str, min_subjects: int = 50) -> PatternSet:
    """One-hop patterns from the facts: relations whose objects form a class set of 2–100 classes,
    each class held by ≥ 10 subjects, over ≥ `min_subjects` subjects. Phrasings come from the
    relation's last name part ("/people/person/nationality" → "What is the nationality of {entity}?")."""
    objects: dict[str, Counter] = defaultdict(Counter)
    subjects: dict[str, set[str]] = defaultdict(set)
    for s, r, o in facts:
        objects[r][o] += 1
        subjects[r].add(s)
    found = []
    for relation in sorted(objects):
        common = [o for o, n in objects[relation].items() if n >= 10]
        if MIN_CLASSES <= len(common) <= MAX_CLASSES and len(subjects[relation]) >= min_subjects \
                and sum(objects[relation][o] for o in common) >= 0.8 * sum(objects[relation].values()):
            name = relation.rstrip("/").rsplit("/", 1)[-1].replace("_", " ").replace(".", " ")
            found.append(Pattern(f"{name.replace(' ', '-')}", "entity", name, (Step(relation),),
                                 (f"What is the {name} of {{entity}}?",)))
    return PatternSet(kg, "", tuple(found))
