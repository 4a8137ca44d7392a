"""An evaluation set over the MetaQA KB asked in words of our own, for reading that must transfer:
phrasings that MetaQA's templates never use ("what else did the director of X make"), 1 to 3 hops.
It is for evaluation only: nothing trains on these phrasings (bench/path_reader.py trains on MetaQA
dev's own questions). Answers are read from the KB along each phrasing's relation path, the topic
itself left out (MetaQA's convention).

    python bench/metaqa_free_words.py --kb ../shared/data/metaqa/kb_reconstructed.txt --out DIR [--per-template 15]

writes DIR/free-1hop.txt, free-2hop.txt, free-3hop.txt in MetaQA's format (the topic in brackets,
answers after a tab, joined by |), so that `kgqa eval` and bench/path_reader.py read them, and
DIR/free-lacking.jsonl: questions in our own words for facts the KB does not hold about entities it
does hold (where a film was shot, who is an actor married to; issue 46's "in-domain questions for facts
the KG lacks"), to be declined, and DIR/free-absent.jsonl: the phrasings of TEMPLATES and ABSENT asked
where the KB has each relation of the path but the topic's path stops before its last one (what did X
write, of someone who wrote nothing; "which films did the director of Kismet also write", whose
director wrote none), to be declined too. Unlike kgqa.eval.synth.lacking, which asks another KG's relations in
generated words, these are phrased as people ask them, and some share words with relations the KB has
("who wrote the score of X", "when did X die" where release years are near).
"""

from __future__ import annotations

import argparse
import json
import random
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path

MAX_ANSWERS = 30  # a question with more answers than this is a list nobody asks for

# (path from the topic: relation, "~relation" against its direction), the topic's kind, phrasings ({} = the topic)
TEMPLATES: list[tuple[tuple[str, ...], str, list[str]]] = [
    (("directed_by",), "film", ["who was behind the camera for {}", "who made the picture {}"]),
    (("written_by",), "film", ["who penned {}", "who came up with the story of {}"]),
    (("release_year",), "film", ["what year did {} come out", "when did {} hit theaters"]),
    (("starred_actors",), "film", ["who appears in {}", "name someone from the cast of {}"]),
    (("has_genre",), "film", ["what sort of movie is {}", "how would you classify {}"]),
    (("in_language",), "film", ["what language do they speak in {}"]),
    (("~directed_by",), "person", ["what has {} directed", "which pictures were made by {}"]),
    (("~starred_actors",), "person", ["what has {} acted in", "which movies feature {}"]),
    (("~written_by",), "person", ["what did {} write", "which screenplays are by {}"]),
    (("directed_by", "~directed_by"), "film", ["what else did the director of {} make", "name other pictures by the filmmaker behind {}"]),
    (("starred_actors", "~starred_actors"), "film", ["what else have the actors of {} been in", "where else did the cast of {} appear"]),
    (("written_by", "~written_by"), "film", ["what other films did the writer of {} work on", "what else was written by whoever wrote {}"]),
    (("~directed_by", "release_year"), "person", ["when did the movies {} directed come out", "in which years did {} release films as director"]),
    (("~starred_actors", "has_genre"), "person", ["what kinds of films has {} been in", "which genres has {} acted in"]),
    (("~written_by", "directed_by"), "person", ["who directed the scripts {} wrote", "who filmed what {} wrote"]),
    (("~starred_actors", "directed_by"), "person", ["which directors has {} worked with", "who directed {} as an actor"]),
    (("~directed_by", "starred_actors"), "person", ["who acted for {}", "which actors has {} directed"]),
    (("directed_by", "~directed_by", "has_genre"), "film", ["what genres does the director of {} work in",
                                                            "what kinds of films does the man who directed {} make"]),
    (("directed_by", "~directed_by", "release_year"), "film", ["when did the films of the director of {} come out"]),
    (("starred_actors", "~starred_actors", "directed_by"), "film", ["who directed other films with the cast of {}",
                                                                    "which directors worked with the actors of {}"]),
    (("written_by", "~written_by", "starred_actors"), "film", ["who acted in other scripts by the writer of {}"]),
    (("written_by", "~written_by", "in_language"), "film", ["in what languages are the other films by the writer of {}"]),
]

# phrasings asked only where their path stops before its last hop (free-absent.jsonl), beside TEMPLATES'
ABSENT: list[tuple[tuple[str, ...], str, list[str]]] = [
    (("directed_by", "~written_by"), "film", ["which films did the director of {} also write", "what did whoever directed {} write"]),
    (("starred_actors", "~directed_by"), "film", ["which films did the actors of {} direct"]),
    (("written_by", "~starred_actors"), "film", ["what films has the writer of {} acted in"]),
]

# facts MetaQA's KB has no relation for (it has directed_by, written_by, starred_actors, release_year,
# in_language, has_genre, has_tags, has_imdb_rating, has_imdb_votes): the topic's kind, phrasings
LACKING: list[tuple[str, list[str]]] = [
    ("film", ["where was {} filmed", "where did they shoot {}"]),
    ("film", ["who produced {}", "who was the producer of {}"]),
    ("film", ["who composed the music for {}", "who wrote the score of {}"]),
    ("film", ["which studio released {}", "what company distributed {}"]),
    ("film", ["what was the budget of {}", "how much did {} cost to make"]),
    ("film", ["how much money did {} make at the box office"]),
    ("film", ["who edited {}", "who was the cinematographer on {}"]),
    ("film", ["what awards did {} win", "was {} nominated for an oscar"]),
    ("film", ["how long is {}", "what is the running time of {}"]),
    ("film", ["what country was {} made in", "what is the sequel to {}"]),
    ("person", ["where was {} born", "what city is {} from"]),
    ("person", ["when was {} born", "when did {} die"]),
    ("person", ["who is {} married to", "who are the children of {}"]),
    ("person", ["what nationality is {}", "how tall is {}"]),
    ("person", ["where did {} go to school", "what awards has {} won"]),
]


def read_kb(path: Path, separator: str = "|") -> dict[tuple[str, str], set[str]]:
    """(subject, relation) → objects and (object, ~relation) → subjects."""
    index: dict[tuple[str, str], set[str]] = defaultdict(set)
    with open(path, encoding="utf-8") as f:
        for line in f:
            parts = line.rstrip("\n").split(separator)
            if len(parts) == 3:
                s, r, o = parts
                index[s, r].add(o)
                index[o, "~" + r].add(s)
    return index


def follow(kb: dict[tuple[str, str], set[str]], start: str, path: tuple[str, ...]) -> set[str]:
    frontier = {start}
    for relation in path:
        frontier = {o for s in frontier for o in kb.get((s, relation), ())}
    return frontier - {start}


def phrased(kb: dict[tuple[str, str], set[str]], templates: list[tuple[tuple[str, ...], str, list[str]]], pools: dict[str, list[str]],
            per_template: int, rng: random.Random, tries: int, usable: Callable[[str], bool] = lambda topic: True,
            ) -> Iterator[tuple[tuple[str, ...], str, str, set[str]]]:
    """Per phrasing of each template, up to `per_template` topics of its kind (from `tries` × that many
    sampled) whose path has 1 to MAX_ANSWERS answers: (path, phrasing, topic, answers)."""
    for path, kind, phrasings in templates:
        pool = pools[kind]
        for phrasing in phrasings:
            made = 0
            for topic in rng.sample(pool, min(len(pool), tries * per_template)):
                answers = follow(kb, topic, path)
                if not answers or len(answers) > MAX_ANSWERS or not usable(topic):
                    continue
                yield path, phrasing, topic, answers
                made += 1
                if made == per_template:
                    break


def stopping_short(kb: dict[tuple[str, str], set[str]], templates: list[tuple[tuple[str, ...], str, list[str]]], pools: dict[str, list[str]],
                   per_template: int, rng: random.Random) -> Iterator[tuple[tuple[str, ...], str, str]]:
    """Per phrasing, up to `per_template` topics of its kind (MetaQA's topic marks absent) that reach
    someone or something along all but the path's last relation and nothing along the whole path."""
    for path, kind, phrasings in templates:
        pool = [t for t in pools[kind] if "|" not in t and "[" not in t]
        for phrasing in phrasings:
            made = 0
            for topic in rng.sample(pool, min(len(pool), 200 * per_template)):
                if (len(path) == 1 or follow(kb, topic, path[:-1])) and not follow(kb, topic, path):
                    yield path, phrasing, topic
                    made += 1
                    if made == per_template:
                        break


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kb", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--per-template", type=int, default=15, help="questions per phrasing")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--lacking-per-template", type=int, default=5, help="questions per phrasing of a fact the KB lacks")
    args = ap.parse_args()
    kb = read_kb(args.kb)
    films = sorted({s for (s, r) in kb if r == "directed_by"})
    people = sorted({s for (s, r) in kb if r in ("~directed_by", "~starred_actors", "~written_by")})
    rng = random.Random(args.seed)
    by_hop: dict[int, list[str]] = defaultdict(list)
    usable = lambda topic: "|" not in topic and "[" not in topic  # noqa: E731  (MetaQA's format marks topics so)
    for path, phrasing, topic, answers in phrased(kb, TEMPLATES, {"film": films, "person": people}, args.per_template, rng, 40, usable):
        by_hop[len(path)].append(phrasing.format(f"[{topic}]") + "\t" + "|".join(sorted(answers)))
    args.out.mkdir(parents=True, exist_ok=True)
    for hop, lines in sorted(by_hop.items()):
        (args.out / f"free-{hop}hop.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"{args.out / f'free-{hop}hop.txt'}: {len(lines)} questions")
    lacking = []
    for kind, phrasings in LACKING:
        pool = [t for t in (films if kind == "film" else people) if "|" not in t and "[" not in t]
        for phrasing in phrasings:
            lacking += [{"question": phrasing.format(topic), "answers": [], "topics": [topic], "hop": 1, "shape": "lacking"}
                        for topic in rng.sample(pool, args.lacking_per_template)]
    (args.out / "free-lacking.jsonl").write_text("".join(json.dumps(q) + "\n" for q in lacking), encoding="utf-8")
    print(f"{args.out / 'free-lacking.jsonl'}: {len(lacking)} questions")
    absent = [{"question": phrasing.format(topic), "answers": [], "topics": [topic], "hop": len(path), "shape": "absent"}
              for path, phrasing, topic in stopping_short(kb, TEMPLATES + ABSENT, {"film": films, "person": people}, args.lacking_per_template, rng)]
    (args.out / "free-absent.jsonl").write_text("".join(json.dumps(q) + "\n" for q in absent), encoding="utf-8")
    print(f"{args.out / 'free-absent.jsonl'}: {len(absent)} questions")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
