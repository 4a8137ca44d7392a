"""The text index of entity labels beside RDF stores (kgqa.sparql.label_index): what it finds, that
loading writes it batch by batch and idempotently, that `kgqa index` rebuilds the same one, and that
linking uses it instead of reading the KG's labels."""

from __future__ import annotations

import itertools
import logging

import pytest
from conftest import store_from_lines
from typer.testing import CliRunner

from kgqa.core.errors import NoLabelIndex
from kgqa.core.namespace import KGNamespace
from kgqa.retrieval.linking import link
from kgqa.retrieval.store_url import open_store
from kgqa.core.labels import within_one_edit
from kgqa.sparql.label_index import LabelIndex, embedded_index_path, length_range

NS = KGNamespace("people")
LINES = [
    "John Smith|born_in|Springfield",
    "John Smith Jr.|born_in|Shelbyville",
    "John Smithson|born_in|Springfield",
    "Johanna Smythe|born_in|Capital City",
    "Ushbelbas Litorbas 17|works_for|Acme Corporation",
    "Ushbelbas Litorbas 170|works_for|Acme Corporation",
    "Mary Jones|spouse_of|John Smith",
    "Mary Jones|born_in|Varela",
    "Tom Jones|born_in|Vareta",
    "Tom Jones|has_tags|vazelo",
]


def _damerau(a: str, b: str) -> int:
    """Optimal-string-alignment distance, the textbook dynamic programme (the reference for `within_one_edit`)."""
    d = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) + 1):
        d[i][0] = i
    for j in range(len(b) + 1):
        d[0][j] = j
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[-1][-1]


def test_one_edit_agrees_with_the_edit_distance_on_every_short_word():
    words = ["".join(p) for n in range(5) for p in itertools.product("ab", repeat=n)] + ["smith", "smiht", "smth", "smitth", "snith"]
    for a, b in itertools.product(words, repeat=2):
        assert within_one_edit(a, b) == (_damerau(a, b) <= 1), (a, b)


def test_search_finds_one_misspelt_letter_per_word_nearest_lengths_first():
    index = LabelIndex.create(None)
    added = index.add([(NS.entity(s), s) for line in LINES for s in line.split("|")[::2]])
    assert added == len({s for line in LINES for s in line.split("|")[::2]})
    assert index.add([(NS.entity("John Smith"), "John Smith")]) == 0  # idempotent
    found = index.search(["jonh smith", "john smiht", "ushbelbas litorbaz 17", "smith john", "zzyzx"])
    assert [label for _, label in found["jonh smith"]][:1] == ["John Smith"]
    # every label holding both words (one edit away) is a candidate, the same length first
    assert {label for _, label in found["john smiht"]} >= {"John Smith", "John Smith Jr."}
    assert "John Smithson" not in {label for _, label in found["john smiht"]}  # "smithson" is three edits from "smiht"
    assert [label for _, label in found["ushbelbas litorbaz 17"]] == ["Ushbelbas Litorbas 17"]  # "170" is not "17"
    assert [label for _, label in found["smith john"]][0] == "John Smith"  # words in any order
    assert found["zzyzx"] == []
    anyword = index.search(["mary smith"], any_word=True)["mary smith"]
    assert {"Mary Jones", "John Smith"} <= {label for _, label in anyword}
    assert index.search(["mary smith"])["mary smith"] == []  # no label has both words
    # no label far longer than the text: the similarity could not reach the linker's threshold
    low, high = length_range(len("john smith"), 0.8)
    assert low <= len("john smith") <= high and all(low <= len(label) <= high for _, label in found["jonh smith"])


def test_loading_writes_the_index_beside_the_store_and_linking_reads_nothing_else(tmp_path, monkeypatch):
    url = store_from_lines(tmp_path, "people", LINES)
    path = embedded_index_path(tmp_path / "store", "people")
    assert path.is_file()
    store = open_store(url, "people")

    def no_paging(*args, **kwargs):
        raise AssertionError("linking must not page through the KG's labels")

    monkeypatch.setattr(type(store), "label_page", no_paging)
    linked = link(store, "where was Jonh Smith born")
    assert [(t.entity.label, t.match) for t in linked.topics] == [("John Smith", "fuzzy")]
    assert [(t.entity.label, t.match) for t in link(store, "where was Ushbelbas Litorbas 170 born").topics] == [("Ushbelbas Litorbas 170", "exact")]
    # one word, one letter replaced: under the one-word similarity threshold (0.83 < 0.9), linked only
    # because it is written like a name and exactly one name-like label is one edit away
    assert [(t.entity.label, t.match) for t in link(store, "who was born in Vazela").topics] == [("Varela", "fuzzy")]
    assert link(store, "who was born in Vareza").topics == []  # Varela and Vareta: which one is not for us to guess
    assert all(t.match != "fuzzy" for t in link(store, "who was born in vazela").topics)  # not written as a name


def test_a_question_whose_names_match_as_written_never_searches_the_index(tmp_path, monkeypatch):
    store = open_store(store_from_lines(tmp_path, "people", LINES), "people")
    searched: list[list[str]] = []
    real = type(store).search_labels
    monkeypatch.setattr(type(store), "search_labels", lambda self, texts, **kw: searched.append(list(texts)) or real(self, texts, **kw))
    assert [t.entity.label for t in link(store, "Where was John Smith born, and did Mary Jones know him?").topics] == ["John Smith", "Mary Jones"]
    assert searched == []
    # a capitalised word outside every match is looked for ("Jonh"), and so is a question with no match
    assert [t.entity.label for t in link(store, "Did Mary Jones marry Jonh Smith?").topics] == ["Mary Jones", "John Smith"]
    assert [t.entity.label for t in link(store, "where was jonh smith born").topics] == ["John Smith"]
    assert len(searched) == 2


def test_kgqa_index_rebuilds_an_index_that_is_missing_and_linking_warns_once_without_it(tmp_path, caplog):
    from kgqa.faces.cli import app

    url = store_from_lines(tmp_path, "people", LINES)
    path = embedded_index_path(tmp_path / "store", "people")
    before = LabelIndex.open(path)
    pairs = sorted(before._db.execute("SELECT iri, label FROM labels").fetchall())
    before.close()
    for suffix in ("", "-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)
    store = open_store(url, "people")
    with pytest.raises(NoLabelIndex, match="kgqa index"):
        store.search_labels(["jonh smith"])
    with caplog.at_level(logging.WARNING):
        assert link(store, "where was Jonh Smith born").topics == []  # exact look-ups only
        assert link(store, "where was Jonh Smith born").topics == []
    assert sum("fallbacks" in r.getMessage() for r in caplog.records) == 1
    result = CliRunner().invoke(app, ["index", "--store", url, "--kg", "people"])
    assert result.exit_code == 0, result.output
    after = LabelIndex.open(path)
    assert sorted(after._db.execute("SELECT iri, label FROM labels").fetchall()) == pairs
    after.close()
    assert [t.entity.label for t in link(open_store(url, "people"), "where was Jonh Smith born").topics] == ["John Smith"]


def test_fan_out_counts_streamed_from_an_on_disk_store_equal_the_grouping_query(tmp_path):
    """The embedded loader counts (s, r) and (o, r⁻¹) groups from runs in the store's index order;
    the counts must be those a GROUP BY over the facts gives (hub included)."""
    lines = [f"hub|links|e{i}" for i in range(300)] + [f"e{i}|back|hub" for i in range(0, 300, 7)]
    lines += [f"e{i}|likes|e{(i * 13) % 50}" for i in range(200)] + LINES
    store = open_store(store_from_lines(tmp_path, "counts", lines), "counts")
    grouped = sorted((r["e"], r["r"], r["inv"] in ("true", "1"), int(r["n"])) for r in store._select("fanout_groups"))
    stored = store._execute("stored", f"SELECT ?e ?r ?n ?g WHERE {{ GRAPH ?g {{ ?e ?r ?n }} FILTER(?g IN (<{store.ns.fanout_graph}>, <{store.ns.fanin_graph}>)) }}")
    assert sorted((r["e"], r["r"], r["g"] == store.ns.fanin_graph, int(r["n"])) for r in stored) == grouped
    facts = {info.label: info.facts for info in store.relations()}
    assert facts["links"] == 300 and facts["back"] == len(range(0, 300, 7)) and facts["likes"] == 200


def test_typo_likelihood_ranks_the_slips_that_pick_no_letter_first():
    from kgqa.core.labels import typo_likelihood

    assert typo_likelihood("gigrox", "gigrox") == 0.0 and typo_likelihood("girox", "gigroxx") == 0.0  # none, or two edits
    dropped, doubled, swapped = typo_likelihood("girox", "gigrox"), typo_likelihood("giggrox", "gigrox"), typo_likelihood("gigrxo", "gigrox")
    replaced, stray = typo_likelihood("gigrux", "gigrox"), typo_likelihood("gigraox", "gigrox")
    assert dropped == doubled == swapped and replaced == stray == pytest.approx(dropped / 25)
    assert typo_likelihood("bigrox", "gigrox") < replaced  # the first letter is rarely the one mistyped
    assert typo_likelihood("lumix", "lummix") == typo_likelihood("lumix", "lumixa")  # either "m" of a double dropped: one slip
