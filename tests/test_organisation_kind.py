"""An organisation is no place and no value (kgqa.methods.kgfr.organisation_kind): in a KG without types, where a
question asks for a company, a firm or an employer, an occupation (a value) and a city (the object of `lives_in`,
`born_in`, `located_in`) lose to every other candidate; a firm based somewhere, the subject of such a fact, does not.
On a real embedded store's subgraphs, and through KGFR's answer with the bundled checkpoint."""

from __future__ import annotations

import torch
from conftest import store_from_lines, subgraph_from_lines

from kgqa.methods.kgfr.asked_kind import asks_for_organisation
from kgqa.methods.kgfr.organisation_kind import demote_non_organisations, places

WORK = [  # the scale KG's shape: people, their cities and occupations, firms based in cities
    "Ann Lee|works_for|Acme",
    "Ann Lee|occupation|dentist",
    "Ann Lee|lives_in|Zenda",
    "Ann Lee|born_in|Strelsau",
    "Ann Lee|knows|Bob Ray",
    "Bob Ray|works_for|Brill",
    "Acme|headquartered_in|Strelsau",
    "Acme|industry|mining",
    "Zenda|located_in|Ruritania",
    "Strelsau|located_in|Ruritania",
]


def _ranked(sg, scores: dict[str, float], probe: str) -> tuple[list[str], int]:  # type: ignore[no-untyped-def]
    """The candidates after the rule for `probe`, best first, from `scores` by label (others -inf), and how many moved."""
    index = {label: i for i, label in enumerate(sg.node_labels)}
    tensor = torch.full((sg.num_nodes,), float("-inf"))
    for label, score in scores.items():
        tensor[index[label]] = score
    after, moved = demote_non_organisations(tensor, sg, probe)
    order = [int(i) for i in torch.argsort(after, descending=True) if torch.isfinite(after[i])]
    return [sg.node_labels[i] for i in order], moved


def test_an_occupation_and_a_city_lose_where_a_company_is_asked(tmp_path):
    sg = subgraph_from_lines(tmp_path, "work", WORK, "Ann Lee")
    scores = {"dentist": 10.0, "Zenda": 9.0, "Strelsau": 8.0, "Acme": 5.0, "mining": 4.0, "Brill": 3.0, "Ruritania": 2.0}
    ranked, moved = _ranked(sg, scores, "what company employs something")
    assert ranked[:2] == ["Acme", "Brill"] and moved == 5  # dentist and mining (values), Zenda, Strelsau and Ruritania (places)
    assert ranked[2:] == ["dentist", "Zenda", "Strelsau", "mining", "Ruritania"]  # their order kept among themselves
    assert _ranked(sg, scores, "which firms is something linked to")[0][0] == "Acme"
    assert _ranked(sg, scores, "what is something's occupation") == (list(scores), 0)  # no organisation asked: nothing moves
    assert _ranked(sg, scores, "which city does something live in")[1] == 0


def test_a_firm_based_somewhere_is_no_place(tmp_path):
    """Acme is the subject of `headquartered_in`; Strelsau, its object, is a place, as are the objects of `located_in`."""
    sg = subgraph_from_lines(tmp_path, "work", WORK, "Ann Lee")
    place = {sg.node_labels[i] for i in places(sg).nonzero()[0]}
    assert place == {"Zenda", "Strelsau", "Ruritania"}
    assert asks_for_organisation("which companies are based in something's birthplace")
    assert not asks_for_organisation("where does something work") and not asks_for_organisation("who employs something")


def test_nothing_moves_in_a_kg_with_types(tmp_path):
    sg = subgraph_from_lines(tmp_path, "typed", WORK + ["Acme|type|company", "Zenda|type|city"], "Ann Lee")
    assert _ranked(sg, {"Zenda": 9.0, "Acme": 5.0}, "what company employs something") == (["Zenda", "Acme"], 0)


def test_kgfr_answers_what_company_employs_someone_with_a_company(tmp_path):
    from kgqa import Engine

    with Engine(store_from_lines(tmp_path, "work", WORK), "kgfr", kg="work") as engine:
        answer = engine.ask("what company employs Ann Lee", topics=["Ann Lee"], decline_below=0)
        assert answer.answers[0].text == "Acme"
        assert answer.trace.subgraph["moved"]["no_organisation"] > 0
