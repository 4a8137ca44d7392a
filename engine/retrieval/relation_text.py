"""Readable text for a relation of any KG, in both directions (KGFR §IV-A: relations are known to the
retriever only by their text u_r, so the text must read the same whatever the KG's naming convention).

    /film/film/directed_by      → "directed by"        inverse "directed"
    hasCapital, has_capital     → "has capital"        inverse "capital of"
    http://…/ontology/birthPlace → "birth place"       inverse "birth place of"
    affects (UMLS)              → "affects"            inverse "affected by"
    part_of                     → "part of"            inverse "has part"
    located_in                  → "located in"         inverse "is what something is located in"

The inverse is what the fact says read from its object: (Kismet, directed by, Borzage) read from
Borzage is "Borzage directed Kismet". Rules, first that applies: "X by" → "X"; "X of" → "has X";
"has X" → "X of"; a third-person verb, alone or with out/about/up ("affects", "carries out") → its
participle + "by"; a phrase ending in another preposition → "is what something (is) X" ("occurs in",
"located in"); anything else is a noun → "X of". The verb test is a guess from the word's ending.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache

from kgqa.core.namespace import local_name

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SEPARATORS = re.compile(r"[_/.\-:#]+")
PREPOSITIONS = frozenset("in at on to from with into onto for about over under within near after before".split())
_SPELLED = {"isa": "is a", "subclassof": "subclass of", "sameas": "same as", "partof": "part of", "instanceof": "instance of"}
_INVERSE_SPELLED = {"is a": "has instance", "instance of": "has instance", "same as": "same as", "type": "type of"}
_IRREGULAR = {"bring": "brought", "make": "made", "write": "written", "give": "given", "take": "taken", "hold": "held", "lead": "led",
              "speak": "spoken", "win": "won", "have": "had", "find": "found", "teach": "taught", "buy": "bought", "sell": "sold",
              "begin": "begun", "build": "built", "know": "known", "see": "seen", "do": "done", "become": "become", "run": "run"}
# a participle read from the object is the active past: (Kismet, written by, X) from X: "X wrote Kismet"
_PAST = {"written": "wrote", "given": "gave", "taken": "took", "spoken": "spoke", "known": "knew", "seen": "saw", "done": "did",
         "begun": "began", "driven": "drove", "drawn": "drew", "sung": "sang", "chosen": "chose", "eaten": "ate", "grown": "grew",
         "shown": "showed", "thrown": "threw", "worn": "wore", "born": "bore", "sworn": "swore", "stolen": "stole", "frozen": "froze"}
_NOT_VERBS = frozenset("is has was does status series species news means physics genus class address census alias bus gas".split())

TOPIC_MASK = "something"  # what a question's topic mentions are replaced with where only its relation matters
RELATION_TEXT_STYLES = ("v1", "v2")  # v1: the first checkpoint's ("inverse of: " + words); v2: this module's inverse phrasing


def _freebase_words(path: str) -> str:
    """/film/film/directed_by → "directed by"; a compound (CVT) path keeps the first and last property:
    /film/film/release_date_s./film/film_regional_release_date/film_release_region → "release date film release region"."""
    parts = [p.strip("/").split("/")[-1] for p in path.split("./")]
    chosen = parts if len(parts) == 1 else [parts[0], parts[-1]]
    words = " ".join(_SEPARATORS.sub(" ", p) for p in chosen).split()
    return " ".join(w for w in words if w != "s")


def is_freebase_path(label: str) -> bool:
    label = label.strip()
    return label.startswith("/") and label.count("/") >= 2 and "://" not in label


def freebase_subject_type(label: str) -> str | None:
    """The type a Freebase property's subjects have, the part of its (first) path before the property,
    in words: "/people/person/spouse_s./people/marriage/spouse" → "person", "/location/country/capital"
    → "country", "/base/aareas/schema/administrative_area/administrative_parent" → "administrative
    area"; None for a label that is no Freebase path."""
    if not is_freebase_path(label):
        return None
    parts = label.strip().split("./")[0].strip("/").split("/")
    return parts[-2].replace("_", " ") if len(parts) >= 3 else None


def freebase_object_word(label: str) -> str | None:
    """What a Freebase property calls its objects, the name of its (last) property in words:
    "/people/person/employment_history./business/employment_tenure/company" → "company",
    "/people/person/place_of_birth" → "place of birth"; None for a label that is no Freebase path."""
    if not is_freebase_path(label):
        return None
    return label.strip().split("./")[-1].strip("/").split("/")[-1].replace("_", " ") or None


@lru_cache(maxsize=1 << 14)  # every scored subgraph asks for its relations' texts again
def readable_relation(label: str) -> str:
    """Lower-case words of a relation label, whatever its convention: Freebase paths, IRIs (their
    local name), camelCase, snake_case, dotted or dashed names."""
    text = label.strip()
    if is_freebase_path(text):
        words = _freebase_words(text)
    else:
        if "://" in text or text.startswith("urn:"):
            text = local_name(text)
        words = " ".join(_SEPARATORS.sub(" ", _CAMEL.sub(" ", text)).split()).lower()
    return _SPELLED.get(words, words) or label


def _participle(verb: str) -> str:
    base = verb[:-1]  # third person: affects → affect, carries → carrie, diagnoses → diagnose
    if base in _IRREGULAR:
        return _IRREGULAR[base]
    if base.endswith("ie"):
        return base[:-2] + "ied"
    if base.endswith(("sse", "she", "che", "xe", "zze")) and verb.endswith("es"):  # passes → pass
        base = base[:-1]
    return base + "d" if base.endswith("e") else base + "ed"


def third_person_verb(word: str, alone: bool) -> bool:
    """"affects", "causes"; not "status" or plural nouns with a telling suffix ("relations", "languages" pass: a guess)."""
    nouns = ("ss", "us", "is", "ions", "ences", "ances", "ings", "ists", "ments", "ships", "ties") + (("ies",) if alone else ())
    return len(word) > 3 and word.endswith("s") and not word.endswith(nouns) and word not in _NOT_VERBS


@lru_cache(maxsize=1 << 14)
def inverse_words(words: str, freebase: bool = False) -> str:
    """The relation's text read from its object (see the module's rules). Freebase property names
    are noun phrases ("teams", "languages"): never read as verbs."""
    if words in _INVERSE_SPELLED:
        return _INVERSE_SPELLED[words]
    tokens = words.split()
    if not tokens:
        return words
    if len(tokens) > 1 and tokens[-1] == "by":
        return " ".join(_PAST.get(t, t) for t in tokens[:-1])
    if len(tokens) > 1 and tokens[-1] == "of":
        rest = tokens[1:-1] if tokens[0] in ("is", "a", "an", "the") else tokens[:-1]
        return "has " + " ".join(rest) if rest else words
    if len(tokens) > 1 and tokens[0] in ("has", "have"):
        return " ".join(tokens[1:]) + " of"
    if not freebase and third_person_verb(tokens[0], len(tokens) == 1) and (len(tokens) == 1 or tokens[1:] in (["out"], ["about"], ["up"])):
        return " ".join([_participle(tokens[0]), *tokens[1:], "by"])  # affects → affected by, carries out → carried out by
    if len(tokens) > 1 and tokens[-1] in PREPOSITIONS:
        if tokens[0] in PREPOSITIONS:  # "in language" → "language of"
            return " ".join(tokens[1:-1] or tokens[1:]) + " of"
        copula = "is " if tokens[0] != "is" and tokens[0].endswith(("ed", "en")) else ""
        return f"is what {TOPIC_MASK} {copula}{words}"
    if tokens[0] in PREPOSITIONS and len(tokens) > 1:
        return " ".join(tokens[1:]) + " of"
    return words + " of"


def _v1_words(label: str) -> str:
    """The first checkpoint's reading: `/film/film/genre` → "film film genre"."""
    text = _CAMEL.sub(" ", label.rsplit("#", 1)[-1])
    return " ".join(re.sub(r"[_/.\-:]+", " ", text).split()).lower() or label


def relation_description(label: str, inverse: bool, descriptions: Mapping[str, str] | None = None, style: str = "v2") -> str:
    """The text u_r a relation (or its inverse) is embedded from (eq. 1). A mapping (e.g. written by
    an LLM, KGFR Fig. 2) overrides the default for the labels it has; an inverse is looked up as
    `label + "⁻¹"`, and failing that is phrased from the forward text."""
    if style not in RELATION_TEXT_STYLES:
        raise ValueError(f"relation text style must be one of {RELATION_TEXT_STYLES}, not {style!r}")
    key = f"{label}⁻¹" if inverse else label
    if descriptions and key in descriptions:
        return descriptions[key]
    given = descriptions.get(label) if descriptions else None
    words = given or (_v1_words(label) if style == "v1" else readable_relation(label))
    if not inverse:
        return words
    return f"inverse of: {words}" if style == "v1" or given else inverse_words(words, is_freebase_path(label))


def relation_question(label: str, inverse: bool, descriptions: Mapping[str, str] | None = None) -> str:
    """How a question asks along a relation from its topic, the topic masked: the wh-word stands where
    the answer is and the fact is read from the answer. (Kismet, directed by, ?) is asked "what directed
    something"; (?, complicates, X) read from X is asked "what complicates something". Unlike the
    relation's text it says which end is asked for: "complicated by", the text of that second row,
    is far from "what complicates X?" (cosine 0.41, against 0.91 for the other direction's "complicates").
    Always in the v2 phrasing, whatever style the model reads (only the text prior reads this)."""
    reverse = relation_description(label, not inverse, descriptions, "v2")
    if reverse.startswith(f"is what {TOPIC_MASK} "):  # "is what something is located in": already a question
        return reverse[len("is "):]
    if reverse.startswith("inverse of: "):  # a description given for one direction only: read the fact from the topic
        return f"{TOPIC_MASK} {relation_description(label, inverse, descriptions, 'v2')} what"
    return f"what {reverse} {TOPIC_MASK}"


def _kind(words: str, freebase: bool) -> tuple[str, str]:
    """(kind, the words the phrases use)."""
    tokens = words.split()
    if words in ("is a", "instance of", "type", "subclass of"):
        return "isa", words
    if len(tokens) > 1 and tokens[0] in ("has", "have"):
        return "noun", " ".join(tokens[1:])
    if len(tokens) > 1 and tokens[-1] == "by":
        return "passive", words
    if len(tokens) > 1 and tokens[-1] in PREPOSITIONS | {"of"} and tokens[0] not in PREPOSITIONS:
        return "predicate", words[3:] if words.startswith("is ") else words
    if not freebase and len(tokens) <= 2 and third_person_verb(tokens[0], len(tokens) == 1):
        return "verb", words
    if tokens and tokens[0] in PREPOSITIONS and len(tokens) > 1:  # "in language" → "language"
        return "noun", " ".join(tokens[1:])
    return "noun", words


def relation_words(label: str) -> tuple[str, str]:
    """A relation's kind of words (noun, passive, verb, isa, predicate) and the words its phrases use:
    a Freebase compound path says a word its two properties share once ("spouse_s ./people/marriage/
    spouse" → "spouse", not `readable_relation`'s "spouse spouse", which the models read)."""
    words = readable_relation(label)
    if is_freebase_path(label) and "./" in label:
        parts = label.strip().split("./")
        first, last = _freebase_words(parts[0]), _freebase_words(parts[-1])
        said = {singular(w) for w in first.split()}
        words = " ".join([first, *(w for w in last.split() if singular(w) not in said)])
    return _kind(words, is_freebase_path(label))


def singular(word: str) -> str:
    """A plural's -s dropped ("films" → "film"; "companies" → "company"; "class", "bus" kept as they are)."""
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    return word[:-1] if word.endswith("s") and not word.endswith("ss") and len(word) > 3 else word


_AGENTS = {"written": "writer", "made": "maker", "sung": "singer", "built": "builder", "led": "leader", "taught": "teacher",
           "held": "holder", "won": "winner", "played": "player", "starred": "star"}


def agent_noun(passive: str) -> str | None:
    """Who does what a passive relation says, for stacked possessives ("Kismet's director's films"):
    "directed by" → "director", "produced by" → "producer", "written by" → "writer"; None where the
    verb is no plain -ed participle ("located in" is no passive)."""
    verb = passive.split()[0]
    if verb in _AGENTS:
        return _AGENTS[verb]
    if not verb.endswith("ed") or len(verb) < 5:
        return None
    stem = verb[:-2]
    if stem.endswith(("ct", "it", "at", "ut")):
        return stem + "or"  # direct → director, edit → editor, create → creator
    if stem.endswith(("c", "s", "v", "z", "g", "u")):
        stem += "e"  # produc → produce, compos → compose
    return stem + ("r" if stem.endswith("e") else "er")  # found → founder, own → owner
