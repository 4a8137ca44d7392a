"""Walks said in words, from the relations' readable text (`kgqa.retrieval.relation_text`), with many
surface forms per shape so that no one form dominates: possessive ("Kismet's genre"), stacked
possessives through agent nouns ("Kismet's director's …": `agent_noun`), "the … of", passive and
active readings, who/what/which/name/list openings, the answer's type where the KG's naming gives one
(Freebase `/film/film/…`: a film), and "besides X", "what else …", "X's director also directed
what?" forms when the walk came back to the topic's neighbourhood. None of them is a MetaQA template
(a test checks).

A relation's words fall in one of four kinds, each with its own phrases:
- noun ("genre", "release year", "has genre" → "genre"): "the genre of X", "what has genre X";
- passive ("directed by"): "who directed X" (its inverse reading), "what was directed by X";
- verb ("affects", "causes"): "what does X affect", "what affects X";
- predicate ending in a preposition ("located in", "part of"): "what is X located in", "what is located in X".
And two kinds of other words only (`synonyms.event_wording`), for a noun relation that names an event's
place or time: "where" / "when" with the event's verb ("place of birth": "where was X born", "what
was born in X"; "date of death": "when did X die").
"""

from __future__ import annotations

import random
from collections.abc import Callable

from kgqa.eval.synth.walk import Step
from kgqa.retrieval.relation_text import agent_noun, freebase_subject_type, inverse_words, relation_words, third_person_verb


Words = tuple[str, str]  # a relation's kind of words and the words (`relation_words`)
Wording = Callable[[str], Words]  # relation label → the words to say it with


def answer_type(step: Step) -> str | None:
    """The answer's type where the relation's name says it: the subject type of a Freebase property,
    for a step walked backwards (the answers are its subjects)."""
    return freebase_subject_type(step.label) if step.inverse else None


def _base(verb: str) -> str:
    return verb[:-2] if verb.endswith(("sses", "shes", "ches", "xes")) else verb[:-1]


EVENT_KINDS = ("where", "when")


def _event(words: Words | None) -> tuple[str, str, str] | None:
    """(where|when, auxiliary, verb) of an event wording ("was", "born"; "did", "die"), else None."""
    if words is None or words[0] not in EVENT_KINDS:
        return None
    aux, verb = words[1].split(" ", 1)
    return words[0], aux, verb


def _event_noun_phrase(step: Step, x: str, rng: random.Random, words: Words | None) -> str | None:
    """"the place where X was born", "whatever was released in X"; None where only a past tense would
    say it ("the place where X died")."""
    event = _event(words)
    if event is None or event[1] != "was":
        return None
    wh, _, verb = event
    if step.inverse:
        return rng.choice([f"whatever was {verb} in {x}", f"the ones {verb} in {x}"])
    return f"the place where {x} was {verb}" if wh == "where" else f"the year {x} was {verb}"


def _event_question(step: Step, x: str, rng: random.Random, words: Words | None) -> str | None:
    """"where was X born?", "when did X die?", "who was born in X?"; None for the inverse of a verb
    without an object."""
    event = _event(words)
    if event is None:
        return None
    wh, aux, verb = event
    if step.inverse:
        if aux != "was":
            return None
        kind_of = answer_type(step)
        which = f"which {kind_of}" if kind_of and rng.random() < 0.5 else rng.choice(["what", "who"])
        return rng.choice([f"{which} was {verb} in {x}?", f"name something {verb} in {x}."])
    at = "in which place" if wh == "where" else "in what year"
    forms = [f"{at} {aux} {x} {verb}?"]
    if wh == "where":  # "when was X released" is a MetaQA template
        forms.append(f"where {aux} {x} {verb}?")
    if aux == "was":
        forms += [f"{x} was {verb} {wh}?", f"tell me {wh} {x} was {verb}."]
    return rng.choice(forms)


def noun_phrase(step: Step, x: str, rng: random.Random, words: Words | None = None) -> str:
    """The entities one step from `x` (itself a name or a noun phrase), as a noun phrase."""
    if words is not None and words[0] in EVENT_KINDS:
        said = _event_noun_phrase(step, x, rng, words)
        if said is not None:
            return said
        words = None  # said with the relation's own words
    kind, w = words or relation_words(step.label)
    if kind == "noun":
        forms = [f"the {w} of {x}", f"{possessive(x)} {w}"] if not step.inverse else [f"whatever has {w} {x}", f"the things whose {w} is {x}"]
    elif kind == "passive":
        active, agent = inverse_words(w), agent_noun(w)
        forms = ([f"the one who {active} {x}", f"whoever {active} {x}"] + ([f"{possessive(x)} {agent}", f"the {agent} of {x}"] if agent else [])
                 if not step.inverse else [f"the things {w} {x}", f"what was {w} {x}"])
    elif kind == "verb":
        forms = [f"the things {x} {w}", f"what {x} {w}"] if not step.inverse else [f"the things that {w} {x}", f"whatever {w} {x}"]
    elif kind == "isa":
        forms = [f"the kind of thing {x} is", f"the class of {x}"] if not step.inverse else [f"the kinds of {x}", f"whatever is a {x}"]
    else:
        be = _be(w)
        forms = [f"what {x} {be}{w}", f"the thing {x} {be}{w}"] if not step.inverse else [f"the things {w} {x}", f"whatever {be or 'is '}{w} {x}"]
    return rng.choice(forms)


def possessive(x: str) -> str:
    """"Kismet" → "Kismet's", "the films" → "the films'"; a noun phrase stacks ("Kismet's director's")."""
    return x + ("'" if x.endswith("s") and not x[:1].isupper() else "'s")


def else_question(step: Step, x: str, rng: random.Random, words: Words | None = None) -> str | None:
    """The last step of a walk that came back to the topic's neighbourhood, asked with "else",
    "other" or "also" (the topic is no answer): "what else was directed by Kismet's director?",
    "Kismet's director also directed what?"; None for a step walked forwards."""
    if not step.inverse:
        return None
    if (event := _event(words)) is not None:
        return f"what else was {event[2]} in {x}?" if event[1] == "was" else None
    kind, w = words or relation_words(step.label)
    if kind == "noun":
        forms = [f"what else has {w} {x}?", f"which others have {w} {x}?", f"name other things with {w} {x}."]
    elif kind == "passive":
        active = inverse_words(w)
        forms = [f"what else was {w} {x}?", f"{x} also {active} what?", f"name the others {w} {x}."]
    elif kind == "verb":
        forms = [f"what else {w} {x}?", f"which other things {w} {x}?"]
    elif kind == "isa":
        return None
    else:
        be = _be(w)
        forms = [f"what else {be or 'is '}{w} {x}?", f"name other things {w} {x}."]
    return rng.choice(forms)


def _be(predicate: str) -> str:
    """"is " before "located in", nothing before a verb ("interacts with")."""
    return "" if third_person_verb(predicate.split()[0], False) else "is "


def question_for_step(step: Step, x: str, rng: random.Random, words: Words | None = None) -> str:
    """A question whose answers are the entities one step from `x`."""
    if words is not None and words[0] in EVENT_KINDS:
        said = _event_question(step, x, rng, words)
        if said is not None:
            return said
        words = None
    kind, w = words or relation_words(step.label)
    kind_of = answer_type(step)
    which = f"which {kind_of}" if kind_of and rng.random() < 0.5 else "what"
    if kind == "noun":
        forms = ([f"what's the {w} of {x}?", f"{x}'s {w} is what?", f"name the {w} of {x}.", f"tell me the {w} of {x}.", f"which {w} does {x} have?"]
                 if not step.inverse else
                 [f"{which} has {w} {x}?", f"whose {w} is {x}?", f"{x} is the {w} of {which}?", f"list everything with {w} {x}.",
                  f"{which} has {x} as its {w}?"])
    elif kind == "passive":
        active = inverse_words(w)
        forms = ([f"who was it that {active} {x}?", f"by whom was {x} {w[:-3]}?", f"{x} was {w} whom?", f"name who {active} {x}."]
                 if not step.inverse else
                 [f"{which} was {w} {x}?", f"list what {x} {active}.", f"{x} {active} {which}?", f"name something {w} {x}."])
    elif kind == "verb":
        first, rest = w.split()[0], " ".join(w.split()[1:])
        forms = ([f"what does {x} {_base(first)}{' ' + rest if rest else ''}?", f"{x} {w} what?", f"name what {x} {w}."]
                 if not step.inverse else
                 [f"{which} {w} {x}?", f"{x} is {inverse_words(w)} what?", f"name something that {w} {x}."])
    elif kind == "isa":
        forms = ([f"what kind of thing is {x}?", f"{x} is a what?", f"which class does {x} belong to?"]
                 if not step.inverse else
                 [f"name a kind of {x}.", f"which things are a {x}?", f"what is an example of {x}?"])
    else:
        be = _be(w)
        first, *rest = w.split()
        asked = f"is {x} {w}" if be else f"does {x} {' '.join([_base(first), *rest])}"
        forms = ([f"what {asked}?", f"{x} {be}{w} what?", f"tell me what {x} {be}{w}."]
                 if not step.inverse else
                 [f"{which} {be}{w} {x}?", f"name something {w} {x}.", f"list the things {w} {x}."])
    return rng.choice(forms)


def written(label: str, rng: random.Random) -> str:
    """A label as a person types it: "western_europe" → "western europe" (the linker finds it)."""
    return label.replace("_", " ") if "_" in label and rng.random() < 0.9 else label


def say_path(steps: tuple[Step, ...], topic: str, excludes_topic: bool, rng: random.Random, wording: Wording | None = None) -> str:
    """A path walk: noun phrases for every step but the last, which the question asks for.
    `wording`: each step's relation words (`RelationSynonyms.wording`), else the relation's own."""
    said = [wording(step.label) if wording else None for step in steps]
    topic = written(topic, rng)
    x = topic
    for step, words in zip(steps[:-1], said):
        x = noun_phrase(step, x, rng, words)
    text = question_for_step(steps[-1], x, rng, said[-1])
    if excludes_topic:
        roll = rng.random()
        if roll < 0.4 and (other := else_question(steps[-1], x, rng, said[-1])) is not None:
            text = other
        elif roll < 0.8:
            text = rng.choice([f"besides {topic}, {text}", f"other than {topic}, {text}", f"apart from {topic} itself, {text}"])
    return text


def say_conjunction(steps: tuple[Step, ...], topics: tuple[str, ...], rng: random.Random, wording: Wording | None = None) -> str:
    """Two constraints meeting at the answers."""
    first, second = (noun_phrase(s, written(t, rng), rng, wording(s.label) if wording else None) for s, t in zip(steps, topics))
    return rng.choice([f"what is among both {first} and {second}?", f"which of {first} is also among {second}?",
                       f"name what is both {first} and {second}.", f"find {first} that are also {second}."])


def finish(text: str, rng: random.Random) -> str:
    """Questions are typed many ways: some all lower case, some capitalised."""
    if rng.random() < 0.4:
        return text.lower()
    return text[:1].upper() + text[1:]
