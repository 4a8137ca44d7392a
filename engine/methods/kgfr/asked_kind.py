"""What a question asks for, read from its words alone (the probe: topics masked): the answer's kind
("which country" → an entity called a country; "when" → a time; "how many" → a number), whether it asks
for a kind of something ("what kind of films": a genre, not a film), and the neighbour it names on the
way ("the company X works for"). What the KG says of its candidates' kinds, and which ones lose, is
kgfr/answer_kind.py."""

from __future__ import annotations

import re
from dataclasses import dataclass

from kgqa.retrieval.linking import STOPWORDS
from kgqa.retrieval.relation_text import PREPOSITIONS, TOPIC_MASK, singular

_TIME_WORDS = {"year", "years", "date", "dates", "day", "month", "decade", "century", "time", "when"}
COUNTRY_NOUNS = frozenset({"country", "nation", "nationality"})  # asked for, each is a country
_LOCATED = re.compile(r"\b(?:located|based|headquartered|situated|born|lives?|lived|buried|died)\b")
PLACE_NOUNS = frozenset({"place", "location", "city", "town", "village", "capital", "hometown", "birthplace", "region"}) | COUNTRY_NOUNS
PERSON_NOUNS = frozenset({"person", "people", "individual", "man", "woman", "men", "women", "human", "someone"})
ORGANISATION_NOUNS = frozenset({"company", "firm", "employer", "business", "corporation", "organization", "organisation", "enterprise"})
QUANTITIES = {"population", "height", "budget", "revenue", "weight", "runtime", "price", "salary", "length"}  # never an entity's name
_NUMBER_WORDS = {"number", "amount", "population", "height", "length", "age", "count", "size", "area", "budget", "weight", "revenue", "salary",
                 "runtime", "duration", "rating", "score", "price", "many", "much"}
_AUXILIARIES = {"is", "was", "are", "were", "be", "been", "does", "did", "do", "has", "have", "had", "can", "could", "will",
                "would", "should", "of", "about", "else", "other", "others", "the", "a", "an", "things", "thing", "one", "ones",
                "kind", "kinds", "sort", "sorts", "type", "types"}
_WH = re.compile(r"\b(?:which|what)\s+(?:(kind|kinds|sort|sorts|type|types)\s+of\s+)?([a-z][a-z\-]*)")
# "what musical instruments does …", "which award nominee was …": the noun phrase runs up to an auxiliary, and its
# last word is the kind; without one after it ("which person directed …") the second word may be a verb, so one word
_NO_NOUNS = {"also", "ever", "still", "first", "last", "then", "now", "just", "all", "most", "not", "never", "that", "which", "who", "whose", "where",
             "there", "to", "in", "on", "at", "for", "from", "by", "with"}
_NOUN_PHRASE_END = re.compile(r"((?:\s+[a-z][a-z\-]*){1,2}?)\s+(?:is|was|are|were|does|did|do|has|have|had|can|could|will|would)\b")
_THE_X_OF = re.compile(r"\b(?:what(?:'s| is| was| are| were)|name|list|tell me|give me)\s+(?:all\s+)?the\s+([a-z][a-z\- ]*?)\s+(?:of|for|in|behind)\b")
_WHEN = re.compile(r"^\W*(?:when\b|(?:in\s+)?(?:what|which)\s+(?:year|years|date|decade|century)\b)|\b(?:what|which)\s+year\b")
WHO = re.compile(r"^\W*(?:who|whom)\b|\bby whom\b")
# the noun a question calls the topic's neighbour by: "the company X works for", "X's university"
_NAMED_NEIGHBOUR = re.compile(rf"\bthe ([a-z][a-z\-]*) {TOPIC_MASK} (\w+)|\b{TOPIC_MASK}['’]s ([a-z][a-z\-]*)"
                              rf"|\bthe ([a-z][a-z\-]*) (?:of|behind) {TOPIC_MASK}\b(?!['’]s)")
# "the employer of X's husband …", "the founder of the company of X …": the nouns of the neighbours past the one next to
# X, outermost first, and what the question says after them
_CHAIN = re.compile(rf"((?:\bthe [a-z][a-z\-]* of )+)(?:the [a-z][a-z\-]* of {TOPIC_MASK}\b(?!['’]s)|{TOPIC_MASK}['’]s [a-z][a-z\-]*)(.*)$")
_COPULA_NEIGHBOUR = re.compile(rf"(?:who|what|which)\s+(?:is|was|are|were)\s+(?:the\s+names?\s+of\s+)?(?:{TOPIC_MASK}['’]s |the [a-z\-]+ {TOPIC_MASK} |the [a-z\-]+ (?:of|behind) {TOPIC_MASK}\b)")
# "which city is X's birthplace": the possessive ends the question, and is what it asks for whatever its noun
_ENDS_ON_NEIGHBOUR = re.compile(rf"(?:who|what|which)(?:\s+[a-z\-]+)?\s+(?:is|was|are|were)\s+(?:{TOPIC_MASK}['’]s\s+[a-z\-]+|the\s+[a-z\-]+\s+(?:of|behind)\s+{TOPIC_MASK})\W*$")
# "where is the headquarters of X": where the neighbour the question ends on is (kgfr/answer_kind.py: it may be that place)
_WHERE_IS_NEIGHBOUR = re.compile(rf"^\W*where\s+(?:is|was|are|were)\s+(?:{TOPIC_MASK}['’]s\s+[a-z\-]+|the\s+[a-z\-]+\s+(?:of|behind)\s+{TOPIC_MASK})\W*$")
_TIME_ZONE = re.compile(r"\btime ?zones?\b|\bwhat time is it\b")  # the clock a place keeps is its zone's: a KG holds no "now"
_DURATION = re.compile(r"\b(?:running|run|screen|playing|travel|flight)\s+time$")  # how long something lasts, not when
# nouns the linker treats as stopwords that may still name an entity on the way ("the person who founded X")
_DOMAIN_NOUNS = {"movie", "movies", "film", "films", "person", "people", "actor", "actors", "actress", "director", "directors", "writer",
                 "writers", "screenwriter", "language", "languages", "genre", "genres"}
_COPULA_NOUN = re.compile(r"\b(?:which|what)\s+[a-z\- ]*?\b(?:is|was|are|were)\s+the\s+([a-z][a-z\-]*)\s+of\b")
_AFTER_ARTICLE = re.compile(r"\b(?:a|an|the|to|at|attend|attended|attends)\s+([a-z][a-z\-]{2,})")
_RELATIVE_TO_TOPIC = re.compile(rf"\bthe ([a-z][a-z\-]*) (?:(?:who|that|which|where)(?: [a-z]+){{0,2}}|[a-z]+ing|married to) {TOPIC_MASK}\b")
# "the people X knows", "the city where X was born", "the company X works for": a noun, then a clause of the topic's
_CLAUSE = re.compile(rf"\bthe ([a-z][a-z\-]*) (?:(?:where|that|which|who|whom) )?{TOPIC_MASK} (?:(?:is|was|are|were|has|had|have|does|did|do) )?([a-z]+)")
# "list the films X directed", "what are the films X directed": the clause's noun is what the question asks for
_ASKS_FOR_CLAUSE = re.compile(r"^\W*(?:(?:who|what|which)\s+(?:is|are|was|were)\s+|(?:list|name|give|show|find|tell me)\s+(?:all\s+)?)?the [a-z\-]+ ")
# "who does X know", "which company does X work for": the topic is the one who does what the verb says
_DO_SUPPORT = re.compile(rf"^\W*(?:who|whom|what|which)(?: [a-z\-]+){{0,2}}\s+(?:do|does|did)\s+{TOPIC_MASK}\s+([a-z]+)")
# "was X nominated for an oscar", "is there a sequel to X", "did X direct Y": asked yes or no; not "do you know who …"
_POLAR = re.compile(r"^\W*(?:is|was|are|were|did|does|do|has|have|had)\s")
_WH_WORD = re.compile(r"\b(?:who|whom|whose|what|which|where|when|why|how)\b")
# "in what country is X", "which country is X (located) in": X is the one in it, not what is in X
_TOPIC_IS_IN = re.compile(rf"^\W*(?:in\s+(?:what|which)\s+[a-z\-]+\s+(?:is|was|are|were)\s+{TOPIC_MASK}"
                          rf"|(?:what|which)\s+[a-z\-]+\s+(?:is|was|are|were)\s+{TOPIC_MASK}\s+(?:located\s+)?in)\W*$")
NAME_WORDS = {"name", "names"}  # "what is the name of …" asks for what follows
QUANTITY = re.compile(r"\bhow (?:many|much|tall|old|long|big|high|large|heavy)\b")


@dataclass(frozen=True)
class AskedKind:
    """`literal`: "time" (when / what year), "number" (how many / what population), "entity" (who,
    which country, …: not a bare year or number) or None (the question does not say); `noun`: the
    kind's words where the question names one ("country", "birth year")."""

    literal: str | None
    noun: str | None
    place: bool = False  # "where …": whatever place it is, no person
    category: bool = False  # "what kind of films …": a kind of the noun is asked for, not one of them


def asked_kind(probe: str) -> AskedKind:
    """The kind of answer a question asks for, from its words (the probe: topics masked)."""
    text = probe.lower()
    noun, category, from_wh = None, False, False
    for match in _WH.finditer(text):
        if match.group(2) not in _AUXILIARIES:
            words, category = [match.group(2)], match.group(1) is not None
            if (rest := _NOUN_PHRASE_END.match(text, match.end())) and not any(
                    word in _AUXILIARIES or word in _NO_NOUNS or word.endswith(("ly", "ing")) for word in rest.group(1).split()):
                words += rest.group(1).split()
            noun = " ".join(word for word in words if TOPIC_MASK not in word) or None  # "what X movies …": movies
            from_wh = True
            break
    if noun is None and (match := _THE_X_OF.search(text)):
        noun = match.group(1).split(f" {TOPIC_MASK}")[0]  # "what is the company X works for": the company
    if noun in NAME_WORDS:  # "what is the name of X's dog": no kind said, an entity asked for
        noun = None
    if noun == "time" and _TIME_ZONE.search(text):  # "what time zone is X in" asks for a zone, not a time
        noun = "time zone"
    head = noun.split()[-1] if noun else None  # "birth year" → year
    if head == "area" and from_wh:  # "what area of science", "governor of what area": a field or a region, not a size
        return AskedKind("entity", noun)
    if noun and _DURATION.search(noun):
        return AskedKind("number", noun)
    if _WHEN.search(text) or head in _TIME_WORDS:
        return AskedKind("time", noun)
    if re.search(r"\bhow (?:many|much|tall|old|long|big|high)\b", text) or head in _NUMBER_WORDS:
        return AskedKind("number", noun)
    if re.search(r"^\W*where\b", text):
        return AskedKind("entity", noun, place=True)
    if noun or WHO.search(text):
        return AskedKind("entity", noun, category=category)
    return AskedKind(None, None)


def asks_for_country(probe: str) -> bool:
    """"what country was X born in", "in which nation …", "what nationality is …": a place, the country it lies in."""
    return _asked_by(asked_kind(probe), COUNTRY_NOUNS)


def names_a_place(probe: str) -> bool:
    """"in which city …", "which nation …", "what is the hometown of …": a place by its noun; or "where" with a verb
    of where something is ("where is X's employer located", "where was X born"), not of what it does there ("where
    does X work" may ask for the firm)."""
    asked = asked_kind(probe)
    return _asked_by(asked, PLACE_NOUNS) or (asked.literal == "entity" and asked.place and _LOCATED.search(probe.lower()) is not None)


def says_where(words: str) -> bool:
    """Whether words say where something is: a verb of place ("born in", "headquartered in") or a place's noun ("capital")."""
    return _LOCATED.search(words) is not None or any(singular(word) in PLACE_NOUNS for word in words.split())


def names_people(asked: AskedKind) -> bool:
    """"which people work at …", "what person directed …": someone, by the noun for anyone."""
    return _asked_by(asked, PERSON_NOUNS)


def asks_for_organisation(probe: str) -> bool:
    """"what company employs X", "which firms are based in …": an organisation, by its noun."""
    return _asked_by(asked_kind(probe), ORGANISATION_NOUNS)


def asks_for_place(probe: str) -> bool:
    """`names_a_place`, or "where …"."""
    asked = asked_kind(probe)
    return _asked_by(asked, PLACE_NOUNS) or (asked.literal == "entity" and asked.place)


def _asked_by(asked: AskedKind, nouns: frozenset[str]) -> bool:
    """Whether an entity is asked for by one of `nouns` (the head of the asked noun, in the singular: "which nations" → nation)."""
    return asked.literal == "entity" and asked.noun is not None and singular(asked.noun.split()[-1]) in nouns


def names_quantity(noun: str | None) -> bool:
    """Whether a noun the question asks for is a quantity and never an entity's name: "budget", "running time"."""
    return bool(noun) and (noun.split()[-1] in QUANTITIES or _DURATION.search(noun) is not None)


def named_neighbour(probe: str) -> str | None:
    """The noun a question calls the entity between its topic and its answer by: "company" in "who
    founded the company X works for", "university" in "which city is X's university in", "director" in
    "where was the director of X born" (not "the founder of X's employer": that is the employer; the probe:
    topics masked). "The film X" followed by no verb ("who directed the film X", "what genre is the
    film X in") names the topic itself, and is not read."""
    match = _NAMED_NEIGHBOUR.search(probe.lower())
    if match is None:
        return None
    if match.group(1) is not None:
        return match.group(1) if match.group(2) not in STOPWORDS else None
    return match.group(3) or match.group(4)  # "X's spouse", "the spouse of X": the neighbour only where the question asks for another noun (`_neighbour_mismatch`)


def clause_neighbour(probe: str) -> tuple[str, str] | None:
    """The noun a clause of the topic names on the way to the answer, and the clause's verb: ("people", "knows") in
    "where were the people X knows born", ("city", "born") in "which companies are based in the city where X was born",
    ("company", "works") in "who founded the company X works for"; None where the question asks for that noun itself
    ("list the films X directed") or says no verb (the probe: topics masked)."""
    text = probe.lower()
    match = _CLAUSE.search(text)
    if match is None or match.group(2) in PREPOSITIONS | _AUXILIARIES | {"and", "or", "of"} or _ASKS_FOR_CLAUSE.match(text[:match.end(1) + 1]):
        return None
    return match.group(1), match.group(2)


def subject_verb(probe: str) -> str | None:
    """The verb a question says its topic does, asked with "do": "know" in "who does X know", "work" in "which company
    does X work for"; None in "who knows X" or "who directed X" (the probe: topics masked)."""
    match = _DO_SUPPORT.match(probe.lower())
    return match.group(1) if match is not None and match.group(1) not in _AUXILIARIES else None


def topic_is_in(probe: str) -> bool:
    """Whether the question asks what its topic is in: "in what country is X", "which country is X located in" (the
    probe: topics masked)."""
    return _TOPIC_IS_IN.match(probe.lower()) is not None


def outer_neighbour(probe: str) -> str | None:
    """The noun a question calls the neighbour past the named one by, where the answer lies past it too:
    "employer" in "where is the employer of X's husband headquartered", "founder" in "what is the birthplace
    of the founder of X's employer"; none in "where is the birthplace of X's husband" or "what is the name of
    the employer of X's wife", which ask for that birthplace and that employer (the probe: topics masked)."""
    match = _CHAIN.search(probe.lower())
    if match is None:
        return None
    nouns = [noun for noun in re.findall(r"the ([a-z][a-z\-]*) of ", match.group(1)) if noun not in NAME_WORDS]
    if len(nouns) > 1 or (nouns and re.search(r"[a-z]", match.group(2))):
        return nouns[-1]
    return None


def other_nouns(probe: str, asked: AskedKind) -> list[str]:
    """The words of a question that may name an entity on its way other than the neighbour `named_neighbour`
    reads and the asked kind: "university" in "which city did X attend university in" (the probe: topics
    masked). Only a word after an article, "to", "at" or "attend": a verb ("born") reads like the answer's own
    role ("place of birth"); not the noun the question equates with its answer ("which city is the capital of
    X's nation"); which of the rest are nouns of something on the way, the KG's types say (kgfr/answer_kind.py)."""
    text = probe.lower()
    said = {named_neighbour(probe), outer_neighbour(probe), *_COPULA_NOUN.findall(text)}  # read by their own rules, or the answer
    kept = set((asked.noun or "").split()) | said | _AUXILIARIES | _NO_NOUNS
    words = _AFTER_ARTICLE.findall(text)
    return list(dict.fromkeys(word for word in words if word not in kept and TOPIC_MASK not in word
                              and (word not in STOPWORDS or word in _DOMAIN_NOUNS) and not word.endswith(("ly", "ing", "ed"))))


def beside_topic(probe: str) -> set[str]:
    """The words a question says are next to its topic: "university" in "which city did X attend university in", "company" in
    "… X work for a company", "person" in "the person who founded X", "woman" in "the woman married to X", "city" in "the city
    where X was born"; not "people" in "do the people speak X" (the probe: topics masked)."""
    text = probe.lower()
    after = (_AFTER_ARTICLE.findall(match.group(1)) for match in re.finditer(rf"{TOPIC_MASK}((?:\s+[a-z'’\-]+){{1,6}})", text))
    return {word for words in after for word in words} | set(_RELATIVE_TO_TOPIC.findall(text))


def asks_for_it(probe: str, asked: AskedKind) -> bool:
    """Whether the neighbour a question names is what it asks for: "who is X's director", "what was the
    name of X's dog", "what is the company X works for", "which city is X's birthplace" (where "who started X's employer" asks for
    someone the employer leads to, and "where is the firm X works at headquartered" for a place)."""
    text = probe.lower()
    return _ENDS_ON_NEIGHBOUR.match(text) is not None or (
        (asked.noun is None or asked.noun in NAME_WORDS) and _COPULA_NEIGHBOUR.match(text) is not None)


def speaks_of_time(probe: str) -> bool:
    """Whether the question says anything of time ("released the same year as X", "when")."""
    return any(word in _TIME_WORDS for word in re.findall(r"[a-z]+", probe.lower()))


def asks_yes_or_no(question: str) -> bool:
    """Whether the question is asked yes or no: it opens with an auxiliary and no wh-word follows ("was X nominated
    for an oscar"; not "is X in Y's district and where is that", nor "do you know who directed X")."""
    text = question.lower()
    return _POLAR.match(text) is not None and _WH_WORD.search(text) is None


def names(question: str, label: str) -> bool:
    """Whether the question says the label, as words of its own ("good" in "is X considered good")."""
    return re.search(rf"(?<!\w){re.escape(label.lower())}(?!\w)", question.lower()) is not None


def where_is_neighbour(probe: str) -> bool:
    """Whether the question asks where the neighbour it names is, and ends there: "where is the headquarters of X",
    "where is X's birthplace" (the probe: topics masked)."""
    return _WHERE_IS_NEIGHBOUR.match(probe.lower()) is not None


def role_words(noun: str, category: bool) -> list[str]:
    """What a relation's objects may be called to be what the question asks for: its noun, and for a
    kind of it ("what kind of films") also the word English has for a kind of work ("film genre" ~
    `has_genre` 0.81, where "kind of films" reads most like it at 0.51, below ROLE_MATCH_FLOOR)."""
    if not category:
        return [noun]
    return [noun, f"{singular(noun)} genre"]
