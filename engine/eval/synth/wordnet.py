"""WordNet 3.0 (Princeton University; its licence travels in `wordnet-base.copyright` beside the
files) read straight from the database files Debian's `wordnet-base` ships: the noun and verb
indexes, synsets read by their byte offsets on demand, the exception lists for irregular forms.
Only what `kgqa synth --synonyms` needs: a word's senses in frequency order, a synset's lemmas,
gloss, hypernyms, base forms ("directed" → "direct") and the inflections back."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from kgqa.core.cache import cache_root
from kgqa.core.debian import package_files
from kgqa.core.errors import KGQAError

PACKAGE = "wordnet-base"
POS = ("noun", "verb")
FILES = [f"{kind}.{pos}" for pos in POS for kind in ("index", "data")] + [f"{pos}.exc" for pos in POS]
# WordNet's own detachment rules (morphy), tried in order after the exception lists
_DETACH = {"noun": [("s", ""), ("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh"), ("men", "man"), ("ies", "y")],
           "verb": [("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""), ("ing", "e"), ("ing", "")]}
_VOWELS = "aeiou"
_UNCHANGED = frozenset("set put cut let hit shut cost hurt spread read quit bet burst cast split upset broadcast".split())  # past = base


def fetch(dest: Path | None = None) -> Path:
    """The folder holding WordNet's files: `$KGQA_CACHE/wordnet` (else ~/.cache/kgqa/wordnet),
    downloaded and unpacked there on first use (`apt-get download wordnet-base`, `dpkg -x`)."""
    folder = dest or cache_root() / "wordnet"
    folder.mkdir(parents=True, exist_ok=True)
    package_files(PACKAGE, FILES, folder)
    return folder


@dataclass(frozen=True)
class Synset:
    offset: int
    pos: str  # "noun" | "verb"
    lemmas: tuple[str, ...]  # lower case, words separated by spaces
    gloss: str
    hypernyms: tuple[int, ...]


@dataclass(frozen=True)
class IndexEntry:
    offsets: tuple[int, ...]  # the word's senses, most frequent first
    tagged: int  # how many of its senses SemCor tagged: 0 for a rare word ("twelvemonth", "histrion")


class WordNet:
    def __init__(self, folder: Path):
        self.folder = Path(folder)
        missing = [name for name in FILES if not (self.folder / name).is_file()]
        if missing:
            raise KGQAError(f"{self.folder} is no WordNet folder: it lacks {', '.join(missing)} (kgqa.eval.synth.wordnet.fetch gets them)")
        self._index = {pos: self._read_index(self.folder / f"index.{pos}") for pos in POS}
        self._exceptions = {pos: self._read_exceptions(self.folder / f"{pos}.exc") for pos in POS}
        self._inflected: dict[str, list[str]] = {}  # verb base → its irregular forms
        for form, bases in self._exceptions["verb"].items():
            for base in bases:
                self._inflected.setdefault(base, []).append(form)

    @staticmethod
    def _read_index(path: Path) -> dict[str, IndexEntry]:
        entries = {}
        with open(path, encoding="utf-8") as f:
            for line_no, line in enumerate(f, 1):
                if line.startswith(" "):  # the licence at the top
                    continue
                fields = line.split()
                try:
                    synsets, pointers = int(fields[2]), int(fields[3])
                    tagged = int(fields[5 + pointers])
                    offsets = tuple(int(o) for o in fields[6 + pointers : 6 + pointers + synsets])
                except (IndexError, ValueError):
                    raise KGQAError(f"{path}:{line_no}: not a WordNet index line: {line[:80]!r}") from None
                entries[fields[0]] = IndexEntry(offsets, tagged)
        return entries

    @staticmethod
    def _read_exceptions(path: Path) -> dict[str, list[str]]:
        with open(path, encoding="utf-8") as f:
            return {fields[0]: fields[1:] for fields in (line.split() for line in f) if len(fields) >= 2}

    def entry(self, lemma: str, pos: str) -> IndexEntry | None:
        return self._index[pos].get(lemma.lower().replace(" ", "_"))

    def synsets(self, lemma: str, pos: str) -> list[Synset]:
        entry = self.entry(lemma, pos)
        return [self.synset(o, pos) for o in entry.offsets] if entry else []

    @lru_cache(maxsize=4096)
    def synset(self, offset: int, pos: str) -> Synset:
        path = self.folder / f"data.{pos}"
        with open(path, "rb") as f:
            f.seek(offset)
            line = f.readline().decode("utf-8")
        head, _, gloss = line.partition(" | ")
        fields = head.split()
        try:
            if int(fields[0]) != offset:
                raise ValueError
            count = int(fields[3], 16)
            lemmas = [fields[4 + 2 * i] for i in range(count)]
            at = 4 + 2 * count
            pointers = int(fields[at])
            hypernyms = [int(fields[at + 1 + 4 * i + 1]) for i in range(pointers) if fields[at + 1 + 4 * i] in ("@", "@i")]
        except (IndexError, ValueError):
            raise KGQAError(f"{path}: byte {offset} starts no synset") from None
        clean = tuple(dict.fromkeys(lemma.split("(")[0].replace("_", " ").lower() for lemma in lemmas))
        return Synset(offset, pos, clean, gloss.strip(), tuple(hypernyms))

    def base_forms(self, word: str, pos: str) -> list[str]:
        """The lemmas `word` may be an inflection of, the exception lists first ("born" → "bear",
        "written" → "write"), then the word itself, then WordNet's detachment rules."""
        word = word.lower()
        if " " in word:  # a phrasal lemma inflects its first word: "carries out" → "carry out"
            first, rest = word.split(" ", 1)
            phrases = [f"{base} {rest}" for base in [*self._exceptions[pos].get(first, []), first, *_detached(first, pos)]]
            return [p for p in dict.fromkeys(phrases) if self.entry(p, pos)]
        found = [*self._exceptions[pos].get(word, []), word, *_detached(word, pos)]
        return [b for b in dict.fromkeys(found) if self.entry(b, pos)]

    def past_participle(self, verb: str) -> str:
        """"make" → "made", "write" → "written", "direct" → "directed", "star" → "starred"; a
        phrasal lemma inflects its first word ("bear upon" → "borne upon")."""
        first, *rest = verb.split()
        irregular = [f for f in self._inflected.get(first, []) if not f.endswith(("s", "ing"))]
        if first in _UNCHANGED:
            form = first
        elif irregular:
            form = next((f for f in irregular if f.endswith("n")), irregular[-1])
        elif first.endswith("e"):
            form = first + "d"
        elif len(first) > 1 and first.endswith("y") and first[-2] not in _VOWELS:
            form = first[:-1] + "ied"
        elif _doubles(first):
            form = first + first[-1] + "ed"
        else:
            form = first + "ed"
        return " ".join([form, *rest])

    def third_person(self, verb: str) -> str:
        """"affect" → "affects", "touch on" → "touches on", "carry" → "carries"."""
        first, *rest = verb.split()
        if first in ("be", "have"):
            form = {"be": "is", "have": "has"}[first]
        elif first.endswith(("s", "sh", "ch", "x", "z", "o")):
            form = first + "es"
        elif len(first) > 1 and first.endswith("y") and first[-2] not in _VOWELS:
            form = first[:-1] + "ies"
        else:
            form = first + "s"
        return " ".join([form, *rest])


def plural(noun: str) -> str:
    if noun.endswith(("s", "sh", "ch", "x", "z")):
        return noun + "es"
    if len(noun) > 1 and noun.endswith("y") and noun[-2] not in _VOWELS:
        return noun[:-1] + "ies"
    return noun + "s"


def _detached(word: str, pos: str) -> list[str]:
    return [word[: -len(suffix)] + ending for suffix, ending in _DETACH[pos] if word.endswith(suffix) and len(word) > len(suffix) + 1]


def _doubles(verb: str) -> bool:
    """One syllable ending consonant–vowel–consonant doubles its last letter: star → starred, pen → penned."""
    syllables = sum(1 for i, c in enumerate(verb) if c in _VOWELS and (i == 0 or verb[i - 1] not in _VOWELS))
    return syllables == 1 and len(verb) >= 3 and verb[-1] not in _VOWELS + "wxy" and verb[-2] in _VOWELS and verb[-3] not in _VOWELS


def open_wordnet(folder: Path | None = None) -> WordNet:
    """WordNet from `folder`, else from the cache (fetched there on first use)."""
    return WordNet(folder or fetch())
