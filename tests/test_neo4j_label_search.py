"""Entity-label search through Neo4j's full-text (Lucene) index (`Neo4jStore.search_labels`): the
linker's fallbacks find a misspelt name's few candidates without reading the KG's labels."""

from __future__ import annotations

import neo4j
import pytest
from launchers import Neo4jServer

from kgqa import open_store, open_writer
from kgqa.core.errors import NoLabelIndex
from kgqa.core.namespace import KGNamespace
from kgqa.cypher import store as cypher_store
from kgqa.cypher.bulk import bulk_load
from kgqa.cypher.queries import cypher
from kgqa.cypher.store import lucene_query
from kgqa.loaders import load_file

NS, TWIN = KGNamespace("names"), KGNamespace("names_twin")
FACTS = [
    "Kismet|directed_by|William Dieterle",
    "The Hunchback of Notre Dame|directed_by|William Dieterle",
    "Fog Over Frisco|has_tags|william dieterle",
    "William Dieterle Retrospective Festival|honours|William Dieterle",
    "Kismet|written_by|Edward Knoblock",
    "m.0abc|starred_in|Kismet",
]
ALIASES = ["m.0abc\tMarlene Dietrich", "m.0abc\tMarie Magdalene Dietrich"]


@pytest.fixture(scope="module")
def names_kg(neo4j_server, tmp_path_factory):
    """KG `names` (facts and a labels file), and KG `names_twin` in the same database with the same
    labels and one of its own."""
    folder = tmp_path_factory.mktemp("names")
    (folder / "kb.txt").write_text("\n".join(FACTS) + "\n", encoding="utf-8")
    (folder / "aliases.tsv").write_text("\n".join(ALIASES) + "\n", encoding="utf-8")
    (folder / "twin.txt").write_text("\n".join(FACTS + ["Wilhelm Dieterle|born_in|Ludwigshafen"]) + "\n", encoding="utf-8")
    for kg, files in [("names", [("kb.txt", None), ("aliases.tsv", "labels")]), ("names_twin", [("twin.txt", None), ("aliases.tsv", "labels")])]:
        writer = open_writer(neo4j_server.url, kg)
        for name, fmt in files:
            load_file(writer, folder / name, fmt)
        writer.close()
    store = open_store(neo4j_server.url, "names")
    yield store
    store.close()


def iris(pairs: list[tuple[str, str]]) -> list[str]:
    return [iri for iri, _ in pairs]


def test_a_misspelt_name_finds_its_entity_in_one_query(names_kg):
    before = names_kg.round_trips
    found = names_kg.search_labels(["William Dieterel", "Kismit", "Edward Knoblok", "Zzyzx Qwerty"], limit=10)
    assert names_kg.round_trips == before + 1
    assert NS.entity("William Dieterle") in iris(found["William Dieterel"])
    assert (NS.entity("William Dieterle"), "William Dieterle") in found["William Dieterel"]
    assert iris(found["Kismit"]) == [NS.entity("Kismet")]
    assert iris(found["Edward Knoblok"]) == [NS.entity("Edward Knoblock")]
    assert found["Zzyzx Qwerty"] == []


def test_every_word_must_match_and_labels_of_the_texts_length_come_first(names_kg):
    found = names_kg.search_labels(["Wiliam Dieterle"], limit=10)["Wiliam Dieterle"]
    # both spellings of the name (key length 16) before the 39-character festival; "Wilhelm" is another KG's
    assert set(iris(found[:2])) == {NS.entity("William Dieterle"), NS.entity("william dieterle")}
    assert iris(found[2:]) == [NS.entity("William Dieterle Retrospective Festival")]
    assert names_kg.search_labels(["William Dieterle"], limit=1)["William Dieterle"][0][1].casefold() == "william dieterle"
    assert names_kg.search_labels(["William Knoblock"], limit=10)["William Knoblock"] == []  # AND: no label has both


def test_a_misspelt_alias_finds_the_entity_it_names(names_kg):
    found = names_kg.search_labels(["Marlene Dietrihc", "marlen dietrich"], limit=10)
    for text in found:
        assert found[text] == [(NS.entity("m.0abc"), "Marlene Dietrich")], text


def test_another_kg_in_the_same_database_is_not_returned(names_kg):
    found = names_kg.search_labels(["William Dieterle", "Wilhelm Dieterle", "Marlene Dietrich"], any_word=True, limit=50)
    every = [iri for pairs in found.values() for iri in iris(pairs)]
    assert every and all(iri.startswith(NS.entity("")) for iri in every)
    assert TWIN.entity("Wilhelm Dieterle") not in every and NS.entity("William Dieterle") in every
    twin = open_store(names_kg.target.uri, "names_twin")
    try:
        assert iris(twin.search_labels(["Wilhelm Dieterle"], limit=5)["Wilhelm Dieterle"]) == [TWIN.entity("Wilhelm Dieterle")]
    finally:
        twin.close()


def test_any_word_finds_the_words_in_another_order_and_any_of_them(names_kg):
    found = names_kg.search_labels(["Dieterle William", "Kismet Frisco", "Dieterle Zzyzx"], any_word=True, limit=10)
    assert NS.entity("William Dieterle") in iris(found["Dieterle William"])
    assert {NS.entity("Kismet"), NS.entity("Fog Over Frisco")} <= set(iris(found["Kismet Frisco"]))
    assert NS.entity("William Dieterle") in iris(found["Dieterle Zzyzx"])
    assert names_kg.search_labels(["Dieterle Zzyzx"], limit=10)["Dieterle Zzyzx"] == []  # every word, without any_word


def test_texts_with_lucene_syntax_are_words_and_empty_ones_ask_nothing(names_kg):
    hostile = ['kismet~2 OR title:*', 'william AND NOT "x" ||', "(dieterle)^9 [a TO z]", "\\u0027 kismet/"]
    found = names_kg.search_labels(hostile, limit=10)
    assert iris(found[hostile[0]]) == []  # kismet, 2, or, title: "2" is in no label
    assert iris(found[hostile[2]]) == [] and iris(found[hostile[3]]) == []  # "a", "to", "z", "u0027" are in none
    assert found[hostile[1]] == [] and set(found) == set(hostile)
    before = names_kg.round_trips
    assert names_kg.search_labels(["", " !? ", "--"]) == {"": [], " !? ": [], "--": []}
    assert names_kg.search_labels(["Kismet"], limit=0) == {"Kismet": []}
    assert names_kg.round_trips == before


def test_the_lucene_query_is_built_from_plain_words_only():
    assert lucene_query(["william", "dieterel"]) == "william~1 AND dieterel~1"
    assert lucene_query(["dieterle", "william"], any_word=True) == "dieterle~1 OR william~1"
    assert lucene_query(["of", "17", "oz", "the"]) == "of AND 17 AND oz AND the~1"
    assert lucene_query(["münchen", "東京"]) == "münchen~1 AND 東京"
    for bad in ["a*", "x~2", "title:x", "a b", "(a)", "a+b", "-a", '"a"', "a\\", "a/b", "a^2", "[a", "{a}", "!a", "a&&b", "a||b",
                "a?", "", "AND", "OR", "NOT", "TO", "a_b", "a\nb"]:
        with pytest.raises(ValueError):
            lucene_query(["kismet", bad])
    with pytest.raises(ValueError):
        lucene_query([])


def test_a_kg_without_the_index_says_how_to_build_it(names_kg, monkeypatch):
    """A KG loaded by an older kgqa has no full-text index: Neo4j's own error for a missing index
    (queried under another name here, so the shared server's index stays) becomes NoLabelIndex."""
    text = cypher("search_labels").replace("'kgqa_label_keys'", "'kgqa_no_such_index'")
    monkeypatch.setattr(cypher_store, "cypher", lambda name: text)
    with pytest.raises(NoLabelIndex, match=r"kgqa load` of the same files with --kg names --store bolt://"):
        names_kg.search_labels(["Kismet"])


@pytest.mark.slow
def test_a_bulk_imported_kg_gets_the_index_from_its_first_bolt_load(tmp_path):
    """`kgqa load --bulk` cannot create indexes: the store says how to get one, and the Bolt load of
    the same files creates it, ONLINE when the loader returns."""
    files = [tmp_path / "kb.txt", tmp_path / "aliases.tsv"]
    files[0].write_text("\n".join(FACTS) + "\n", encoding="utf-8")
    files[1].write_text("\n".join(ALIASES) + "\n", encoding="utf-8")
    home = tmp_path / "neo4j" / "home"
    home.mkdir(parents=True)
    bulk_load(home, "names", files, [None, "labels"])
    with Neo4jServer(tmp_path / "neo4j") as server:
        store = open_store(server.url, "names")
        with pytest.raises(NoLabelIndex, match="kgqa load` of the same files"):
            store.search_labels(["William Dieterel"])
        writer = open_writer(server.url, "names")
        assert all(load_file(writer, path, fmt).already_complete for path, fmt in zip(files, [None, "labels"]))
        writer.close()
        with neo4j.GraphDatabase.driver(server.url, auth=None) as driver:
            states = driver.execute_query("SHOW INDEXES YIELD name, state WHERE name = 'kgqa_label_keys' RETURN state").records
        assert [r["state"] for r in states] == ["ONLINE"]
        found = store.search_labels(["William Dieterel", "Marlene Dietrihc"])
        assert NS.entity("William Dieterle") in iris(found["William Dieterel"])
        assert found["Marlene Dietrihc"] == [(NS.entity("m.0abc"), "Marlene Dietrich")]
        store.close()


def test_the_opt_in_vector_index_links_a_name_that_shares_no_word_with_its_label(neo4j_server, names_kg, tmp_path):
    """"Spiderman" is no word of "Spider-Man", nor one letter off one: the full-text index has no
    candidate and the name is not linked. `kgqa index --vectors` puts every label's embedding in
    Neo4j's vector index; the embedding fallback then finds it (cosine ≥ 0.9). A rerun embeds nothing
    again, and a KG of the same database without vectors gets no candidates from another KG's."""
    import subprocess
    import sys

    from kgqa.retrieval.linking import link

    ns = KGNamespace("vectors")
    (tmp_path / "kb.txt").write_text("Spider-Man|directed_by|Sam Raimi\nThe Evil Dead|directed_by|Sam Raimi\n", encoding="utf-8")
    writer = open_writer(neo4j_server.url, "vectors")
    load_file(writer, tmp_path / "kb.txt")
    writer.close()
    question = "who directed Spiderman"
    from kgqa.retrieval.text import TextEncoder

    spiderman = TextEncoder().encode(["Spiderman"])
    store = open_store(neo4j_server.url, "vectors")
    assert store.nearest_labels(["Spiderman"], spiderman) == {}  # no vector index in the database yet
    assert link(store, question).iris == []
    store.close()

    def index_vectors() -> str:
        done = subprocess.run([sys.executable, "-m", "kgqa", "index", "--vectors", "--store", neo4j_server.url, "--kg", "vectors"],
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert "3 labelled entities, 3 label vectors written now" in index_vectors()
    assert "3 labelled entities, 0 label vectors written now" in index_vectors()
    store = open_store(neo4j_server.url, "vectors")
    linking = link(store, question)
    assert linking.iris == [ns.entity("Spider-Man")] and linking.topics[0].match == "embedding"
    store.close()
    assert names_kg.nearest_labels(["Spiderman"], spiderman) == {"Spiderman": []}
