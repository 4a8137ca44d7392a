"""A deterministic generator of realistic knowledge graphs for bench/scale.py, streamed to disk.

    .venv/bin/python bench/scale_kg.py --facts 1e5 --out DIR [--seed 0] [--questions 50]

writes DIR/kg-100k.tsv (kgqa's `tsv` format: `subject<TAB>relation<TAB>object`; each string is an
entity and its label), DIR/questions-100k.jsonl, DIR/questions-100k-typo.jsonl and
DIR/kg-100k.meta.json. The same seed and size give byte-identical files.

The world: countries, cities (each `located_in` a country; each country has a `capital`), companies
(`headquartered_in` a city, `industry`, `founded_in`, `founded_by`), universities (`located_in`
their city), films (`directed_by`, `starred_actors`, `release_year`, `has_genre`, `set_in`), and
people, most of the facts (`born_in`, `lives_in`, `works_for`, `occupation`, `educated_at`,
`birth_year`, `citizen_of`, `spouse_of`, `knows`). Objects are chosen Zipf-like (rank k with
probability ~ 1/k), so the first cities, companies, universities and a few people are hubs: at 50M
facts the largest city is born in by ~400k people.

Memory does not grow with the size: every entity's name is a pure function of its index (cities,
countries and surnames from syllables, read back uniquely; people from first name x middle initial
x surname), so a fact can name any entity without a table of names, and the file is written one
entity at a time. Only a few small caches and the question reservoirs are held.

Names collide and nest by design:
- many people share a first name and surname and differ by their middle initial ("John A. Smith",
  "John B. Smith"); accented and plain first names both occur ("José A. Garcia", "Jose A. Garcia":
  one key once accents are folded);
- in every block of 50 people, person 1 is person 0's name + " Jr.", person 2 is person 0's with
  "son" added to the surname ("John A. Smithson"), and persons 3-5 are "John Smith", "John Smith
  Jr." and "John Smithson" (no middle initial; the common surnames come first);
- "University of Varela", "Varela Holdings", "Varela Nights", "Return to Varela" and "The Shadow
  of Varela" all contain the city "Varela"; films have sequels ("Silent River II").

Questions, N per kind, each answered by facts in the file: `born_in` (where was P born),
`works_for` (which company does P work for), `born_country` (2 hops: in which country was P born),
`directed_by` (who directed F) and `city_country` (which country is C located in; cities drawn by
their Zipf weight, so hubs are asked about). Topics are sampled from entities written completely.
The typo file holds the same questions with one seeded typo in the topic's name (bench/linking.py's
`typo`); its `topics` stay the gold names, `mention` is the misspelt one.
"""

from __future__ import annotations

import argparse
import bisect
import hashlib
import heapq
import json
import math
import os
import random
import sys
from array import array
from functools import lru_cache
from pathlib import Path

BENCH = Path(__file__).resolve().parent
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))
from linking import typo  # noqa: E402  (bench/linking.py: one edit, first letter kept)

VERSION = 1  # bump when the output for a given seed and size changes

FIRST_NAMES = """John Mary James Maria Robert Linda Michael Anna William Elena David Sarah Richard Laura Joseph Emma
Thomas Olivia Charles Sofia Daniel Grace Matthew Chloe Anthony Julia Mark Clara Paul Alice Steven Hannah Andrew Nora Kevin
Leah Brian Irene George Helen Edward Rosa Peter Eva Samuel Lucia Henry Ines Jack Mia Omar Amira Ahmed Fatima Yusuf Leila
Wei Mei Hiroshi Yuki Kenji Aiko Raj Priya Arjun Ananya Ivan Olga Dmitri Natalia Pierre Camille Luc Amelie Hans Greta Lars
Ingrid Pablo Carmen Diego Lucas Mateo Valentina Kwame Ama Chidi Ngozi José Jose André Andre Zoë Zoe Renée Renee Björn Bjorn""".split()
SURNAMES = """Smith Johnson Williams Brown Jones Garcia Miller Davis Rodriguez Martinez Hernandez Lopez Gonzalez Wilson
Anderson Thomas Taylor Moore Jackson Martin Lee Perez Thompson White Harris Sanchez Clark Ramirez Lewis Robinson Walker
Young Allen King Wright Scott Torres Nguyen Hill Flores Green Adams Nelson Baker Hall Rivera Campbell Mitchell Carter
Roberts Müller Schmidt Schneider Fischer Weber Meyer Wagner Becker Schulz Hoffmann Dubois Durand Lefebvre Moreau Laurent
Simon Michel Rossi Russo Ferrari Esposito Bianchi Romano Colombo Ricci Marino Greco Silva Santos Oliveira Souza Pereira
Costa Almeida Kim Park Choi Chen Wang Li Zhang Liu Yang Huang Zhao Wu Zhou Sato Suzuki Takahashi Tanaka Watanabe Ito
Yamamoto Nakamura Kobayashi Kato Petrova Kowalski Nowak Wojcik Okafor Mensah Diallo Traore Haddad Khan Ali Hussain
Ahmed Novak Horvat Kovacs Nagy Popescu Jensen Nielsen Hansen Larsen Berg Lindqvist Eriksson Karlsson Murphy Kelly
O'Brien Byrne Walsh Fernandes Cohen Levi Friedman Singh Patel Sharma Gupta Das Reddy""".split()
MIDDLE = [chr(c) for c in range(ord("A"), ord("Z") + 1)]
COMMON = 20  # the first names most people of a surname get (John, Mary, James, ...)

# Syllables: an onset (consonants only) and a nucleus (vowels only). A name is onset-nucleus pairs
# and a tail, so its consonant and vowel runs read it back: no two indices give one name.
ONSETS = "b c d f g k l m n p r s t v z br dr gr kr tr st sh ch th".split()
NUCLEI = "a e i o u ai au ei ou".split()
CITY_CODAS = ["", "n", "r", "s", "l", "m", "th", "x"]
COUNTRY_TAILS = ["via", "ria", "nia", "land"]  # vowel run "ia" or coda "nd": never a city's
SURNAME_TAILS = ["nov", "lenko", "rescu", "vard", "lli", "mani", "berg", "stad", "rez", "vic", "dotti", "sky"]

COMPANY_SUFFIXES = ["Holdings", "Group", "Industries", "Systems", "Labs", "Motors", "Foods", "Media", "Bank", "& Sons",
                    "Logistics", "Pharma", "Airlines", "Textiles", "Partners"]
ADJECTIVES = """Silent Broken Golden Last Hidden Distant Burning Frozen Lost Crimson Quiet Wild Dark Bright Hollow Endless
Secret Bitter Fading Restless Savage Gentle Little Long Empty Iron Paper Glass Summer Winter""".split()
NOUNS = """River Road Garden Mirror Harbor Promise Kingdom Shadow Letter Station Horizon Island Journey Storm Bridge Voice
Dream Window Forest Crown Tide Silence Mountain Orchard Lantern Compass Harvest Frontier Echo Valley""".split()
OCCUPATIONS = """engineer teacher nurse accountant lawyer farmer chef architect pilot plumber electrician journalist
pharmacist dentist surgeon carpenter librarian economist chemist photographer translator musician painter baker
mechanic firefighter sailor banker programmer veterinarian""".split()
INDUSTRIES = """software banking retail mining shipping insurance biotech telecom agriculture aerospace publishing
logistics tourism textiles automotive construction""".split()
GENRES = "drama comedy thriller documentary western horror romance musical animation war mystery adventure fantasy".split()
YEARS = [str(y) for y in range(1900, 2025)]

PEOPLE_BLOCK = 50  # persons 1..5 of each block carry the nested forms (see the module's doc)
FACTS_PER_PERSON = 6.2  # expected, from the probabilities in the people loop
FACTS_PER_FILM = 6.5
FACTS_PER_COMPANY = 3.2
ZIPF_A = 0.8  # people per surname ~ rank^-ZIPF_A


def size_label(facts: int) -> str:
    """1e5 → 100k, 1e6 → 1M, 2e4 → 20k, 2500 → 2500."""
    for unit, suffix in ((1_000_000, "M"), (1_000, "k")):
        if facts >= unit and facts % (unit // 10 or 1) == 0:
            value = facts / unit
            return f"{value:g}{suffix}"
    return str(facts)


def _syllables(n: int, count: int) -> str:
    out = []
    for _ in range(count):
        n, k = divmod(n, len(ONSETS) * len(NUCLEI))
        out.append(ONSETS[k // len(NUCLEI)] + NUCLEI[k % len(NUCLEI)])
    return "".join(out)


def _scramble(i: int, modulus: int, salt: int) -> int:
    """A bijection of [0, modulus): spreads consecutive indices over the syllable space."""
    a = 2_654_435_761 + 2 * salt
    while math.gcd(a, modulus) != 1:
        a += 2
    return (a * i + 97 * salt) % modulus


_PAIRS = len(ONSETS) * len(NUCLEI)


@lru_cache(maxsize=1 << 17)
def city_name(i: int) -> str:
    """Two syllables and a coda (373k names), then three; capitalised."""
    space2 = _PAIRS**2 * len(CITY_CODAS)
    if i < space2:
        n = _scramble(i, space2, 1)
        syl, coda = divmod(n, len(CITY_CODAS))
        return (_syllables(syl, 2) + CITY_CODAS[coda]).capitalize()
    n = i - space2
    syl, coda = divmod(n, len(CITY_CODAS))
    return (_syllables(syl, 3) + CITY_CODAS[coda]).capitalize()


@lru_cache(maxsize=4096)
def country_name(i: int) -> str:
    space = _PAIRS * len(COUNTRY_TAILS)
    n = _scramble(i, space, 2) if i < space else i
    syl, tail = divmod(n, len(COUNTRY_TAILS))
    count = 1 if i < space else 2
    return (_syllables(syl, count) + COUNTRY_TAILS[tail]).capitalize()


def syllabic_surname(i: int) -> str:
    space2 = _PAIRS**2 * len(SURNAME_TAILS)
    count = 2 if i < space2 else 3
    n = _scramble(i, space2, 3) if i < space2 else i - space2
    syl, tail = divmod(n, len(SURNAME_TAILS))
    return (_syllables(syl, count) + SURNAME_TAILS[tail]).capitalize()


def surname(i: int) -> str:
    return SURNAMES[i] if i < len(SURNAMES) else syllabic_surname(i - len(SURNAMES))


@lru_cache(maxsize=1 << 15)
def company_name(i: int) -> str:
    named = len(SURNAMES) * len(COMPANY_SUFFIXES)  # the first ones carry a surname, in scrambled order
    b, suffix = divmod(_scramble(i, named, 9) if i < named else i, len(COMPANY_SUFFIXES))
    base = SURNAMES[b] if b < len(SURNAMES) else city_name(b - len(SURNAMES))
    return f"{base} {COMPANY_SUFFIXES[suffix]}"


def university_name(i: int) -> str:
    return f"University of {city_name(i)}"


def _roman(n: int) -> str:
    out = []
    for value, letters in ((1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"), (50, "L"),
                           (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")):
        while n >= value:
            out.append(letters)
            n -= value
    return "".join(out)


def film_name(i: int) -> str:
    b, template = divmod(i, 5)
    if template == 0:
        return f"The {NOUNS[b % len(NOUNS)]} of {city_name(b // len(NOUNS))}"
    if template == 1:
        return f"{city_name(b)} Nights"
    if template == 2:
        return f"Return to {city_name(b)}"
    base = b * 2 + (template - 3)  # templates 3 and 4: adjective + noun, then its sequels
    pairs = len(ADJECTIVES) * len(NOUNS)
    sequel, pair = divmod(base, pairs)
    title = f"{ADJECTIVES[pair % len(ADJECTIVES)]} {NOUNS[pair // len(ADJECTIVES)]}"
    return title if sequel == 0 else f"{title} {_roman(sequel + 1)}"


class PeopleNames:
    """Person index → name, a pure function (see the module's doc). Surnames get blocks of people
    whose sizes fall off as rank^-ZIPF_A; within a block the n-th person gets a scrambled (first
    name, middle initial) pair, then two initials past 2,600. A scrambled index picks the block,
    so consecutive people differ."""

    def __init__(self, planned: int):
        self.planned = max(planned, 1000)
        cap = len(FIRST_NAMES) * (len(MIDDLE) + len(MIDDLE) ** 2)  # one or two middle initials
        head = min(cap, max(50, self.planned // 40))
        self.starts = array("q", [0])
        rank = 0
        while self.starts[-1] < self.planned:
            self.starts.append(self.starts[-1] + max(20, int(head / (rank + 1) ** ZIPF_A)))
            rank += 1
        self.total = self.starts[-1]

    def bulk(self, p: int) -> tuple[str, str, str]:
        """(first name, middle initials, surname) of person key p."""
        if p < self.total:
            q = _scramble(p, self.total, 5)
            s = bisect.bisect_right(self.starts, q) - 1
            n = q - self.starts[s]
        else:  # beyond the plan: blocks of 20 after the planned ones
            s, n = divmod(p - self.total, 20)
            s += len(self.starts) - 1
        # (first name, initial) pairs, scrambled within the block: the COMMON first names' first,
        # so that a surname's people share first names ("John A. Smith", "John K. Smith")
        common = COMMON * len(MIDDLE)
        single = len(FIRST_NAMES) * len(MIDDLE)
        if n < common:
            k = _scramble(n, common, s)
            first, m = k % COMMON, k // COMMON
        elif n < single:
            k = _scramble(n - common, single - common, s)
            first, m = COMMON + k % (len(FIRST_NAMES) - COMMON), k // (len(FIRST_NAMES) - COMMON)
        else:
            k = _scramble(n - single, len(FIRST_NAMES) * len(MIDDLE) ** 2, s)
            first, m = k % len(FIRST_NAMES), len(MIDDLE) + k // len(FIRST_NAMES)
        middle = f"{MIDDLE[m]}." if m < len(MIDDLE) else f"{MIDDLE[m // len(MIDDLE) - 1]}. {MIDDLE[m % len(MIDDLE)]}."
        return FIRST_NAMES[first], middle, surname(s)

    def short(self, j: int) -> tuple[str, str]:
        """(first name, surname) of the j-th short-named person: common surnames first."""
        s, first = divmod(j, len(FIRST_NAMES))
        return FIRST_NAMES[first], surname(s)

    @lru_cache(maxsize=1 << 18)
    def name(self, p: int) -> str:
        block, r = divmod(p, PEOPLE_BLOCK)
        if r == 1:
            return "{} {} {} Jr.".format(*self.bulk(p - 1))
        if r == 2:
            return "{} {} {}son".format(*self.bulk(p - 2))
        if r in (3, 4, 5):
            first, last = self.short(block)
            return (f"{first} {last}", f"{first} {last} Jr.", f"{first} {last}son")[r - 3]
        return "{} {} {}".format(*self.bulk(p))


def _unit(seed: int, kind: str, i: int) -> float:
    """A uniform [0, 1) drawn from (seed, kind, i) alone: facts any entity may need of another."""
    digest = hashlib.blake2b(f"{seed}:{kind}:{i}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def zipf_rank(u: float, n: int) -> int:
    """Rank in [0, n) with P(k) ~ log((k+2)/(k+1)) / log(n+1), about 1/(k+1) (continuous Zipf, s=1)."""
    return min(n - 1, int((n + 1) ** u) - 1)


class Plan:
    """How many entities of each kind a size gets."""

    def __init__(self, facts: int):
        self.facts = facts
        self.countries = min(200, max(8, int(facts**0.5 / 15)))
        self.cities = max(10, facts // 500)
        self.companies = max(5, facts // 1000)
        self.universities = max(2, min(self.cities, facts // 20_000))
        self.films = max(5, facts // 150)
        other = self.countries + self.cities * 1.0 + self.companies * FACTS_PER_COMPANY + self.universities + self.films * FACTS_PER_FILM
        self.people = max(50, int((facts - other) / FACTS_PER_PERSON))

    def to_json(self) -> dict:
        return {k: getattr(self, k) for k in ("countries", "cities", "companies", "universities", "films", "people")}


class Reservoir:
    """k items sampled uniformly (or by weight: Efraimidis-Spirakis) from a stream, O(k) memory."""

    def __init__(self, k: int, rng: random.Random):
        self.k, self.rng, self.heap, self.seen = k, rng, [], 0

    def offer(self, item, weight: float = 1.0) -> None:  # type: ignore[no-untyped-def]
        self.seen += 1
        key = self.rng.random() ** (1.0 / weight)
        entry = (key, self.seen, item)
        if len(self.heap) < self.k:
            heapq.heappush(self.heap, entry)
        elif key > self.heap[0][0]:
            heapq.heapreplace(self.heap, entry)

    def items(self) -> list:
        return [item for _, _, item in sorted(self.heap, key=lambda e: e[1])]  # in stream order


TEMPLATES = {
    "born_in": ["where was {} born", "in which city was {} born", "what city was {} born in"],
    "works_for": ["which company does {} work for", "who does {} work for", "what company employs {}"],
    "born_country": ["in which country was {} born", "what country was {} born in", "which country was {} born in"],
    "directed_by": ["who directed {}", "who is the director of {}", "who was {} directed by"],
    "city_country": ["which country is {} located in", "in what country is {}", "which country is {} in"],
}
HOPS = {"born_in": 1, "works_for": 1, "born_country": 2, "directed_by": 1, "city_country": 1}


class _Out:
    """Counts lines and stops at the budget; an entity is 'complete' when all its lines went out."""

    def __init__(self, f, budget: int):  # type: ignore[no-untyped-def]
        self.f, self.budget, self.lines = f, budget, 0

    @property
    def full(self) -> bool:
        return self.lines >= self.budget

    def entity(self, facts: list[tuple[str, str, str]]) -> bool:
        room = self.budget - self.lines
        take = facts[:room]
        if take:
            self.f.write("".join(f"{s}\t{r}\t{o}\n" for s, r, o in take))
            self.lines += len(take)
        return len(take) == len(facts)


def generate(out_dir: Path, facts: int, seed: int = 0, questions: int = 50) -> dict:
    """Write kg-LABEL.tsv, questions-LABEL.jsonl, questions-LABEL-typo.jsonl and kg-LABEL.meta.json
    under out_dir (each through a temporary file, renamed when whole); returns the meta."""
    out_dir.mkdir(parents=True, exist_ok=True)
    label = size_label(facts)
    paths = {"kg": out_dir / f"kg-{label}.tsv", "questions": out_dir / f"questions-{label}.jsonl",
             "typo": out_dir / f"questions-{label}-typo.jsonl", "meta": out_dir / f"kg-{label}.meta.json"}
    plan = Plan(facts)
    people = PeopleNames(int(plan.people * 1.1))
    rng = random.Random(seed)
    qrng = random.Random(f"questions:{seed}")
    pools = {kind: Reservoir(questions, random.Random(f"{kind}:{seed}")) for kind in TEMPLATES}
    person_rank = lambda r: _scramble(r, plan.people, 7)  # noqa: E731  (popularity rank → person index)
    country_of = lambda c: zipf_rank(_unit(seed, "city-country", c), plan.countries)  # noqa: E731

    tmp_kg = paths["kg"].with_suffix(f".tmp{os.getpid()}")
    with open(tmp_kg, "w", encoding="utf-8", newline="\n") as f:
        out = _Out(f, facts)
        # cities, each located in a country; the first city of each country is its capital
        capitals: set[int] = set()
        for c in range(plan.cities):
            country = country_of(c)
            rows = [(city_name(c), "located_in", country_name(country))]
            if country not in capitals:
                capitals.add(country)
                rows.append((country_name(country), "capital", city_name(c)))
            if out.entity(rows):
                pools["city_country"].offer((city_name(c), country_name(country)), weight=1.0 / (c + 1))
            if out.full:
                break
        for i in range(plan.companies):
            if out.full:
                break
            rows = [(company_name(i), "headquartered_in", city_name(zipf_rank(rng.random(), plan.cities))),
                    (company_name(i), "industry", rng.choice(INDUSTRIES))]
            if rng.random() < 0.7:
                rows.append((company_name(i), "founded_in", rng.choice(YEARS[50:])))
            if rng.random() < 0.5:
                rows.append((company_name(i), "founded_by", people.name(person_rank(zipf_rank(rng.random(), plan.people)))))
            out.entity(rows)
        for i in range(plan.universities):
            if out.full:
                break
            out.entity([(university_name(i), "located_in", city_name(i))])
        for i in range(plan.films):
            if out.full:
                break
            film = film_name(i)
            director = people.name(person_rank(zipf_rank(rng.random(), plan.people)))
            rows = [(film, "directed_by", director)]
            stars = {people.name(person_rank(zipf_rank(rng.random(), plan.people))) for _ in range(rng.randint(1, 4))}
            rows += [(film, "starred_actors", s) for s in sorted(stars)]
            rows += [(film, "release_year", rng.choice(YEARS[20:])), (film, "has_genre", rng.choice(GENRES))]
            if rng.random() < 0.5:
                rows.append((film, "set_in", city_name(zipf_rank(rng.random(), plan.cities))))
            if out.entity(rows):
                pools["directed_by"].offer((film, director))
        p = 0
        while not out.full:  # people until the budget is spent (past the plan if need be)
            name = people.name(p)
            city = zipf_rank(rng.random(), plan.cities)
            rows = [(name, "born_in", city_name(city))]
            if rng.random() < 0.7:
                rows.append((name, "lives_in", city_name(zipf_rank(rng.random(), plan.cities))))
            employer = company_name(zipf_rank(rng.random(), plan.companies)) if rng.random() < 0.75 else None
            if employer:
                rows.append((name, "works_for", employer))
            if rng.random() < 0.8:
                rows.append((name, "occupation", rng.choice(OCCUPATIONS)))
            if rng.random() < 0.35:
                rows.append((name, "educated_at", university_name(zipf_rank(rng.random(), plan.universities))))
            if rng.random() < 0.6:
                rows.append((name, "birth_year", rng.choice(YEARS[30:])))
            if rng.random() < 0.4:
                rows.append((name, "citizen_of", country_name(country_of(city))))
            if p % 2 == 1 and rng.random() < 0.25:
                rows.append((name, "spouse_of", people.name(p - 1)))
            friends = set()
            for _ in range(min(8, int(rng.expovariate(0.5)))):
                friend = person_rank(zipf_rank(rng.random(), plan.people))
                if friend != p:
                    friends.add(friend)
            rows += [(name, "knows", people.name(q)) for q in sorted(friends)]
            if out.entity(rows):
                pools["born_in"].offer((name, city_name(city)))
                pools["born_country"].offer((name, country_name(country_of(city))))
                if employer:
                    pools["works_for"].offer((name, employer))
            p += 1
        lines = out.lines
    os.replace(tmp_kg, paths["kg"])

    rows, typo_rows = [], []
    for kind, pool in pools.items():
        for n, (topic, answer) in enumerate(pool.items()):
            template = qrng.choice(TEMPLATES[kind])
            typo_rng = random.Random(f"typo:{seed}:{kind}:{n}")
            mention = typo(topic, typo_rng)
            for _ in range(20):  # a swap of two like letters ("Bitter") changes nothing: draw again
                if mention != topic:
                    break
                mention = typo(topic, typo_rng)
            base = {"answers": [answer], "topics": [topic], "kind": kind, "hops": HOPS[kind]}
            rows.append({"question": template.format(topic), **base})
            typo_rows.append({"question": template.format(mention), **base, "mention": mention})
    for key, data in (("questions", rows), ("typo", typo_rows)):
        tmp = paths[key].with_suffix(f".tmp{os.getpid()}")
        tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in data), encoding="utf-8")
        os.replace(tmp, paths[key])
    meta = {"version": VERSION, "seed": seed, "facts": facts, "lines": lines, "people": p, "plan": plan.to_json(),
            "questions_per_kind": questions, "questions": {k: len(pool.items()) for k, pool in pools.items()},
            "files": {k: v.name for k, v in paths.items() if k != "meta"}}
    paths["meta"].write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return meta


def ensure(out_dir: Path, facts: int, seed: int = 0, questions: int = 50) -> dict:
    """The files of (facts, seed, questions) under out_dir, generated unless their meta matches."""
    meta_path = out_dir / f"kg-{size_label(facts)}.meta.json"
    if meta_path.exists():
        meta = json.loads(meta_path.read_text())
        if (meta.get("version"), meta.get("seed"), meta.get("facts"), meta.get("questions_per_kind")) == (VERSION, seed, facts, questions) \
                and all((out_dir / name).exists() for name in meta["files"].values()):
            return meta
    return generate(out_dir, facts, seed, questions)


def parse_facts(text: str) -> list[int]:
    """'1e5,1e6,2.5e4' → [100000, 1000000, 25000]."""
    return [int(float(x)) for x in text.split(",") if x.strip()]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--facts", default="1e5", help="sizes, comma-separated (1e5,1e6,...)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--questions", type=int, default=50, help="per kind")
    args = ap.parse_args()
    for facts in parse_facts(args.facts):
        meta = generate(args.out, facts, args.seed, args.questions)
        print(json.dumps(meta), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
