"""Entity linking from raw questions against a real store (the demo KG in the embedded store)."""

from __future__ import annotations

from functools import partial

from conftest import all_label_pages, store_from_lines

from kgqa.retrieval.linking import link
from kgqa.retrieval.store_url import open_store
from kgqa.core.namespace import KGNamespace

NS = KGNamespace("demo")


def test_links_names_and_prefers_longer_and_name_like_spans(demo_kg):
    store, _ = demo_kg
    linked = link(store, "which films did William Dieterle direct")
    assert linked.iris == [NS.entity("William Dieterle")]
    assert "William Dieterle" in linked.candidates  # every matching span is kept in the trace
    assert link(store, "who directed kismet").iris == [NS.entity("Kismet")]  # lower-case: a normalised match
    two = link(store, "did Ronald Colman act in Kismet")
    assert two.iris == [NS.entity("Ronald Colman"), NS.entity("Kismet")]


def test_a_possessive_name_links_without_its_s(demo_kg):
    store, _ = demo_kg
    assert link(store, "who is Kismet's director").iris == [NS.entity("Kismet")]
    assert link(store, "who is kismet’s director").iris == [NS.entity("Kismet")]
    assert link(store, "William Dieterle's films").iris == [NS.entity("William Dieterle")]


def test_function_words_and_unknown_names_link_nothing(demo_kg):
    store, _ = demo_kg
    assert link(store, "what is the one that was in it").topics == []
    assert link(store, "who directed Zzyzx Qwerty").topics == []


def test_misspelled_names_link_through_the_fallbacks(demo_kg):
    store, _ = demo_kg
    fuzzy = link(store, "which films did William Dieterel direct")
    assert fuzzy.iris == [NS.entity("William Dieterle")]
    assert fuzzy.topics[0].match == "fuzzy" and 0.85 <= fuzzy.topics[0].score < 1.0
    assert "William Dieterel" in fuzzy.candidates  # the fallback's candidates are in the trace too
    # word order swapped: too far for string similarity, close in embedding space
    swapped = link(store, "which films did Dieterle William direct")
    assert swapped.iris == [NS.entity("William Dieterle")] and swapped.topics[0].match == "embedding"
    # a typo elsewhere in a long name: the word that still matches ("Greek", a language) loses to the
    # fuzzy match that covers it, but only because that match extends its span
    extended = link(store, "who directed Zorrba the Greek")
    assert extended.iris == [NS.entity("Zorba the Greek")] and extended.topics[0].match == "fuzzy"
    assert link(store, "which films are in Greek").iris == [NS.entity("Greek")]
    # an exact name is never second-guessed by the fallbacks
    assert link(store, "who directed Kismet").topics[0].match == "exact"
    assert link(store, "which films did William Dieterel direct", fallback=False).topics == []


def test_titles_made_of_function_words_long_titles_and_prose_phrases(tmp_path):
    store = open_store(store_from_lines(tmp_path, "titles", [
        "Are You Here|directed_by|Matthew Weiner",
        "All of Me|directed_by|Carl Reiner",
        "The Story|directed_by|Norman Lear",
        "As I Was Moving Ahead Occasionally I Saw Brief Glimpses of Beauty|directed_by|Jonas Mekas",
        "Running Time|directed_by|Josh Becker",
        "Bunraku|directed_by|Guy Moshe",
    ]), "titles")
    # written as a title inside the question, a span of function words is looked up
    assert [t.entity.label for t in link(store, "who are the actors in Are You Here", fallback=False).topics] == ["Are You Here"]
    assert [t.entity.label for t in link(store, "what type of film is All of Me", fallback=False).topics] == ["All of Me"]
    assert link(store, "are you here with all of me", fallback=False).topics == []  # the same words as prose are not
    # a lower-case phrase opening with a function word gives way to a name ...
    assert [t.entity.label for t in link(store, "what movie did Norman Lear write the story for", fallback=False).topics] == ["Norman Lear"]
    # ... and is still linked when it is all the question names
    assert [t.entity.label for t in link(store, "who directed the story", fallback=False).topics] == ["The Story"]
    # "the … of": a lower-case phrase the question asks of another is no title, however the question is cased
    assert [t.entity.label for t in link(store, "what is the running time of Bunraku", fallback=False).topics] == ["Bunraku"]
    assert [t.entity.label for t in link(store, "what is the running time of bunraku", fallback=False).topics] == ["Bunraku"]
    assert [t.entity.label for t in link(store, "who directed running time", fallback=False).topics] == ["Running Time"]
    title = "As I Was Moving Ahead Occasionally I Saw Brief Glimpses of Beauty"
    assert [t.entity.label for t in link(store, f"which person wrote the movie {title}", fallback=False).topics] == [title]


def test_misspelt_initials_and_short_words_link_only_where_one_name_is_nearest(tmp_path):
    store = open_store(store_from_lines(tmp_path, "people", [
        "William Y. Posousky|born_in|Varela",
        "William K. Posousky|born_in|Shiso",
        "Richard C. Drafourez|born_in|Varela",
        "Richard S. Drafourez|born_in|Shiso",
        "The Letter of Drerais|directed_by|Richard C. Drafourez",
        "Drerais|located_in|Ukaria",
    ]), "people")
    # "YY" matches no word of the KG and is too short for the stores' one-edit search: the longer
    # words find the candidates, and the doubled initial is nearer one of them than the other
    doubled = link(store, "where was William YY. Posousky born")
    assert [t.entity.label for t in doubled.topics] == ["William Y. Posousky"] and doubled.topics[0].match == "fuzzy"
    # a wrong initial is one letter from every other initial: no name is nearest, none is chosen
    # (nor by the embedding fallback), and the candidates stay in the trace
    wrong = link(store, "where was Richard z. Drafourez born")
    assert wrong.topics == []
    assert {hit.entity.label for hit in wrong.candidates["Richard z. Drafourez"]} == {"Richard C. Drafourez", "Richard S. Drafourez"}
    # a three-letter word one edit off (difflib's ratio only 0.67) still extends the city's match into the title
    assert [t.entity.label for t in link(store, "who directed Thj Letter of Drerais").topics] == ["The Letter of Drerais"]


def test_label_pages_list_each_pair_once_whatever_the_page_size():
    """An entity with an id label and an explicit alias: every (entity, label) pair exactly once, in
    order, for any page size (the fuzzy index is built from these pages)."""
    from kgqa.sparql.embedded import EmbeddedWriter
    from kgqa.core.store import SourceFact, SourceNode

    ns = KGNamespace("pages")
    writer = EmbeddedWriter.open(None, "pages")
    state = writer.load_state("t")
    facts = [SourceFact(SourceNode(ns.entity(f"m{k}"), f"m{k}"), SourceNode(ns.relation("r"), "r"), SourceNode(ns.entity(f"p{k % 3}"), f"p{k % 3}"))
             for k in range(7)]
    writer.write_batch(facts, state, len(facts))
    writer.add_labels([(ns.entity("m1"), "Movie One"), (ns.entity("p2"), "Person Two")])
    writer.finish(state)
    store = writer.reader()
    whole = all_label_pages(store, 1000)
    assert whole == sorted(set(whole)) and len(whole) == 7 + 3 + 2
    assert (ns.entity("m1"), "Movie One") in whole and (ns.entity("m1"), "m1") in whole
    for size in (1, 2, 3, 5):
        assert all_label_pages(store, size) == whole, size


def test_normalised_labels_fold_case_accents_and_punctuation_on_both_paths():
    import re
    import string
    import unicodedata

    from kgqa.core.labels import normalise_label

    assert normalise_label("The Wizard of Oz!") == "the wizard of oz"
    assert normalise_label("Michèle  Morgan_(actress)") == "michele morgan actress"
    assert normalise_label("ÉMILE ZOLA") == normalise_label("emile zola") == "emile zola"
    assert normalise_label("Straße") == "strasse"  # casefold, not lower

    def unicode_path(text: str) -> str:  # the full path, which the ASCII shortcut must agree with
        no_marks = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
        return " ".join(re.sub(r"[^\w]+", " ", no_marks.casefold()).replace("_", " ").split())

    for ch in string.printable:
        text = f"Ab{ch}c D"
        assert normalise_label(text) == unicode_path(text), repr(text)


def _topic_labels(store, question: str) -> list[str]:  # type: ignore[no-untyped-def]
    return [t.entity.label for t in link(store, question).topics]


def test_a_misspelling_reads_as_its_likeliest_slip(tmp_path):
    store = open_store(store_from_lines(tmp_path, "slips", [
        "Anna Thaushoun|born_in|Thaushoun",
        "Anna Thushoun|born_in|Thushoun",
        "Gigrox|located_in|Ukaria",
        "Gikrox|located_in|Ukaria",
        "Maria P. Zauruberg|born_in|Maira",
        "Maria P. Zautuberg|born_in|Gigrox",
        "Broken Lantern|directed_by|Anna Thushoun",
        "Broken Lantern LXXXIV|directed_by|Anna Thaushoun",
        "Broken Lantern LXXIV|directed_by|Anna Thushoun",
        "Broken Lantern XXXIV|directed_by|Anna Thushoun",
    ]), "slips")
    labels = partial(_topic_labels, store)
    # two letters swapped is likelier than a stray "a" (which must also pick its letter)
    assert labels("which country is Tahushoun in") == ["Thaushoun"]
    # ... and than a letter replaced: the misspelt number extends the title's match as written
    assert labels("who directed Broken Lantern XLXXIV") == ["Broken Lantern LXXXIV"]
    # a letter dropped from either of two names: as likely, and neither is chosen
    tied = link(store, "which country is Girox in")
    assert tied.topics == [] and {hit.entity.label for hit in tied.candidates["Girox"]} == {"Gigrox", "Gikrox"}
    # a name too near two labels is not read as a shorter name inside it (the city "Maira", one swap from "Maria")
    assert labels("where was Maria P. Zauuberg born") == []


def test_a_misspelt_title_made_of_two_names_and_a_misspelt_suffix_reach_the_label_search(tmp_path):
    store = open_store(store_from_lines(tmp_path, "titles2", [
        "Return to Theseis|directed_by|David Gapastad Jr.",
        "Retun|located_in|Ukaria",
        "Theseis|located_in|Ukaria",
        "David Gapastad|works_for|Green Motors",
        "David Gapastad Jr.|works_for|Blue Motors",
    ]), "titles2")
    labels = partial(_topic_labels, store)
    # two names matched as written with only a function word between them: one misspelt title
    assert labels("who was Retun to Theseis directed by") == ["Return to Theseis"]
    # ... while two names apart stay two
    assert labels("is Retun near Theseis") == ["Retun", "Theseis"]
    # a word with a capital inside ("rJ.") is a name left to find
    assert labels("which company does David Gapastad rJ. work for") == ["David Gapastad Jr."]
    assert labels("which company does David Gapastad work for") == ["David Gapastad"]


def test_a_name_word_that_lost_its_capital_reaches_the_label_search(tmp_path, monkeypatch):
    store = open_store(store_from_lines(tmp_path, "films", [
        "Vupau|located_in|Konia",
        "Vupau Nights|directed_by|Mia Brown",
        "The Harvest of Vupau|directed_by|Mia Brown",
    ]), "films")
    labels = partial(_topic_labels, store)
    # the film "Vupau Nights" with its N lost: "ights" is no English word, so the label search runs beside the city "Vupau"
    assert labels("who directed Vupau ights") == ["Vupau Nights"]
    assert labels("which country is Vupau in") == ["Vupau"]
    assert labels("who directed The parvest of Vupau") == ["The Harvest of Vupau"]  # not beside it: a function word between
    # a name matched as written beside English words ("headquartered") never reaches the label search
    searched = []
    search = store.search_labels
    monkeypatch.setattr(store, "search_labels", lambda *args, **kwargs: searched.append(args) or search(*args, **kwargs))
    assert labels("which country is Vupau headquartered in") == ["Vupau"]
    assert searched == []
    assert labels("who directed Vupau ights") == ["Vupau Nights"] and searched
