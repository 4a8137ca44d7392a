"""How a span of a question is written (kgqa/retrieval/linking.py): a name, a title, or prose that happens to
be a label."""

from __future__ import annotations

import re

TOKEN = re.compile(r"\w+(?:['’.\-]\w+)*|[^\w\s]", re.UNICODE)


def written_as_name(span: str, stopwords: frozenset[str]) -> bool:
    """Every word capitalised (or a number) but function words, the first one capitalised: "Jonh
    Smith", "Return of the Jedy" — a second name beside one that matched, not prose ("the movie Parade")."""
    parts = words(span)
    return bool(parts) and capitalised(parts[0]) and all(capitalised(w) or w.lower() in stopwords for w in parts)


def name_like(span: str) -> bool:
    return len(words(span)) > 1 or capitalised(span)


def capitalised(span: str) -> bool:
    return span[:1].isupper() or any(ch.isdigit() for ch in span)


def prose(span: str, stopwords: frozenset[str]) -> bool:
    """Lower-case words opening with a function word: "the story" in "what did Norman Lear write the
    story for" reads as prose beside a capitalised name, even where a film is called "The Story"."""
    parts = words(span)
    return not capitalised(span) and len(parts) > 1 and parts[0].lower() in stopwords


def relational_noun(span: str, question: str) -> bool:
    """Several lower-case words between "the" and "of" in the question ("the running time of X")."""
    at = question.find(span)
    return (len(words(span)) > 1 and span.islower() and re.search(r"\bthe\s+$", question[:at]) is not None
            and re.match(r"\s+of\b", question[at + len(span):]) is not None)


def words(span: str) -> list[str]:
    return [w for w in TOKEN.findall(span) if any(ch.isalnum() for ch in w)]


def written_as_title(i: int, j: int, text: str) -> bool:
    """A span of function words only that is written like a title inside the question ("the actors in
    Are You Here", "what type of film is All of Me"): several words, the first capitalised, not the
    question's first word (which is capitalised anyway)."""
    return i > 0 and j - i > 1 and text[:1].isupper()
