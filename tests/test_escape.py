"""The one escaping function, against hostile input, checked by a real SPARQL parser (Oxigraph)."""

from __future__ import annotations

import pyoxigraph as ox
import pytest

from kgqa.sparql import escape
from kgqa.sparql.queries import render

HOSTILE_LITERALS = [
    'x" } ; DROP ALL ; SELECT * { "',
    "x' } INSERT DATA { <a:b> <a:b> <a:b> } #",
    "line\nbreak\r\ttab",
    "back\\slash\\",
    '"""triple"""',
    "\x00\x01\x7f control",
    "unicode ✓ ⁻¹ Michèle",
    "",
]


@pytest.mark.parametrize("value", HOSTILE_LITERALS)
def test_literal_round_trips_exactly_through_a_real_parser(value):
    store = ox.Store()
    rows = list(store.query(f"SELECT ?v WHERE {{ BIND({escape.literal(value)} AS ?v) }}"))
    assert rows[0]["v"].value == value


@pytest.mark.parametrize(
    "value",
    ["http://ex.org/a> } ; DROP ALL ; <x:y", "http://ex.org/a b", 'http://ex.org/"', "http://ex.org/{x}", "http://ex.org/\n", "relative/path", "", "a\\b:c"],
)
def test_iri_refuses_anything_that_could_break_out(value):
    with pytest.raises(ValueError):
        escape.iri(value)


def test_iri_accepts_real_iris():
    for value in ["urn:kgqa:kg:demo:e:Kismet%20(1944)", "http://ex.org/a#b", "http://www.wikidata.org/entity/Q42"]:
        assert escape.iri(value) == f"<{value}>"


def test_numbers_and_renderer_take_only_escaped_terms():
    assert escape.integer(100) == "100"
    for bad in (True, 1.5, "100; DROP"):
        with pytest.raises(ValueError):
            escape.integer(bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        render("labels", entities="<urn:x:y>", meta=escape.iri("urn:m:g"))  # a raw str is refused


def test_iri_pairs_escape_every_iri_and_never_render_an_empty_block():
    from kgqa.sparql.escape import iri_pairs

    assert iri_pairs([("http://a/1", "http://a/r")]) == "(<http://a/1> <http://a/r>)"
    with pytest.raises(ValueError, match="at least one pair"):
        iri_pairs([])
    with pytest.raises(ValueError):
        iri_pairs([("http://a/1", "http://a/r> } DROP ALL {")])


def test_numbered_iris_give_positions_a_real_parser_reads_back_and_refuse_an_empty_list():
    values = ["http://a/1", "urn:kgqa:kg:demo:e:Kismet%20(1944)"]
    block = escape.numbered_iris(values)
    rows = list(ox.Store().query(f"SELECT ?k ?x WHERE {{ VALUES (?k ?x) {{ {block} }} }}"))
    assert [(int(r["k"].value), r["x"].value) for r in rows] == [(0, values[0]), (1, values[1])]
    with pytest.raises(ValueError, match="at least one IRI"):
        escape.numbered_iris([])  # one row of UNDEF would leave ?x free: a scan of the whole KG
    with pytest.raises(ValueError):
        escape.numbered_iris(["http://a/r> } DROP ALL {"])
    unbound = list(ox.Store().query(f"SELECT ?k ?x WHERE {{ VALUES (?k ?x) {{ {escape.NOTHING_NUMBERED} }} }}"))
    assert len(unbound) == 1 and unbound[0]["k"] is None


def test_sql_statements_take_only_iris_that_need_no_quoting():
    from kgqa.core.errors import StoreError
    from kgqa.core.namespace import KGNamespace
    from kgqa.sparql.queries import sql_call, sql_statements

    ns = KGNamespace("metaqa")
    graphs = {"fanout": ns.fanout_graph, "fanin": ns.fanin_graph, "meta": ns.meta_graph, "data": ns.data_graph}
    terms = {"meta": ns.meta_graph, "labels": "urn:kgqa:vocab:normalisedLabel", "keys": "urn:kgqa:vocab:labelKeys"}
    statements = sql_statements("virtuoso_text_index", **terms)
    assert len(statements) == 4 and sum(ns.meta_graph in s for s in statements) == 2
    assert not any("{{" in s or s.startswith("--") for s in statements)
    call = sql_call("DB.DBA.KGQA_COUNTS_REL", *graphs.values(), 42)
    assert call == "DB.DBA.KGQA_COUNTS_REL (" + ", ".join(f"'{g}'" for g in graphs.values()) + ", 42)"
    for hostile in ("urn:x'); DELETE FROM DB.DBA.RDF_QUAD; --", "urn:a b", "urn:é"):
        with pytest.raises(StoreError, match="cannot be written into SQL"):
            sql_statements("virtuoso_text_index", **{**terms, "meta": hostile})
        with pytest.raises(StoreError, match="cannot be written into SQL"):
            sql_call("DB.DBA.KGQA_COUNTS_REL", ns.data_graph, hostile)


def test_render_union_sends_only_the_branches_asked_for_and_each_parses():
    from itertools import combinations

    from kgqa.core.namespace import KGNamespace
    from kgqa.sparql.queries import graph_terms, render_union

    graphs = graph_terms(KGNamespace("demo"))
    pairs = escape.iri_pairs([("urn:kgqa:kg:demo:e:a", "urn:kgqa:kg:demo:r:b")])
    reached = escape.iri_list(["urn:kgqa:kg:demo:e:c"])
    terms = {
        "read_out": {"pairs": pairs}, "read_in": {"pairs": pairs},
        "probe_out": {"pairs": pairs, "reached": reached}, "probe_in": {"pairs": pairs, "reached": reached},
        "labels": {"entities": reached},
    }
    assert render_union("expand_members", {}, **graphs) is None
    store = ox.Store()
    for k in range(1, len(terms) + 1):
        for names in combinations(terms, k):
            text = render_union("expand_members", {n: terms[n] for n in names}, **graphs)
            assert text is not None and text.count("UNION") == k - 1
            assert ("FILTER EXISTS" in text) == any(n.startswith("probe") for n in names)
            assert list(store.query(text)) == []  # a real parser accepts it
    with pytest.raises(KeyError, match="no branch"):
        render_union("expand_members", {"drop_all": {}}, **graphs)
    with pytest.raises(KeyError, match="needs"):
        render_union("expand_members", {"probe_out": {"pairs": pairs}}, **graphs)  # no reached list
    with pytest.raises(TypeError):
        render_union("expand_members", {"labels": {"entities": "<urn:x:y>"}}, **graphs)  # a raw str is refused
