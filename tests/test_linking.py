"""Entity linking from raw questions against a real store (the demo KG in the embedded store)."""

from __future__ import annotations

from kgqa.linking import link
from kgqa.namespace import KGNamespace

NS = KGNamespace("demo")


def test_links_names_and_prefers_longer_and_name_like_spans(demo_kg):
    store, _ = demo_kg
    linked = link(store, "which films did William Dieterle direct")
    assert linked.iris == [NS.entity("William Dieterle")]
    assert "William Dieterle" in linked.candidates  # every matching span is kept in the trace
    assert link(store, "who directed kismet").iris == [NS.entity("Kismet")]  # lower-case: a normalised match
    two = link(store, "did Ronald Colman act in Kismet")
    assert two.iris == [NS.entity("Ronald Colman"), NS.entity("Kismet")]


def test_function_words_and_unknown_names_link_nothing(demo_kg):
    store, _ = demo_kg
    assert link(store, "what is the one that was in it").topics == []
    assert link(store, "who directed Zzyzx Qwerty").topics == []
