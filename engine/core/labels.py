"""Label normalisation shared by the loaders (which store it) and the resolver (which looks it up),
and the rules every store follows when it resolves labels and picks the label it shows."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache

from kgqa.core.namespace import local_name
from kgqa.core.types import Entity, LinkedEntity

_NON_WORD = re.compile(r"[^\w]+", re.UNICODE)
MIN_FUZZY_WORD = 3  # every store's label search matches shorter words as written only ("17", "of")


@lru_cache(maxsize=1 << 16)
def normalise_label(text: str) -> str:
    """Case-, accent- and punctuation-insensitive key: "The Wizard of Oz!" → "the wizard of oz"."""
    if text.isascii():  # NFKD leaves ASCII as it is, and it has no combining marks (most labels)
        no_marks = text
    else:
        decomposed = unicodedata.normalize("NFKD", text)
        no_marks = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return " ".join(_NON_WORD.sub(" ", no_marks.casefold()).replace("_", " ").split())


def within_one_edit(a: str, b: str) -> bool:
    """Damerau–Levenshtein distance ≤ 1 (one letter deleted, inserted, replaced, or two adjacent swapped)."""
    if a == b:
        return True
    if abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]])
    short, long = (a, b) if len(a) < len(b) else (b, a)
    i = 0
    while i < len(short) and short[i] == long[i]:
        i += 1
    return short[i:] == long[i + 1 :]


LETTER_CHOICE = 1 / 25  # a slip that also picks a letter (a replacement, a stray one) picks one of ~25
FIRST_LETTER = 0.1  # how much rarer a slip at the first letter is (Pollock & Zamora 1983: ~7 % of misspellings)


def typo_likelihood(typed: str, meant: str) -> float:
    """How likely one slip turns `meant` into `typed` (a noisy channel, as in Kernighan, Church & Gale
    1990), up to a constant; 0 where they are not one edit apart. Each kind of slip — a letter dropped,
    doubled, replaced, added, or two swapped — is about as common as the others (Damerau 1964), but
    a replacement or an added letter other than a double must also pick *which* letter, so each
    particular one is `LETTER_CHOICE` as likely; slips at the first letter are rarer (`FIRST_LETTER`).
    Summed over the distinct slips that make `typed`, per letter of `meant`."""
    if typed == meant or not meant or not within_one_edit(typed, meant):
        return 0.0
    total = 0.0

    def add(weight: float, at: int) -> None:
        nonlocal total
        total += weight * (FIRST_LETTER if at == 0 else 1.0)

    n = len(meant)
    if len(typed) == n - 1:  # a letter dropped (from a run of like letters: one slip, whichever is counted)
        for i in range(n):
            if meant[:i] + meant[i + 1 :] == typed and (i == 0 or meant[i] != meant[i - 1]):
                add(1.0, i)
    elif len(typed) == n + 1:  # a letter added: a double of a neighbour, or any other
        for i in range(n + 1):
            if typed[:i] + typed[i + 1 :] == meant and (i == 0 or typed[i] != typed[i - 1]):
                doubled = typed[i] in meant[max(i - 1, 0) : i + 1]
                add(1.0 if doubled else LETTER_CHOICE, i)
    else:
        diff = [i for i in range(n) if typed[i] != meant[i]]
        if len(diff) == 1:
            add(LETTER_CHOICE, diff[0])
        else:
            add(1.0, diff[0])  # two neighbours swapped (within_one_edit allows nothing else)
    return total / n


def one_edit_deletions(word: str) -> list[str]:
    """Each text made by deleting one letter of `word`, once, in the order of the letters deleted."""
    return list(dict.fromkeys(word[:i] + word[i + 1 :] for i in range(len(word))))


def deletion_keys(word: str) -> list[str]:
    """The word and its `one_edit_deletions`: two words one edit apart (`within_one_edit`: a
    deletion, insertion, replacement or adjacent swap) always share one, so an index of these keys
    finds a misspelt word by exact look-ups (symmetric deletion, SymSpell). Words under
    MIN_FUZZY_WORD letters are their own only key (as every store matches them: as written)."""
    return [word, *one_edit_deletions(word)] if len(word) >= MIN_FUZZY_WORD else [word]


def joined_key(text: str) -> str:
    """The normalised key with its spaces taken out: what a CamelCase label normalises to."""
    return normalise_label(text).replace(" ", "")


def resolved(
    labels: Sequence[str],
    exact: Callable[[list[str]], Iterable[tuple[str, str]]],
    normalised: Callable[[list[str]], Iterable[tuple[str, str, str]]],
) -> dict[str, list[LinkedEntity]]:
    """What every store's `resolve` answers, given its two look-ups: `exact(labels)` → (label, iri)
    pairs; `normalised(keys)` → (key, iri, stored label) for stored labels whose normalised form is
    a key. The normalised look-up runs only for labels with no exact hit. One hit per entity, sorted
    by IRI; a normalised hit carries the smallest of its labels that matched."""
    found: dict[str, dict[str, LinkedEntity]] = {label: {} for label in labels}
    if not labels:
        return {}
    for label, iri in exact(sorted(set(labels))):
        found[label][iri] = LinkedEntity(label, Entity(iri, label), "exact")
    missing = [label for label, hits in found.items() if not hits and normalise_label(label)]
    if missing:
        # "western europe" also tries "westerneurope": the key of a label written in CamelCase
        # ("WesternEurope", as in YAGO and DBpedia names), used only where the spaced key finds nothing
        keys = {normalise_label(label) for label in missing} | {joined_key(label) for label in missing}
        by_key: dict[str, dict[str, str]] = {}
        for key, iri, stored in normalised(sorted(keys)):
            if normalise_label(stored) != key:
                continue  # another label of the same entity
            best = by_key.setdefault(key, {})
            if iri not in best or stored < best[iri]:
                best[iri] = stored
        for label in missing:
            hits = by_key.get(normalise_label(label)) or by_key.get(joined_key(label), {})
            for iri, stored in hits.items():
                found[label][iri] = LinkedEntity(label, Entity(iri, stored), "normalised")
    return {label: [hits[iri] for iri in sorted(hits)] for label, hits in found.items()}


def display_label(iri: str, plain: Iterable[str], preferred: Iterable[str]) -> str:
    """The one label shown for an entity, the same from every store: the smallest explicitly given
    label, else the smallest id label a fact used, else a readable part of the IRI."""
    return min(preferred, default=None) or min(plain, default=None) or local_name(iri)
