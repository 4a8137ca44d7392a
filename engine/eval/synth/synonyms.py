"""Other words for a KG's relations, so that generated questions do not always reuse the relation's
own name (`kgqa synth --synonyms`): "directed by" is also asked "made by" / "created by", "starred
actors" "starred players" / "starred performers", "affects" "impacts".

The relation's head word (a noun's last word, a passive's or verb's verb) is looked up in WordNet.
Its sense is the one whose gloss the sentence encoder finds closest to the relation read among its
KG's other relations ("directed by; starred actors, written by, has genre" picks "guide the actors
in (plays and films)" over "command with authority"), from the word's first few senses. The other
words are that synset's lemmas and its hypernyms' (one level up: a director's film is "made"),
inflected as the head word was, kept where they are common (SemCor tagged the word at least once:
"thespian" and "twelvemonth" are not), short (≤ 2 words) and name no other relation of the KG."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

import numpy as np

from kgqa.eval.synth.wordnet import Synset, WordNet, plural
from kgqa.retrieval.relation_text import readable_relation, relation_words

MAX_SENSES = 6  # a word's first senses the encoder chooses among (WordNet lists them by frequency)
MAX_CONTEXT = 12  # other relations shown beside the one whose sense is chosen
# A word said otherwise must still read as the relation to the encoder: cosine of the two relation
# texts. Below it were the hypernyms too general to mean the relation ("headquartered in" →
# "supplied in", 0.26) and senses the encoder chose wrong; above it "made by" for "directed by" (0.63).
MIN_SIMILARITY = 0.4

Encode = Callable[[Sequence[str]], np.ndarray]  # L2-normalised rows (`TextEncoder.encode_bulk`: glosses are seen once)


class RelationSynonyms:
    """For each relation label, its words said otherwise: (kind, words) pairs of `relation_words`'
    kinds, the kind kept so the phrasing's grammar holds."""

    def __init__(self, wordnet: WordNet, relation_labels: Sequence[str], encode: Encode):
        self.wordnet = wordnet
        words = {label: relation_words(label) for label in relation_labels}
        taken = {w for label in relation_labels for w in readable_relation(label).split()}  # every relation's words
        self.alternatives: dict[str, list[tuple[str, str]]] = {}
        self.events: dict[str, tuple[str, str]] = {}  # `event_wording`s: "where", "was born"
        self.senses: dict[str, Synset] = {}
        for label, (kind, text) in words.items():
            others = [t for other, (_, t) in words.items() if other != label][:MAX_CONTEXT]
            context = f"{text}; {', '.join(others)}" if others else text
            found = self._alternatives(kind, text, context, taken, encode)
            if found:
                sense, said = found
                self.senses[label] = sense
                self.alternatives[label] = said
            if kind == "noun" and (event := event_wording(wordnet, text)):
                self.events[label] = event

    def wording(self, label: str, rng: random.Random, share: float) -> tuple[str, str]:
        """The relation's own (kind, words), or with probability `share` other words: its event
        wording where it has one (half the time where it has synonyms too), else a synonym."""
        said, event = self.alternatives.get(label), self.events.get(label)
        if (said or event) and rng.random() < share:
            return event if event and (not said or rng.random() < 0.5) else rng.choice(said)  # type: ignore[arg-type]
        return relation_words(label)

    def _alternatives(self, kind: str, text: str, context: str, taken: set[str], encode: Encode) -> tuple[Synset, list[tuple[str, str]]] | None:
        tokens = text.split()
        if kind == "noun":
            whole = "_".join(tokens)
            if len(tokens) > 1 and self.wordnet.entry(whole, "noun"):
                at, pos = slice(0, len(tokens)), "noun"
            else:
                at, pos = slice(len(tokens) - 1, len(tokens)), "noun"
        elif kind in ("passive", "verb"):
            phrasal = kind == "verb" and len(tokens) == 2 and self.wordnet.base_forms(" ".join(tokens), "verb")
            at, pos = (slice(0, 2) if phrasal else slice(0, 1)), "verb"  # "carries out" is one verb
        elif kind == "predicate" and tokens[0].endswith(("ed", "en")):
            at, pos = slice(0, 1), "verb"
        elif kind == "predicate":
            at, pos = slice(0, 1), "noun"
        else:
            return None
        head = " ".join(tokens[at])
        bases = self.wordnet.base_forms(head, pos)
        if not bases:
            return None
        base = bases[0]
        senses = self.wordnet.synsets(base, pos)[:MAX_SENSES]
        if not senses:
            return None
        glosses = [f"{', '.join(s.lemmas)}: {s.gloss}" for s in senses]
        vectors = encode([context, *glosses])
        sense = senses[int(np.argmax(vectors[1:] @ vectors[0]))]
        broader = [lemma for h in sense.hypernyms for lemma in self.wordnet.synset(h, pos).lemmas if " " not in lemma]
        said = []
        for lemma in dict.fromkeys([*sense.lemmas, *broader]):
            if lemma in (base, head) or len(lemma.split()) > 2 or not lemma.replace(" ", "").isalpha() or set(lemma.split()) & taken:
                continue
            entry = self.wordnet.entry(lemma, pos)
            if entry is None or entry.tagged < 1:
                continue
            new = self._inflected(lemma, head, base, pos, kind)
            words = " ".join([*tokens[: at.start], new, *tokens[at.stop :]])
            if relation_words_kind(words) == kind or kind == "noun":
                said.append((kind, words))
        if said:
            vectors = encode([text, *(words for _, words in said)])
            said = [s for s, similarity in zip(said, vectors[1:] @ vectors[0]) if similarity >= MIN_SIMILARITY]
        return (sense, said) if said else None

    def _inflected(self, lemma: str, head: str, base: str, pos: str, kind: str) -> str:
        if pos == "noun":
            return plural(lemma) if head != base and " " not in head and not lemma.endswith("s") else lemma  # "laurels" stays
        if kind == "verb":
            return self.wordnet.third_person(lemma)
        return self.wordnet.past_participle(lemma)


_PLACE, _TIME = {"place", "location"}, {"date", "year", "time"}


def event_wording(wordnet: WordNet, words: str) -> tuple[str, str] | None:
    """A noun relation that names the place or the time of an event, said with the event's verb:
    "place of birth" → ("where", "was born"), "date of death" → ("when", "did die"), "release year"
    → ("when", "was released"), "date founded" → ("when", "was founded"); the verb is the one WordNet
    derives from the event's noun (`WordNet.event_verb`), passive where it takes an object. None for
    any other relation, or an event noun with no verb. `phrasing` says these kinds."""
    tokens = words.split()
    if len(tokens) == 3 and tokens[1] == "of" and tokens[0] in _PLACE | _TIME:
        head, event = tokens[0], tokens[2]  # "place of birth"
    elif len(tokens) >= 2 and tokens[-1] in _PLACE | _TIME:
        head, event = tokens[-1], tokens[-2]  # "initial release date", "birth place"
    elif len(tokens) == 2 and tokens[0] in _TIME and tokens[1].endswith("ed") and wordnet.base_forms(tokens[1], "verb"):
        return "when", f"was {tokens[1]}"  # "date founded": the participle is said as it is
    else:
        return None
    wh = "where" if head in _PLACE else "when"
    found = wordnet.event_verb(event) if not event.endswith("ed") else None  # "places lived location": no event noun
    if found is None:
        return None
    verb, transitive = found
    if verb.startswith("be "):
        return wh, "was " + verb[3:]
    return wh, f"was {wordnet.past_participle(verb)}" if transitive else f"did {verb}"


def relation_words_kind(words: str) -> str:
    """The kind `relation_words` reads in a relation's words (a synonym must keep its relation's)."""
    return relation_words(words.replace(" ", "_"))[0]
