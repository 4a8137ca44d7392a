"""In-domain questions each KG cannot answer (kgqa.eval.synth.lacking): every other KG's relations,
asked of this KG's entities, for the path reader's "no path reads it" option and the answerability
calibration (issue 46, part 4).

    python bench/lacking_questions.py --out DIR [--per-kg 300] [--metaqa 1500] [--hold-out REGEX]
                                      [--people N] [--kg NAME=URL ...]

Writes DIR/NAME-train.jsonl and DIR/NAME-test.jsonl per KG. Relations of another KG that hold
this KG's facts (`shared_meaning`: Freebase's /film/director/film for MetaQA) are not asked. Half
the questions for a relation WordNet finds people's words for ask in them ("who composed …");
--people N adds N training questions per KG for those relations alone.
Relations whose label matches
--hold-out (default: production, music and locations — "who produced X", "who composed the music
of X", "where was X shot") are never asked in the training files: the test files ask only those,
so that declining is judged on relations no training question used.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from kgqa.eval.synth import write_jsonl
from kgqa.eval.synth.lacking import lacking_questions, people_words, shared_meaning
from kgqa.eval.synth.wordnet import open_wordnet
from kgqa.retrieval.store_url import open_store
from kgqa.retrieval.text import TextEncoder

sys.path.insert(0, str(Path(__file__).resolve().parent))
from transfer import STORES  # noqa: E402

HOLD_OUT = r"produc|music|compos|location|shot"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--per-kg", type=int, default=300, help="training questions per KG (test: a third of it)")
    ap.add_argument("--metaqa", type=int, default=1500, help="training questions for MetaQA")
    ap.add_argument("--hold-out", default=HOLD_OUT, help="regex: relations kept out of training, asked in the test files")
    ap.add_argument("--kg", nargs="*", default=None, help="NAME=URL (KG name NAME): the stores (default: bench/transfer.py's)")
    ap.add_argument("--people", type=int, default=0,
                    help="training questions per KG added for the relations WordNet finds people's words for (a few among hundreds)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    stores = dict(spec.split("=", 1) for spec in args.kg) if args.kg else {STORES[n][1]: STORES[n][0] for n in STORES}
    opened = {name: open_store(url, name) for name, url in stores.items()}
    relations = {name: [r.label for r in store.relations()] for name, store in opened.items()}
    held = re.compile(args.hold_out, re.IGNORECASE)
    encoder, wordnet = TextEncoder(), open_wordnet()
    args.out.mkdir(parents=True, exist_ok=True)
    for name, store in opened.items():
        shared = {label for other in opened if other != name for label in shared_meaning(store, opened[other])}
        foreign = [label for other, labels in relations.items() if other != name for label in labels if label not in shared]
        if shared:
            print(f"{name}: {len(shared)} relations of other KGs hold its facts, not asked: {', '.join(sorted(shared))}", flush=True)
        count = args.metaqa if name == "metaqa" else args.per_kg
        train = lacking_questions(store, [r for r in foreign if not held.search(r)], count, encoder, args.seed, wordnet)
        if args.people:
            own = [r.label for r in store.relations()]
            done = {(q.topics, q.path) for q in train}
            with_people = [r for r in foreign if not held.search(r) and people_words(wordnet, r, own)]
            more = lacking_questions(store, with_people, args.people, encoder, args.seed + 2, wordnet)
            added = [q for q in more if (q.topics, q.path) not in done]
            train += added
            print(f"{name}: {len(with_people)} relations with people's words, {len(added)} questions more for them", flush=True)
        test = lacking_questions(store, [r for r in foreign if held.search(r)], max(1, count // 3), encoder, args.seed + 1, wordnet)
        write_jsonl(train, args.out / f"{name}-train.jsonl")
        write_jsonl(test, args.out / f"{name}-test.jsonl")
        print(f"{name}: {len(train)} training questions, {len(test)} test questions (held-out relations)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
