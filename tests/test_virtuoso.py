"""Virtuoso's two silent traps, against a real Virtuoso configured to spring them: a result cut at
ResultSetMaxRows (HTTP 200, X-SPARQL-MaxRows), and partial results when a query's time runs out
(HTTP 200, X-SQL-State: S1TAT). Both must raise, never pass as complete."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

from kgqa import open_writer, retrieve
from kgqa.core.errors import NoLabelIndex, StoreError
from kgqa.loaders import load_file
from kgqa.core.namespace import KGNamespace
from kgqa.sparql import virtuoso, virtuoso_app
from kgqa.sparql.endpoint import (
    APP_RECHECK_S, EndpointError, SparqlEndpointStore, contains_expression, label_keys_text, label_words_text, word_keys_text,
    words_expression,
)
from kgqa.sparql.embedded import EmbeddedWriter
from kgqa.sparql.virtuoso import Isql, VirtuosoWriter
from kgqa.sparql.writer import RdfWriter
from kgqa.core.types import Edge
from conftest import DEMO_KG
from launchers import VirtuosoServer

SLOW = "SELECT ?a ?d WHERE { ?a ?b ?c . ?d ?e ?f . FILTER(STRLEN(STR(?c)) + STRLEN(STR(?f)) = 7 && ?a != ?d) } LIMIT 90"


@pytest.fixture(scope="module")
def strict_virtuoso(tmp_path_factory):
    with VirtuosoServer(tmp_path_factory.mktemp("virtuoso-strict"), max_rows=100) as server:
        writer = open_writer(server.writer_url, "demo")
        load_file(writer, DEMO_KG)
        writer.close()
        yield server


def test_row_limit_truncation_raises(strict_virtuoso):
    store = SparqlEndpointStore.connect(strict_virtuoso.sparql_url)
    assert len(store.relations()) == 9  # under the limit: fine
    assert store.counts().facts == 12283
    assert len(store.neighbours("urn:kgqa:kg:demo:e:English", "urn:kgqa:kg:demo:r:in_language", inverse=True)) == 47
    with pytest.raises(EndpointError, match="X-SPARQL-MaxRows"):
        store.neighbours("urn:kgqa:kg:demo:e:Drama", "urn:kgqa:kg:demo:r:has_genre", inverse=True)  # 370 rows, cut at 100


def test_labels_a_capped_endpoint_would_cut_are_read_in_pages(strict_virtuoso):
    """The labels' one streamed query would pass ResultSetMaxRows (100 here): Virtuoso says so in the
    headers (X-SPARQL-MaxRows) before any row, and the store reads the sorted pages instead, each
    within the cap: every pair, none twice."""
    embedded = EmbeddedWriter.open(None, "demo")
    load_file(embedded, DEMO_KG)
    store = SparqlEndpointStore.connect(strict_virtuoso.sparql_url, "demo")
    before = store.round_trips
    pairs = list(store.label_pairs(page=90))
    assert len(pairs) == len(set(pairs)) and sorted(pairs) == sorted(embedded.reader().label_pairs())
    assert store.round_trips - before == 1 + len(pairs) // 90 + 1  # the query that was cut, then the pages


def test_partial_result_on_timeout_raises(strict_virtuoso):
    store = SparqlEndpointStore.connect(strict_virtuoso.sparql_url, server_timeout_ms=500)
    # Virtuoso usually answers with partial rows marked S1TAT; once in a CI run (2026-11-26) it
    # cancelled the statement instead (HTTP 500, SR203). Either way the caller must get an error,
    # never the rows that happened to be found in time.
    with pytest.raises(EndpointError, match="S1TAT|SR203"):
        store._execute("slow", SLOW)


def test_the_server_stops_a_query_before_its_client_gives_up(strict_virtuoso):
    """With no server_timeout_ms, Virtuoso is told the client's timeout less 3 s: the slow query ends
    on the server (its partial-results error S1TAT or, as in CI on 2026-11-28, its cancel SR203), not
    with the client leaving it running ("did not answer within 5s")."""
    store = SparqlEndpointStore.connect(strict_virtuoso.sparql_url, timeout=5)
    with pytest.raises(EndpointError, match="S1TAT|SR203") as raised:
        store._execute("slow", SLOW)
    assert "did not answer within" not in str(raised.value)
    assert len(store.relations()) == 9  # the server is free again


# --- kgqa's APP procedure (sparql/virtuoso_app.sql): a whole retrieval in one SPARQL round trip ---

DEMO = KGNamespace("demo").entity
# HUB is not in the KG: a topic the store has never seen has no edges, and its label is its IRI's.
# Drama's has_genre⁻¹ group (370) is over λ and |S_{h-1}|: probed with the entities reached before.
CASES = [([DEMO("Kismet")], 1, 10), ([DEMO("Kismet")], 2, 100), ([DEMO("HUB"), DEMO("William Dieterle"), DEMO("Drama")], 2, 10), ([DEMO("William Dieterle")], 3, 5)]


def _hop_by_hop(url: str) -> SparqlEndpointStore:
    store = SparqlEndpointStore.connect(url)
    store.has_app_procedure = False
    return store


def test_a_retrieval_is_one_call_of_the_app_procedure_with_the_hop_by_hop_result(strict_virtuoso):
    store, reference = SparqlEndpointStore.connect(strict_virtuoso.sparql_url), _hop_by_hop(strict_virtuoso.sparql_url)
    for topics, hops, lam in CASES:
        got, want = retrieve(store, topics, hops, lam), retrieve(reference, topics, hops, lam)
        assert got.num_edges == want.num_edges > 0 and got.edge_set() == want.edge_set(), (topics, hops, lam)
        assert (got.nodes, got.node_labels, got.relation_labels) == (want.nodes, want.node_labels, want.relation_labels)
        assert got.trace.round_trips == 1 and store.has_app_procedure
        assert want.trace.round_trips >= 2  # hop by hop: group sizes of hop 1, then a query per hop


def test_a_subgraph_too_large_for_one_answer_is_retrieved_hop_by_hop(strict_virtuoso):
    store, reference = SparqlEndpointStore.connect(strict_virtuoso.sparql_url), _hop_by_hop(strict_virtuoso.sparql_url)
    store.app_max_bytes = 300
    topics, hops, lam = [DEMO("Kismet")], 2, 100
    got, want = retrieve(store, topics, hops, lam), retrieve(reference, topics, hops, lam)
    assert got.num_edges == want.num_edges > 20 and got.edge_set() == want.edge_set()
    assert got.node_labels == want.node_labels
    assert got.trace.round_trips == 1 + hops + 1 and store.has_app_procedure  # the call, then hop by hop


def test_the_app_procedure_stops_at_the_time_limit_with_an_error(strict_virtuoso):
    store = SparqlEndpointStore.connect(strict_virtuoso.sparql_url, server_timeout_ms=1)
    everything = [DEMO(name) for name in ("HUB", "Drama", "English", "Comedy", "Kismet")]
    with pytest.raises(EndpointError, match="stopped the retrieval at its time limit"):
        retrieve(store, everything, 3, 10_000)


def test_without_the_app_procedure_the_reader_goes_hop_by_hop(strict_virtuoso, caplog):
    store, reference = SparqlEndpointStore.connect(strict_virtuoso.sparql_url), _hop_by_hop(strict_virtuoso.sparql_url)
    strict_virtuoso.isql("drop procedure DB.DBA.KGQA_APP_1")
    try:
        with caplog.at_level(logging.WARNING, logger="kgqa.sparql.endpoint"):
            got = retrieve(store, [DEMO("Kismet")], 2, 100)
        assert store.has_app_procedure is False and "procedure is missing" in caplog.text
        want = retrieve(reference, [DEMO("Kismet")], 2, 100)
        assert got.edge_set() == want.edge_set() and got.node_labels == want.node_labels
        assert retrieve(store, [DEMO("Kismet")], 2, 100).trace.round_trips == 3  # not asked again yet
        store._app_missing_at -= APP_RECHECK_S  # the recheck is due: asked, still missing, not warned again
        caplog.clear()
        assert retrieve(store, [DEMO("Kismet")], 2, 100).trace.round_trips == 1 + 3
        assert store.has_app_procedure is False and "procedure is missing" not in caplog.text
    finally:
        strict_virtuoso.isql(*virtuoso_app.procedure_statements())
    assert retrieve(SparqlEndpointStore.connect(strict_virtuoso.sparql_url), [DEMO("Kismet")], 2, 100).trace.round_trips == 1
    assert retrieve(store, [DEMO("Kismet")], 2, 100).trace.round_trips == 3  # installed, but not due yet
    store._app_missing_at -= APP_RECHECK_S  # a long-running reader finds the procedure a load installed
    assert retrieve(store, [DEMO("Kismet")], 2, 100).trace.round_trips == 1 and store.has_app_procedure


def test_the_app_procedure_answer_is_read_strictly():
    topic = "urn:x:a"
    whole = virtuoso_app.parse("kgqa-app 1\nN\turn:x:a\nN\turn:x:r\nN\turn:x:b\nE\t1\t0\t1\t1\t2\nL\t2\tb\\\\c\\td\\ne\nP\t0\tA\n", [topic], "test")
    assert whole is not None and whole.edges == [(Edge("urn:x:a", "urn:x:r", True, "urn:x:b"), 1)]
    assert whole.labels == {"urn:x:a": "A", "urn:x:b": "b\\c\td\ne", "urn:x:r": "r"}
    assert virtuoso_app.parse("kgqa-app 1 too-large", [topic], "test") is None
    with pytest.raises(StoreError, match="not 'kgqa-app 1'"):
        virtuoso_app.parse("kgqa-app 2\n", [topic], "test")
    with pytest.raises(StoreError, match="cannot read"):
        virtuoso_app.parse("kgqa-app 1\nE\t1\t0\t1\t0\t2\n", [topic], "test")  # numbers before their N lines
    with pytest.raises(ValueError, match="forbidden character"):
        virtuoso_app.topic_list(["urn:x:a urn:x:b"])  # a space would split one topic in two


def test_a_load_goes_on_when_the_app_procedure_cannot_be_installed(strict_virtuoso, monkeypatch, caplog, tmp_path):
    """Virtuoso refuses to install the procedure (here: text it cannot compile; in life, a loading
    user who may not create procedures): the load still completes, with a warning."""
    monkeypatch.setattr(virtuoso_app, "procedure_statements", lambda: ["create procedure DB.DBA.KGQA_APP_BROKEN () { return 1 +; }"])
    kb = tmp_path / "tiny.txt"
    kb.write_text("a|r|b\nb|r|c\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="kgqa.sparql.virtuoso"):
        writer = open_writer(strict_virtuoso.writer_url, "tiny")
        report = load_file(writer, kb)
        writer.close()
    assert report.facts_in_store == 2 and "APP procedure was not installed" in caplog.text


def test_the_app_procedure_is_created_again_once_the_loads_facts_and_counts_are_in(strict_virtuoso, monkeypatch, tmp_path):
    """Virtuoso plans a procedure's queries when it is created, from the data there then: created only
    when the writer opens, before a first load, its plans are made for empty graphs. So a load creates
    it again after its facts and counts (and still at open, for a load that finds its file loaded)."""
    ran: list[str] = []
    real_run = Isql.run

    def recording_run(self: Isql, *statements: str, **limits: float) -> str:
        ran.extend(statements)
        return real_run(self, *statements, **limits)

    monkeypatch.setattr(Isql, "run", recording_run)
    kb = tmp_path / "tiny.txt"
    kb.write_text("a|r|b\nb|r|c\n", encoding="utf-8")
    writer = open_writer(strict_virtuoso.writer_url, "tinyplans")
    load_file(writer, kb)
    writer.close()
    creates = [i for i, text in enumerate(ran) if text.startswith("create procedure DB.DBA.KGQA_APP_1 (")]
    bulk_loads = [i for i, text in enumerate(ran) if text == "rdf_loader_run()"]
    recounts = [i for i, text in enumerate(ran) if text.startswith("DB.DBA.KGQA_COUNTS_REL (")]
    assert len(creates) == 2 and bulk_loads and recounts
    assert creates[0] < bulk_loads[0] and creates[1] > max(bulk_loads + recounts)
    tiny = KGNamespace("tinyplans")
    store = SparqlEndpointStore.connect(strict_virtuoso.sparql_url, "tinyplans")
    reference = SparqlEndpointStore.connect(strict_virtuoso.sparql_url, "tinyplans")
    reference.has_app_procedure = False
    got, want = retrieve(store, [tiny.entity("a")], 2, 10), retrieve(reference, [tiny.entity("a")], 2, 10)
    assert store.has_app_procedure and got.trace.round_trips == 1
    a, r, b, c = tiny.entity("a"), tiny.relation("r"), tiny.entity("b"), tiny.entity("c")
    assert {(a, r, False, b, 1), (b, r, False, c, 2)} <= got.edge_set() == want.edge_set()


def test_the_recount_is_one_isql_call_per_relation_whatever_its_name(strict_virtuoso, caplog, tmp_path):
    """One call per relation (no closing call for the whole recount: at 50M facts one passed the isql limit), each logged; a
    relation is named to SQL by its IRI_ID number, so its IRI's characters (%-escapes, a quote) do
    not matter."""
    kb = tmp_path / "odd.txt"
    kb.write_text("a|born in|b\na|it's|c\na|it's|d\ne|it's|c\n", encoding="utf-8")
    with caplog.at_level(logging.INFO, logger="kgqa.sparql.virtuoso"):
        writer = open_writer(strict_virtuoso.writer_url, "oddrels")
        load_file(writer, kb)
        writer.close()
    store = SparqlEndpointStore.connect(strict_virtuoso.sparql_url, "oddrels")
    assert {r.label: r.facts for r in store.relations()} == {"born in": 1, "it's": 3}
    assert sum("fan-out counts of KG oddrels, relation" in m for m in caplog.messages) == 2
    odd = KGNamespace("oddrels")
    stored = {}
    for graph, inverse in ((odd.fanout_graph, False), (odd.fanin_graph, True)):
        for row in store._execute("stored_counts", f"SELECT ?e ?r ?n WHERE {{ GRAPH <{graph}> {{ ?e ?r ?n }} }}"):
            stored[(row["e"], row["r"], inverse)] = int(row["n"])
    a, c, e = odd.entity("a"), odd.entity("c"), odd.entity("e")
    assert stored[(a, odd.relation("it's"), False)] == 2 and stored[(c, odd.relation("it's"), True)] == 2
    assert stored[(a, odd.relation("born in"), False)] == 1 and stored[(e, odd.relation("it's"), False)] == 1 and len(stored) == 6


def test_kgqa_load_prints_the_writers_closing_stages(strict_virtuoso, tmp_path):
    """What a load does after its last batch (the index update, the recount per relation) runs for
    many minutes at 50M facts: `kgqa load` says each step on stderr."""
    kb = tmp_path / "stages.txt"
    kb.write_text("a|r|b\nb|s|c\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "kgqa", "load", str(kb), "--kg", "stages", "--store", strict_virtuoso.writer_url],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "free-text index brought up to date in" in done.stderr
    assert done.stderr.count("fan-out counts of KG stages, relation") == 2


# --- entity-label search through Virtuoso's free-text index (bif:contains) ---

NAMES, TWIN, OLDER, WILDCARDS = KGNamespace("names"), KGNamespace("names_twin"), KGNamespace("older"), KGNamespace("names_wildcards")
LABEL_KEYED = KGNamespace("names_label_keys")
NAME_FACTS = [
    "Fog Over Frisco|has_tags|barbary coast",  # a label that is its own key first (not in the demo KG)
    "Kismet|directed_by|William Dieterle",
    "The Hunchback of Notre Dame|directed_by|William Dieterle",
    "Fog Over Frisco|has_tags|william dieterle",
    "William Dieterle Retrospective Festival|honours|William Dieterle",
    "Kismet|written_by|Edward Knoblock",
    "Ran|directed_by|Akira Kurosawa",
    "m.0abc|starred_in|Kismet",
]
NAME_ALIASES = ["m.0abc\tMarlene Dietrich"]


def _search_pairs(pairs: list[tuple[str, str]]) -> list[str]:
    return [iri for iri, _ in pairs]


@pytest.fixture(scope="module")
def names_kg(strict_virtuoso, tmp_path_factory):
    """KG `names` (facts and a labels file) and KG `names_twin` (the same and one name of its own),
    loaded while Virtuoso's default rule that indexes every literal is off: only kgqa's rule indexes
    their labels. The rule comes back at the end (it indexes everything again). Also KG
    `names_wildcards` as a kgqa before deletion keys loaded it, and `names_label_keys` as the kgqa
    of 2026-11 did (deletion keys per label)."""
    folder = tmp_path_factory.mktemp("names")
    (folder / "kb.txt").write_text("\n".join(NAME_FACTS) + "\n", encoding="utf-8")
    (folder / "aliases.tsv").write_text("\n".join(NAME_ALIASES) + "\n", encoding="utf-8")
    (folder / "twin.txt").write_text("\n".join(NAME_FACTS + ["Wilhelm Dieterle|born_in|Ludwigshafen"]) + "\n", encoding="utf-8")
    strict_virtuoso.isql("DB.DBA.RDF_OBJ_FT_RULE_DEL (null, null, 'ALL')")
    try:
        for kg, files in [("names", [("kb.txt", None), ("aliases.tsv", "labels")]), ("names_twin", [("twin.txt", None)])]:
            writer = open_writer(strict_virtuoso.writer_url, kg)
            for name, fmt in files:
                load_file(writer, folder / name, fmt)
            writer.close()
        with pytest.MonkeyPatch.context() as patch:  # as a kgqa before deletion keys loaded it
            patch.setattr(VirtuosoWriter, "_key_quads", RdfWriter._key_quads)
            patch.setattr(virtuoso, "WORDS_INDEX_MARK", virtuoso.TEXT_INDEX_MARK)
            writer = open_writer(strict_virtuoso.writer_url, "names_wildcards")
            load_file(writer, folder / "kb.txt")
            writer.close()
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(virtuoso, "WORDS_INDEX_MARK", virtuoso.KEYS_INDEX_MARK)
            writer = open_writer(strict_virtuoso.writer_url, "names_label_keys")
            load_file(writer, folder / "kb.txt")
            writer.close()
        yield SparqlEndpointStore.connect(strict_virtuoso.sparql_url, "names")
    finally:
        strict_virtuoso.isql("DB.DBA.RDF_OBJ_FT_RULE_ADD (null, null, 'ALL')")


def _expressions(monkeypatch) -> list[str]:  # type: ignore[no-untyped-def]
    """The free-text expressions of the label searches sent from now on."""
    sent: list[str] = []
    real = SparqlEndpointStore._execute

    def recording(self, name, query, server_stop=True):  # type: ignore[no-untyped-def]
        sent.extend(line for line in query.splitlines() if "bif:contains" in line)
        return real(self, name, query, server_stop)

    monkeypatch.setattr(SparqlEndpointStore, "_execute", recording)
    return sent


def test_a_typo_anywhere_in_a_word_is_found_by_its_deletion_keys_without_wildcards(names_kg, monkeypatch):
    """Deletion keys: a one-word name misspelt in its first letters (which no prefix wildcard can
    find), by a swap, a letter too many or too few, is found by exact look-ups of keys."""
    sent = _expressions(monkeypatch)
    texts = ["Ksimet", "Lismet", "ismet", "Kissmet", "Dieterle Wiliam", "Knoblock Edwadr", "Kismet Kismet"]
    found = names_kg.search_labels(texts, limit=10)
    for text in texts[:4]:
        assert _search_pairs(found[text]) == [NAMES.entity("Kismet")], text
    assert _search_pairs(found["Knoblock Edwadr"]) == [NAMES.entity("Edward Knoblock")]
    assert set(_search_pairs(found["Dieterle Wiliam"])[:2]) == {NAMES.entity("William Dieterle"), NAMES.entity("william dieterle")}
    assert _search_pairs(found["Kismet Kismet"]) == [NAMES.entity("Kismet")]
    assert sent and all(("k:wordKeys ?keys" in line or "<urn:kgqa:vocab:labelWords> ?text" in line) and "*" not in line for line in sent)
    assert names_kg.search_labels(["Ksmiet", "Dieterle Villiem"], limit=10) == {"Ksmiet": [], "Dieterle Villiem": []}  # two edits


def _loaded_on(server, folder, kg: str) -> SparqlEndpointStore:  # type: ignore[no-untyped-def]
    """KG `kg` after this kgqa loaded one more fact into it ("Casablanca"), read by a fresh store."""
    kb = folder / "more.txt"
    kb.write_text("Casablanca|directed_by|Michael Curtiz\n", encoding="utf-8")
    writer = open_writer(server.writer_url, kg)
    load_file(writer, kb)
    writer.close()
    return SparqlEndpointStore.connect(server.sparql_url, kg)


def test_a_kg_loaded_with_deletion_keys_per_label_is_searched_by_them_and_stays_so(names_kg, strict_virtuoso, monkeypatch, tmp_path):
    """The kgqa of 2026-11 indexed each label's deletion keys (k:labelKeys): such a KG is searched
    through them, and a load into it by this kgqa goes on writing them."""
    keyed = SparqlEndpointStore.connect(strict_virtuoso.sparql_url, "names_label_keys")
    sent = _expressions(monkeypatch)
    assert _search_pairs(keyed.search_labels(["Ksimet"], limit=5)["Ksimet"]) == [LABEL_KEYED.entity("Kismet")]
    assert sent and all("<urn:kgqa:vocab:labelKeys> ?text" in line for line in sent)
    again = _loaded_on(strict_virtuoso, tmp_path, "names_label_keys")
    assert _search_pairs(again.search_labels(["Csaablanca"], limit=5)["Csaablanca"]) == [LABEL_KEYED.entity("Casablanca")]
    assert "<urn:kgqa:vocab:labelKeys> ?text" in sent[-1]


def test_a_kg_an_older_kgqa_loaded_without_keys_is_searched_by_wildcards_and_stays_so(names_kg, strict_virtuoso, monkeypatch, tmp_path):
    older = SparqlEndpointStore.connect(strict_virtuoso.sparql_url, "names_wildcards")
    sent = _expressions(monkeypatch)
    assert _search_pairs(older.search_labels(["Kismit"], limit=5)["Kismit"]) == [WILDCARDS.entity("Kismet")]
    assert older.search_labels(["Ksimet"], limit=5)["Ksimet"] == []  # the typo before the wildcard's 4 letters
    assert "<urn:kgqa:vocab:normalisedLabel> ?text" in sent[0] and "kism*" in sent[0]
    again = _loaded_on(strict_virtuoso, tmp_path, "names_wildcards")  # its older labels have no keys, so wildcards still
    assert _search_pairs(again.search_labels(["Kismit"], limit=5)["Kismit"]) == [WILDCARDS.entity("Kismet")]
    assert "<urn:kgqa:vocab:normalisedLabel> ?text" in sent[-1]


def test_a_misspelt_name_is_found_through_the_free_text_index(names_kg):
    names_kg.search_labels(["Kismet"])  # the KG's index marks are asked once a store
    before = names_kg.round_trips
    texts = ["William Dieterel", "Kismit", "Edward Knoblok", "Zzyzx Qwerty", "ran", "barbary coast", "Dieterle", "Knoblock", "Kismet"]
    found = names_kg.search_labels(texts, limit=10)
    # 13 words of 3 letters or more looked up by their keys, SEARCH_BRANCHES = 8 to a query; then the 8 texts
    # whose every word is near a word of the KG ("Zzyzx Qwerty" asks nothing more), 8 to a query
    assert names_kg.round_trips == before + 3
    assert (NAMES.entity("William Dieterle"), "William Dieterle") in found["William Dieterel"]  # a typo past the 4th letter
    assert _search_pairs(found["Kismit"]) == [NAMES.entity("Kismet")]  # one word: by its deletion keys
    assert _search_pairs(found["Edward Knoblok"]) == [NAMES.entity("Edward Knoblock")]
    assert found["Zzyzx Qwerty"] == []
    assert _search_pairs(found["ran"]) == [NAMES.entity("Ran")]  # a 3-letter label is in the index too
    assert found["barbary coast"] == [(NAMES.entity("barbary coast"), "barbary coast")]  # and a key that is its label


def test_a_typo_in_the_first_letters_is_found_by_the_other_words_and_every_word_must_match(names_kg):
    found = names_kg.search_labels(["Wiliam Dieterle"], limit=10)["Wiliam Dieterle"]
    # both spellings of the name (key length 16) before the 39-character festival; "Wilhelm" is another KG's
    assert set(_search_pairs(found[:2])) == {NAMES.entity("William Dieterle"), NAMES.entity("william dieterle")}
    assert _search_pairs(found[2:]) == [NAMES.entity("William Dieterle Retrospective Festival")]
    assert names_kg.search_labels(["William Dieterle"], limit=1)["William Dieterle"][0][1].casefold() == "william dieterle"
    assert names_kg.search_labels(["William Knoblock"], limit=10)["William Knoblock"] == []  # no label has both
    assert names_kg.search_labels(["Marlene Dietrihc"], limit=10)["Marlene Dietrihc"] == [(NAMES.entity("m.0abc"), "Marlene Dietrich")]


def test_another_kgs_labels_are_not_returned(names_kg, strict_virtuoso):
    found = names_kg.search_labels(["William Dieterle", "Wilhelm Dieterle", "Marlene Dietrich"], any_word=True, limit=50)
    every = [iri for pairs in found.values() for iri in _search_pairs(pairs)]
    assert every and all(iri.startswith(NAMES.entity("")) for iri in every)
    assert TWIN.entity("Wilhelm Dieterle") not in every and NAMES.entity("William Dieterle") in every
    twin = SparqlEndpointStore.connect(strict_virtuoso.sparql_url, "names_twin")
    assert _search_pairs(twin.search_labels(["Wilhelm Dieterel"], limit=5)["Wilhelm Dieterel"]) == [TWIN.entity("Wilhelm Dieterle")]


def test_any_word_finds_the_words_in_another_order_and_any_of_them(names_kg):
    found = names_kg.search_labels(["Dieterle William", "Kismet Frisco", "Dieterle Zzyzx"], any_word=True, limit=10)
    assert _search_pairs(found["Dieterle William"])[:2] in (
        [NAMES.entity("William Dieterle"), NAMES.entity("william dieterle")], [NAMES.entity("william dieterle"), NAMES.entity("William Dieterle")])
    assert {NAMES.entity("Kismet"), NAMES.entity("Fog Over Frisco")} <= set(_search_pairs(found["Kismet Frisco"]))
    assert NAMES.entity("William Dieterle") in _search_pairs(found["Dieterle Zzyzx"])
    assert names_kg.search_labels(["Dieterle Zzyzx"], limit=10)["Dieterle Zzyzx"] == []  # every word, without any_word


def test_texts_with_free_text_operators_are_plain_words_and_empty_ones_ask_nothing(names_kg):
    hostile = ['kismet* OR "x', "william AND NOT (dieterle)", "dieterle NEAR ~ william'", '") OR ("zzzz*']
    found = names_kg.search_labels(hostile, limit=10)
    assert found[hostile[0]] == [] and found[hostile[3]] == []  # "or", "x", "zzzz" are in no label
    assert found[hostile[1]] == [] and found[hostile[2]] == []  # nor "and", "not"; "near"
    before = names_kg.round_trips
    assert names_kg.search_labels(["", " !? ", "--"]) == {"": [], " !? ": [], "--": []}
    assert names_kg.search_labels(["Kismet"], limit=0) == {"Kismet": []}
    assert names_kg.round_trips == before


def test_the_free_text_expression_is_built_from_plain_words_only():
    assert contains_expression(["william", "dieterel"]) == '("william" OR "will*") AND ("dieterel" OR "diet*")'
    assert contains_expression(["of", "oz", "kismet"], "all_but_one") == '("oz" AND ("kismet" OR "kism*")) OR ("of" AND ("kismet" OR "kism*")) OR ("of" AND "oz")'
    assert contains_expression(["the", "gauntlet"], "all_but_one") == '("gauntlet" OR "gaun*")'  # not "the" alone
    assert contains_expression(["dieterle", "william"], "any", prefix=None) == '"dieterle" OR "william"'
    assert contains_expression(["the", "gauntlet"], "any") == '("gauntlet" OR "gaun*")'  # "the" alone would match most labels
    assert contains_expression(["of", "oz"], "all_but_one") == '"oz" OR "of"'  # unless no word is longer
    assert contains_expression(["christopher", "lee"], prefix="long") == '("christopher" OR "christ*") AND "lee"'
    assert contains_expression(["münchen", "東京", "2001"]) == '("münchen" OR "münc*") AND "東京" AND "2001"'
    assert contains_expression(["oz", "ran"], prefix="keys") == '("kqran" OR "kqan" OR "kqrn" OR "kqra") AND "kqoz"'  # longest first
    assert contains_expression(["aab"], prefix="keys") == '("kqaab" OR "kqab" OR "kqaa")'  # each key once
    assert label_keys_text("the ran oz") == "kqthe kqhe kqte kqth kqran kqan kqrn kqra kqoz"
    assert label_words_text("the ran oz ran") == "kqthe kqran kqoz" and word_keys_text("ran") == "kqran kqan kqrn kqra"
    near = {"kismit": ["kismet", "kismat"], "ran": ["ran"], "zzyzx": []}
    assert words_expression(["ran", "kismit", "oz"], near) == '("kqkismet" OR "kqkismat") AND "kqran" AND "kqoz"'  # longest first
    assert words_expression(["zzyzx", "ran"], near) is None  # no word of the KG near "zzyzx": no label has every word
    assert words_expression(["zzyzx", "kismit", "oz"], near, "any") == '("kqkismet" OR "kqkismat")'  # "oz" alone would match most labels
    with pytest.raises(ValueError):
        words_expression(["kismit"], {"kismit": ['kismet" OR "x']})
    for bad in ["a*", '"a"', "a b", "(a)", "a-b", "a_b", "a'b", "~a", "a\nb", "", "a|b", "a&b", "a^2", "a~"]:
        with pytest.raises(ValueError):
            contains_expression(["kismet", bad])
    for args in [([], "every"), (["a"], "near"), (["a"], "every", "all")]:
        with pytest.raises(ValueError):
            contains_expression(*args)


def test_a_wildcard_virtuoso_finds_too_broad_is_asked_again_with_longer_prefixes(names_kg, strict_virtuoso, monkeypatch):
    """Virtuoso refuses a wildcard that matches too many words of its index (FT038): the search of a
    KG without deletion keys is asked again with longer prefixes, then none."""
    older = SparqlEndpointStore.connect(strict_virtuoso.sparql_url, "names_wildcards")
    sent: list[str] = []
    real = SparqlEndpointStore._execute

    def refusing(self, name, query, server_stop=True):  # type: ignore[no-untyped-def]
        if name != "search_labels_virtuoso":
            return real(self, name, query, server_stop)
        sent.append(query)
        if len(sent) <= 2:
            raise EndpointError(f"{name}.rq: answered HTTP 500: Virtuoso 22015 Error FT038: wildcard has over 1000 matches")
        return real(self, name, query, server_stop)

    monkeypatch.setattr(SparqlEndpointStore, "_execute", refusing)
    found = older.search_labels(["Knoblokc"], limit=5)["Knoblokc"]
    expressions = [[line for line in query.splitlines() if "?text bif:contains" in line] for query in sent]
    assert found == [] and len(sent) == 3  # "knob*", then "knobl*", then the word as written only
    assert "knob*" in expressions[0][0] and "knobl*" in expressions[1][0] and "*" not in expressions[2][0]
    assert _search_pairs(older.search_labels(["Knoblokc Edward"], limit=5)["Knoblokc Edward"]) == [WILDCARDS.entity("Edward Knoblock")]


def test_a_kg_loaded_without_the_index_says_how_to_get_it_and_a_load_of_the_same_files_indexes_it(strict_virtuoso, names_kg, monkeypatch, tmp_path):
    """An older kgqa loaded the KG without the free-text rule (and Virtuoso's own rule that indexes
    every literal is off): the search says which load to run; that load finds the file loaded and
    indexes the labels already there, short ones too."""
    kb = tmp_path / "old.txt"
    kb.write_text("Oz|directed_by|Victor Fleming\n", encoding="utf-8")
    monkeypatch.setattr(VirtuosoWriter, "_index_label_keys", lambda self: None)
    writer = open_writer(strict_virtuoso.writer_url, "older")
    load_file(writer, kb)
    writer.close()
    monkeypatch.undo()
    store = SparqlEndpointStore.connect(strict_virtuoso.sparql_url, "older")
    with pytest.raises(NoLabelIndex, match=r"kgqa load` of the same files with --kg older --store virtuoso://"):
        store.search_labels(["Victor Flemming"])
    writer = open_writer(strict_virtuoso.writer_url, "older")
    assert load_file(writer, kb).facts_in_store == 1
    writer.close()
    found = store.search_labels(["Victor Flemming", "oz"], limit=5)
    assert found == {"Victor Flemming": [(OLDER.entity("Victor Fleming"), "Victor Fleming")], "oz": [(OLDER.entity("Oz"), "Oz")]}


def test_the_loader_adds_the_rule_before_the_first_batch_and_indexes_at_the_end(strict_virtuoso, monkeypatch, tmp_path):
    ran: list[str] = []
    real_run = Isql.run

    def recording_run(self: Isql, *statements: str, **limits: float) -> str:
        ran.extend(statements)
        return real_run(self, *statements, **limits)

    monkeypatch.setattr(Isql, "run", recording_run)
    kb = tmp_path / "tiny.txt"
    kb.write_text("Casablanca|directed_by|Michael Curtiz\n", encoding="utf-8")
    writer = open_writer(strict_virtuoso.writer_url, "tinytext")
    load_file(writer, kb)
    writer.close()
    rules = [i for i, text in enumerate(ran) if "RDF_OBJ_FT_RULE_ADD" in text and "urn:kgqa:kg:tinytext:meta" in text]
    bulk_loads = [i for i, text in enumerate(ran) if text == "rdf_loader_run()"]
    updates = [i for i, text in enumerate(ran) if "VT_INC_INDEX_DB_DBA_RDF_OBJ" in text]
    assert len(rules) == 2 and bulk_loads and rules[-1] < bulk_loads[0] and updates[-1] > bulk_loads[-1]  # labels, keys
    store = SparqlEndpointStore.connect(strict_virtuoso.sparql_url, "tinytext")
    assert _search_pairs(store.search_labels(["Michael Curtis"])["Michael Curtis"]) == [KGNamespace("tinytext").entity("Michael Curtiz")]


def test_other_endpoints_search_the_label_index_beside_the_store(strict_virtuoso, monkeypatch, tmp_path):
    monkeypatch.setenv("KGQA_CACHE", str(tmp_path))
    store = SparqlEndpointStore(strict_virtuoso.sparql_url, "names")
    store.server = "Oxigraph/0.4"  # what `oxigraph serve` says it is
    with pytest.raises(NoLabelIndex, match="kgqa index"):
        store.search_labels(["Kismit"])


def test_a_load_goes_on_when_virtuoso_refuses_the_index_rule(strict_virtuoso, monkeypatch, caplog, tmp_path):
    """Virtuoso refuses the free-text rule (in life: a loading user who may not add one, a cluster):
    the load completes with a warning, and the KG's search says it has no label index."""
    from kgqa.sparql import virtuoso

    real = virtuoso.sql_statements
    monkeypatch.setattr(virtuoso, "sql_statements", lambda name, **iris: ["DB.DBA.KGQA_NO_SUCH_PROCEDURE ()"] if name == "virtuoso_text_index" else real(name, **iris))
    kb = tmp_path / "refused.txt"
    kb.write_text("Casablanca|directed_by|Michael Curtiz\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="kgqa.sparql.virtuoso"):
        writer = open_writer(strict_virtuoso.writer_url, "refused")
        report = load_file(writer, kb)
        writer.close()
    assert report.facts_in_store == 1 and "did not index KG 'refused'" in caplog.text
    with pytest.raises(NoLabelIndex):
        SparqlEndpointStore.connect(strict_virtuoso.sparql_url, "refused").search_labels(["Michael Curtis"])


def _scheduled_text_index(server) -> str:  # type: ignore[no-untyped-def]
    """The interval (minutes) of Virtuoso's scheduled update of the RDF free-text index, 'NULL' if none."""
    out = server.isql("SELECT 'INTERVAL', SE_INTERVAL FROM DB.DBA.SYS_SCHEDULED_EVENT "
                      "WHERE SE_NAME = 'VT_INC_INDEX_DB_DBA_RDF_OBJ()'")
    rows = [line.split() for line in out.splitlines() if line.strip().startswith("INTERVAL")]
    return rows[0][1] if rows else "NULL"


def test_a_load_indexes_its_labels_alone_and_hands_the_index_back_to_virtuosos_scheduler(strict_virtuoso, tmp_path):
    """While a writer is open, only it updates the free-text index (two updates at once crashed Virtuoso
    7.2 at 50M facts); its close turns the scheduler's minute-by-minute update back on."""
    assert _scheduled_text_index(strict_virtuoso) == "1"
    kb = tmp_path / "kb.txt"
    kb.write_text("Scheduled Film|directed_by|Ursula Indexwright\n", encoding="utf-8")
    writer = open_writer(strict_virtuoso.writer_url, "scheduled")
    try:
        load_file(writer, kb)
        assert _scheduled_text_index(strict_virtuoso) == "NULL"
    finally:
        writer.close()
    assert _scheduled_text_index(strict_virtuoso) == "1"
    store = SparqlEndpointStore.connect(strict_virtuoso.sparql_url, "scheduled")
    assert _search_pairs(store.search_labels(["Ursula Indexwrigt"], limit=5)["Ursula Indexwrigt"]) == [KGNamespace("scheduled").entity("Ursula Indexwright")]
