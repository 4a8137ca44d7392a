"""Questions a KG cannot answer about entities it holds (issue 46, part 4): another KG's relation —
one whose meaning no relation of this KG has — asked of an entity of this KG of the kind it would
fit ("who composed the music of Kismet" of a film KG without composers). The entity is drawn among
the subjects of this KG's relation closest in meaning to the foreign one (the film of "written by"
for "music by"), so that the question is about the right kind of thing and only the relation is
missing. What a path reader and the answerability calibration learn to decline from.

People ask for a person by what they do, not by the relation's name: "who composed the music for
Kismet", "who was its cinematographer", rarely "which music does Kismet have". Where WordNet names
the people who do what a foreign relation's head word says (`WordNet.agents`: music → composer,
cinematography → cinematographer) and none of them does what one of this KG's relations says
("director" for a KG with "directed by"), half of that relation's questions ask in those words."""

from __future__ import annotations

import random
from collections.abc import Sequence

from kgqa.core.store import GraphStore
from kgqa.eval.synth import SynthQuestion, _unambiguous, entity_labels, looks_like_id
from kgqa.eval.synth.phrasing import finish, question_for_step, written
from kgqa.eval.synth.walk import UNCAPPED, Step
from kgqa.eval.synth.wordnet import WordNet
from kgqa.retrieval.relation_text import agent_noun, readable_relation, relation_description, relation_words

SAME_MEANING = 0.85  # a foreign relation this close (cosine of the relation texts) to one of the KG's is not foreign
SUBJECT_TRIES = 200  # entities drawn per relation while looking for subjects of the closest relations
SUBJECTS = 50  # subjects kept per closest relation
# shared_meaning: a foreign relation whose facts, between entities both KGs name alike, are facts of this KG
# at least this often may mean one of this KG's relations, and is not asked. Measured for Freebase
# (FB15k-237) against MetaQA: /film/director/film 0.95, story_by 0.72, /film/actor/film 0.35 (directed_by,
# written_by, starred_actors read backwards) share them; so do edited_by 0.67 and produced_by 0.59, because a
# film's editor or producer is often its director: those are lost as questions, rather than teaching the
# reader to decline "which films did X act in"; cinematography 0.27 and music 0.20 stay
SHARED_FACTS = 0.3
MIN_ALIGNED = 5  # facts with both ends named in this KG needed before a relation's overlap is believed
ALIGN_SAMPLE = 3000  # entities of the other KG whose facts are compared
PEOPLE_SHARE = 0.5  # of a relation with people's words (`people_words`), the questions asked in them


def foreign_relations(store: GraphStore, candidates: Sequence[str], encoder) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """Of `candidates` (relation labels of other KGs), those no relation of this KG means: they share
    no content word with any of this KG's relations ("actor film performance" and "starred actors"),
    and their texts are less than SAME_MEANING alike → for each, the label of this KG's relation closest in meaning (whose subjects are asked)."""
    own = {r.label: r.iri for r in store.relations()}
    if not own:
        raise ValueError(f"KG {store.kg!r} has no relations: load it first")
    own_words = [w for w in map(_content_words, own) if w]  # "is a" has none: it says nothing of meaning
    kept = sorted({c for c in candidates if c not in own and _content_words(c)
                   and not any(_content_words(c) & w for w in own_words)})
    if not kept:
        return {}
    labels = sorted(own)
    theirs = encoder.encode([relation_description(c, False) for c in kept])  # unit rows: the dot product is the cosine
    ours = encoder.encode([relation_description(label, False) for label in labels])
    similarity = theirs @ ours.T
    return {c: labels[int(row.argmax())] for c, row in zip(kept, similarity) if row.max() < SAME_MEANING}


def shared_meaning(store: GraphStore, other: GraphStore, seed: int = 0) -> dict[str, float]:
    """Relations of `other` (by label) that hold the same facts as this KG, with the share they do:
    of `other`'s facts among ALIGN_SAMPLE of its entities whose two ends' labels each name one
    entity of this KG, the share that this KG also links (by any relation, either way). Text alone
    cannot tell such a relation ("story by" against "written by", 0.68) from a foreign one ("edited
    by", 0.65); the facts can."""
    rng = random.Random(seed)
    theirs = entity_labels(other)
    sample = rng.sample(sorted(theirs), min(ALIGN_SAMPLE, len(theirs)))
    edges = [e for e in other.expand(sample, (), UNCAPPED) if not e.inverse and e.head in theirs and e.tail in theirs]
    names = sorted({theirs[i] for e in edges for i in (e.head, e.tail)})
    found = store.resolve(names)
    ours = {name: hits[0].entity.iri for name, hits in found.items() if len(hits) == 1}
    aligned = [(e.relation, ours[theirs[e.head]], ours[theirs[e.tail]]) for e in edges
               if theirs[e.head] in ours and theirs[e.tail] in ours]
    linked = {(e.head, e.tail) for e in store.expand(sorted({h for _, h, _ in aligned}), (), UNCAPPED)}
    label = {r.iri: r.label for r in other.relations()}
    counts: dict[str, list[int]] = {}
    for relation, head, tail in aligned:
        seen = counts.setdefault(label.get(relation, relation), [0, 0])
        seen[0] += 1
        seen[1] += (head, tail) in linked
    return {r: shared / n for r, (n, shared) in counts.items() if n >= MIN_ALIGNED and shared / n >= SHARED_FACTS}


def people_words(wordnet: WordNet, label: str, own: Sequence[str]) -> list[tuple[str, str | None]]:
    """Who does what relation `label` says, as (agent noun, verb or None) — "music" → ("composer",
    "compose"), "produced by" → ("producer", "produce") — from its head word (a noun relation's last
    word, a passive's verb, else the word before "by"), leaving out any agent or verb that one of the
    `own` relations (this KG's labels) says: its words, their base forms, its passive's agent."""
    kind, text = relation_words(label)
    words = [w for w in text.split() if w not in FUNCTION_WORDS]
    if not words:
        return []
    if kind == "passive" and words[0].endswith("ed"):
        heads = [(base, "verb") for base in wordnet.base_forms(words[0], "verb")[:1]]
    else:
        heads = [(base, "noun") for base in wordnet.base_forms(words[-1], "noun")[:1]]
    taken: set[str] = set()
    for other in own:
        other_kind, other_text = relation_words(other)
        for word in other_text.split():
            taken.update([word, *wordnet.base_forms(word, "verb"), *wordnet.base_forms(word, "noun")])
        if other_kind == "passive" and (agent := agent_noun(other_text)):
            taken.add(agent)
    return [(agent, verb) for head, pos in heads for agent, verb in wordnet.agents(head, pos)
            if agent not in taken and verb not in taken]


def _asked_of_people(label: str, agent: str, verb: str | None, x: str, wordnet: WordNet, rng: random.Random) -> str:
    """"who was the composer of Kismet?", "who composed the music for Kismet?", "who produced Kismet?" …"""
    forms = [f"who was the {agent} of {x}?", f"who was {x}'s {agent}?", f"name the {agent} of {x}.", f"who worked as {agent} on {x}?"]
    if verb:
        past, participle = wordnet.simple_past(verb), wordnet.past_participle(verb)
        kind, text = relation_words(label)
        if kind == "passive" and text.split()[0].endswith("ed"):  # "produced by": the verb says it all
            forms += [f"who {past} {x}?", f"by whom was {x} {participle}?"]
        else:  # "music", "costume design by": the thing done is named
            noun = text.removesuffix(" by") if kind == "passive" else text.split()[-1]
            forms += [f"who {past} the {noun} for {x}?", f"by whom was the {noun} of {x} {participle}?", f"who {past} {x}'s {noun}?"]
    return rng.choice(forms)


def lacking_questions(store: GraphStore, candidates: Sequence[str], count: int, encoder, seed: int = 0,  # type: ignore[no-untyped-def]
                      wordnet: WordNet | None = None) -> list[SynthQuestion]:
    """`count` one-hop questions (fewer where no subject is found) for relations of `candidates` this
    KG lacks, each about an entity with the KG's closest relation; no answers, shape "lacking". With
    `wordnet`, a share of them ask for the people who do what the relation says (`people_words`)."""
    rng = random.Random(seed)
    closest = foreign_relations(store, candidates, encoder)
    if not closest:
        return []
    own = [r.label for r in store.relations()]
    people = {relation: people_words(wordnet, relation, own) for relation in sorted(closest)} if wordnet else {}
    labels = entity_labels(store)
    named = sorted(_unambiguous(store, labels, sorted(i for i, label in labels.items() if not looks_like_id(label))))
    relation_iris = {r.label: r.iri for r in store.relations()}
    wanted = {relation_iris[label] for label in closest.values()}
    subjects: dict[str, set[str]] = {iri: set() for iri in wanted}
    for _ in range(SUBJECT_TRIES * len(wanted)):
        if all(len(found) >= SUBJECTS for found in subjects.values()):
            break
        entity = rng.choice(named)
        for relation in {e.relation for e in store.expand([entity], (), UNCAPPED) if not e.inverse and e.relation in wanted}:
            if len(subjects[relation]) < SUBJECTS:
                subjects[relation].add(entity)
    out, seen = [], set()
    foreign = sorted(closest)
    rng.shuffle(foreign)
    for attempt in range(10 * count):
        if len(out) >= count:
            break
        relation = foreign[attempt % len(foreign)]
        pool = sorted(subjects[relation_iris[closest[relation]]])
        if not pool:
            continue
        entity = rng.choice(pool)
        if (entity, relation) in seen:
            continue
        seen.add((entity, relation))
        topic = labels[entity]
        if people.get(relation) and rng.random() < PEOPLE_SHARE:
            agent, verb = rng.choice(people[relation])
            text = _asked_of_people(relation, agent, verb, written(topic, rng), wordnet, rng)  # type: ignore[arg-type]
        else:
            text = question_for_step(Step(relation, relation, False), written(topic, rng), rng)
        out.append(SynthQuestion(finish(text, rng), (), (topic,), 1, "lacking", (relation,), (), (entity,)))
    return out


FUNCTION_WORDS = frozenset({"a", "an", "the", "has", "have", "is", "of", "in", "on", "at", "by", "to", "for", "with", "from", "as"})


def _content_words(label: str) -> frozenset[str]:
    """"in_language" → {language}, "/people/person/languages" → {language}: a relation whose words hold
    another's ("languages spoken" and "in language") may mean the same; such a pair is never foreign."""
    words = {w.lower() for w in readable_relation(label).split()} - FUNCTION_WORDS
    return frozenset(w[:-1] if w.endswith("s") and len(w) > 3 else w for w in words)
