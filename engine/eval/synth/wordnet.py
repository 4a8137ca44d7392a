"""WordNet 3.0 (Princeton University; its licence travels in `wordnet-base.copyright` beside the
files) read straight from the database files Debian's `wordnet-base` ships: the noun and verb
indexes, synsets read by their byte offsets on demand, the exception lists for irregular forms.
Only what `kgqa synth` needs: a word's senses in frequency order, a synset's lemmas, gloss,
hypernyms and hyponyms, the people a word's senses derive (`agents`: "music" → "composer"), base
forms ("directed" → "direct") and the inflections back."""

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
PERSON = 18  # the lexicographer file noun.person
POS_LETTER = {"n": "noun", "v": "verb"}
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
    hyponyms: tuple[int, ...] = ()
    lexfile: int = 0  # the lexicographer file: PERSON for a kind of person
    # derivationally related forms ("+" pointers) among nouns and verbs: (lemma here, offset, pos, lemma number there, from 1)
    derived: tuple[tuple[str, int, str, int], ...] = ()
    frames: tuple[int, ...] = ()  # a verb's sentence frames ("Somebody ----s something" is 8)


# WordNet's verb frames with an object: "Somebody ----s something", "… somebody", "… somebody something", …
TRANSITIVE_FRAMES = frozenset({8, 9, 10, 11, 14, 15, 16, 17, 18, 19, 20, 21, 24, 25, 30, 31})


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
            lemmas = [_clean(fields[4 + 2 * i]) for i in range(count)]
            at = 4 + 2 * count
            pointers = [fields[at + 1 + 4 * i : at + 5 + 4 * i] for i in range(int(fields[at]))]
            hypernyms = [int(p[1]) for p in pointers if p[0] in ("@", "@i")]
            hyponyms = [int(p[1]) for p in pointers if p[0] == "~"]  # not "~i": instances are named people
            # "+ OFFSET POS SSTT": SS the source lemma's number here, TT the target's there (hex, from 1)
            related = [(lemmas[int(p[3][:2], 16) - 1], int(p[1]), POS_LETTER[p[2]], int(p[3][2:], 16))
                       for p in pointers if p[0] == "+" and p[2] in POS_LETTER]
            at += 1 + 4 * len(pointers)
            # a verb's frames: "f_cnt + f_num w_num …" after its pointers
            frames = [int(fields[at + 2 + 3 * i]) for i in range(int(fields[at]))] if pos == "verb" and len(fields) > at else []
        except (IndexError, ValueError, KeyError):
            raise KGQAError(f"{path}: byte {offset} starts no synset") from None
        return Synset(offset, pos, tuple(lemmas), gloss.strip(), tuple(hypernyms), tuple(hyponyms), int(fields[1]), tuple(related), tuple(frames))

    def event_verb(self, noun: str, senses: int = 2) -> tuple[str, bool] | None:
        """The verb WordNet derives from `noun` itself among its first `senses` senses, and whether it
        takes an object: "birth" → ("be born", False), "death" → ("die", False), "release" →
        ("release", True), "burial" → ("bury", True); a "be …" lemma first; None where none is
        derived ("nationality")."""
        found: list[tuple[str, bool]] = []
        for sense in self.synsets(noun, "noun")[:senses]:
            for here, offset, pos, number in sense.derived:
                if here == noun.lower() and pos == "verb":
                    verb = self.synset(offset, "verb")
                    found.append((verb.lemmas[number - 1], bool(TRANSITIVE_FRAMES & set(verb.frames))))
        found.sort(key=lambda v: not v[0].startswith("be "))
        return found[0] if found else None

    def agents(self, lemma: str, pos: str, senses: int = 2) -> list[tuple[str, str | None]]:
        """The people who do what `lemma` names, among its first `senses` senses, with the verb each
        does where WordNet derives one: the person nouns derived from the word ("music" → "musician"),
        or from a verb derived from it ("production" → "produce" → "producer"), else the agent a
        suffix makes of it that is a person noun ("cinematography" → "cinematographer"), and their
        direct kinds in common use ("musician" → "composer", "compose"). Single words only."""
        people: dict[int, None] = {}
        for sense in self.synsets(lemma, pos)[:senses]:
            if sense.lemmas[0] != lemma.lower() and lemma.lower() not in sense.lemmas:
                continue
            for here, offset, there_pos, number in sense.derived:
                if here != lemma.lower():
                    continue
                if there_pos == "noun" and self.synset(offset, "noun").lexfile == PERSON:
                    people[offset] = None
                elif there_pos == "verb":  # the nouns derived from that very verb ("produce", not its synonyms)
                    verb = self.synset(offset, "verb")
                    said = verb.lemmas[number - 1]
                    people.update((o, None) for from_verb, o, p, _ in verb.derived
                                  if from_verb == said and p == "noun" and self.synset(o, "noun").lexfile == PERSON)
        if not people and pos == "noun":
            for agent in _agent_forms(lemma.lower()):
                people.update((o, None) for o in (self.entry(agent, "noun") or IndexEntry((), 0)).offsets[:1]
                              if self.synset(o, "noun").lexfile == PERSON)
        kinds = [h for offset in people for h in self.synset(offset, "noun").hyponyms]
        found: dict[str, str | None] = {}
        for offset in [*people, *kinds]:
            person = self.synset(offset, "noun")
            for name in person.lemmas:
                entry = self.entry(name, "noun")
                rare = offset not in people and (entry is None or entry.tagged < 1)  # a kind must be in common use
                if " " in name or not name.isalpha() or rare or name in found:
                    continue
                verbs = [self.synset(o, "verb").lemmas[number - 1] for here, o, p, number in person.derived if here == name and p == "verb"]
                found[name] = next((verb for verb in verbs if " " not in verb), None)
        return list(found.items())

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

    def simple_past(self, verb: str) -> str:
        """"compose" → "composed", "write" → "wrote", "sing" → "sang": the irregular form that is not
        the past participle where there are two, else the participle."""
        first, *rest = verb.split()
        participle = self.past_participle(first)
        irregular = [f for f in self._inflected.get(first, []) if not f.endswith(("s", "ing")) and f != participle]
        return " ".join([irregular[0] if irregular else participle, *rest])

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


def _agent_forms(noun: str) -> list[str]:
    """Who practises a field, by its suffix: photography → photographer, music → musician, art → artist."""
    return [noun[:-1] + "er" if noun.endswith("y") else noun + "er", noun + "ian", noun + "ist"]


def _clean(lemma: str) -> str:
    """"Middle_English(a)" → "middle english": words by spaces, lower case, no syntactic marker."""
    return lemma.split("(")[0].replace("_", " ").lower()


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
