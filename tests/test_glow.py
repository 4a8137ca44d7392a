"""GLOW: the open-world benchmark builder (deleted facts stay out of the store and every prompt), the
RGCN label predictor against the majority class and shuffled labels, the prompt variants' fields,
and the method through the registry and the CLI. Countries S1 (real, 1,158 facts) keeps it quick."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import shared_data
from kgqa.loaders import load_file
from kgqa.methods import build_runner
from kgqa.methods.glow.answer import PROMPTS, VARIANTS, GLOWAnswerer
from kgqa.methods.glow.context import Fact
from kgqa.methods.glow.openworld import build, check_absent, read_facts
from kgqa.methods.glow.patterns import Pattern, PatternSet, Step, load_patterns
from kgqa.methods.glow.train import GLOWTrainConfig, train
from kgqa.llm.prompt import load_prompt
from kgqa.sparql.embedded import EmbeddedWriter
from scripted_llm import ScriptedLLM, ScriptedScorer



def countries_s1() -> Path:
    """Countries S1's folder, or a skip where ../shared/data is absent (called in the tests that read it,
    never at import: a module-level call would stop the whole collection there)."""
    return shared_data("countries", "countries_S1")


def kgqa(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kgqa", *args], capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """Countries S1 as an open-world benchmark (its test facts are the held-out ones), in a store,
    with a checkpoint trained on it and one trained on shuffled labels."""
    tmp = tmp_path_factory.mktemp("glow")
    built = build("countries", read_facts(countries_s1() / "train.txt"), load_patterns("countries"), held_out=read_facts(countries_s1() / "test.txt"))
    built.write(tmp / "ow")
    writer = EmbeddedWriter.open(None, "countries")
    load_file(writer, tmp / "ow" / "kg.tsv", "tsv")
    store = writer.reader()
    patterns = built.patterns.patterns
    meta = train(built.facts, patterns, tmp / "ckpt", GLOWTrainConfig(epochs=150, patience=150), "countries", "a geography", log=lambda _: None)
    shuffled = train(built.facts, patterns, tmp / "shuffled", GLOWTrainConfig(epochs=150, patience=150, shuffle_labels=True), "countries",
                     log=lambda _: None)
    return built, tmp, meta, shuffled, store


def test_a_sampled_benchmark_deletes_one_hop_answers_and_the_middle_of_two_hop_chains():
    facts = []
    for i in range(60):
        facts += [(f"p{i}", "nationality", "A" if i % 3 else "B"), (f"p{i}", "born_in", f"c{i % 7}"), (f"p{i}", "knows", f"p{(i + 1) % 60}"),
                  (f"f{i}", "directed_by", f"p{i}"), (f"f{i}", "year", f"y{i % 5}"), (f"f{i}", "genre", f"g{i % 4}")]
    patterns = PatternSet("toy", "", (
        Pattern("person-nationality", "person", "nationality", (Step("nationality"),), ("What is the nationality of {entity}?",), min_class_size=5),
        Pattern("film-director-nationality", "film", "nationality", (Step("directed_by"), Step("nationality")),
                ("What is the nationality of the director of {entity}?",), min_class_size=5),
    ))
    world = build("toy", facts, patterns, per_pattern=5, seed=3)
    assert world.manifest["questions"] == {"person-nationality": 5, "film-director-nationality": 5}
    assert not check_absent(world)
    kept = set(world.facts)
    assert not set(world.deleted) & kept
    for q in world.questions:
        entity = q["topic_id"]
        if q["hop"] == 1:
            assert not any(s == entity and r == "nationality" for s, r, _ in kept)
            assert {(entity, "nationality", a) for a in q["answer_ids"]} <= set(world.deleted)
        else:
            director = next(o for s, r, o in facts if s == entity and r == "directed_by")
            assert (entity, "directed_by", director) in kept  # the chain's first step stays
            assert not any(s == director and r == "nationality" for s, r, _ in kept)
    assert build("toy", facts, patterns, per_pattern=5, seed=3).questions == world.questions  # seeded
    assert build("toy", facts, patterns, per_pattern=5, seed=4).questions != world.questions


def test_deleted_facts_are_absent_from_the_store_and_from_every_prompt(world):
    built, tmp, _, _, store = world
    assert len(built.questions) == 24 and built.deleted  # S1's test facts: countries whose region is held out
    deleted = {(s.replace("_", " "), o) for s, _, o in built.deleted} | {(s, o) for s, _, o in built.deleted}
    llm = ScriptedLLM(lambda prompt: "europe")
    for variant in VARIANTS:
        run = build_runner("glow", store, llm, tmp / "ckpt", {"variant": variant, "choose": "generate"})
        for q in built.questions:
            answer = run(q["question"], q["topics"])
            assert answer.trace.subgraph["stored_answers"] == 0
            for fact in answer.evidence.facts:
                head, _, tail = fact.partition(" —")
                assert (head, tail.rsplit("→ ", 1)[-1]) not in deleted
    assert len(llm.prompts) == len(VARIANTS) * len(built.questions)
    for prompt in llm.prompts:
        for s, r, o in built.deleted:
            assert f'("{s}", "{r}", "{o}")' not in prompt
    from kgqa.core.namespace import KGNamespace

    ns = KGNamespace("countries")
    for s, r, o in built.deleted:
        edges = store.expand([ns.entity(s)], {ns.entity(s)}, 1000)
        assert not [e for e in edges if e.relation == ns.relation(r) and e.tail == ns.entity(o)]


def test_drawn_targets_lose_facts_the_store_held_and_no_prompt_shows_them(tmp_path):
    """Drawn (not held-out) targets on Countries S1: their region facts were in the KG before the
    build, are absent from the loaded store, and appear in no prompt of any variant."""
    original = read_facts(countries_s1() / "train.txt")
    world = build("countries", original, load_patterns("countries"), per_pattern=15, seed=5)
    assert len(world.questions) == 15 and set(world.deleted) <= set(original)
    world.write(tmp_path)
    writer = EmbeddedWriter.open(None, "countries")
    load_file(writer, tmp_path / "kg.tsv", "tsv")
    store = writer.reader()
    from kgqa.core.namespace import KGNamespace

    ns = KGNamespace("countries")
    for s, r, o in world.deleted:
        assert not [e for e in store.expand([ns.entity(s)], {ns.entity(s)}, 1000) if e.relation == ns.relation(r) and e.tail == ns.entity(o)]
    train(world.facts, world.patterns.patterns, tmp_path / "ckpt", GLOWTrainConfig(epochs=20), "countries", log=lambda _: None)
    llm = ScriptedLLM(lambda prompt: "europe")
    for variant in ("g", "gn"):
        run = build_runner("glow", store, llm, tmp_path / "ckpt", {"variant": variant, "choose": "generate", "use_stored": False})
        for q in world.questions:
            run(q["question"], q["topics"])
    for prompt in llm.prompts:
        for s, r, o in world.deleted:
            assert f'("{s}", "{r}", "{o}")' not in prompt


def test_rgcn_beats_the_majority_class_and_falls_to_chance_with_shuffled_labels(world):
    built, tmp, meta, shuffled, store = world
    real = meta["metrics"]["country-region"]
    assert real["validation_accuracy"] >= real["validation_majority"] + 0.25
    hits = {}
    for name in ("ckpt", "shuffled"):  # on the held-out questions, with their true answers
        run = build_runner("glow", store, None, tmp / name)
        hits[name] = sum(run(q["question"], q["topics"]).answers[0].label in q["answers"] for q in built.questions) / len(built.questions)
    majority = max(sum(q["answers"] == [region] for q in built.questions) for region in ("africa", "americas", "asia", "europe", "oceania"))
    assert hits["ckpt"] >= majority / len(built.questions) + 0.25
    assert hits["shuffled"] <= majority / len(built.questions) + 0.1


def test_each_prompt_variant_carries_exactly_its_fields(world):
    built, tmp, _, _, store = world
    answerer = GLOWAnswerer(store, tmp / "ckpt")
    pattern = answerer.checkpoint.patterns[0]
    values = answerer.prompt_values(pattern, "zambia", [Fact("zambia", "neighbor", "angola")], [(0, 0.7), (3, 0.2), (1, 0.1)],
                                    "Which region is zambia located in?")
    fields = {"labels": "- Help: The possible list of regions are: [africa, americas, asia, europe, oceania]",
              "triples": '- The country associated triples. [("zambia", "neighbor", "angola")]',
              "gnn": "[africa, europe, americas]"}
    expected = {"gn": {"labels", "triples", "gnn"}, "g": {"labels", "triples"}, "n": {"labels", "gnn"}, "l": {"labels"}, "llm-only": set()}
    for variant in VARIANTS:
        text = load_prompt(PROMPTS[variant]).render(False, **values)
        assert {name for name, field in fields.items() if field in text} == expected[variant], variant
        assert ("zambia" in text) and ("Which region is zambia located in?" in text) == (variant == "llm-only")


def test_glow_without_an_llm_answers_the_gnns_top_class_and_a_stored_fact_from_the_store(world):
    built, tmp, _, _, store = world
    run = build_runner("glow", store, None, tmp / "ckpt")
    answer = run(built.questions[0]["question"], built.questions[0]["topics"])
    assert answer.answers[0].match == "predicted" and len(answer.evidence.candidates) == 3
    assert answer.answers[0].label == answer.evidence.candidates[0]["label"] and not answer.trace.llm_calls
    assert answer.trace.subgraph["pattern"] == "country-region" and answer.evidence.facts
    known = next((s, o) for s, r, o in built.facts if r == "locatedin" and o in ("africa", "europe", "asia") and s[0] != "_")
    stored = run(f"Which region is {known[0].replace('_', ' ')} located in?", [known[0]])
    assert [a.label for a in stored.answers] == [known[1]] and stored.answers[0].match == "subgraph"
    predicted = build_runner("glow", store, None, tmp / "ckpt", {"use_stored": False})(f"Which region is {known[0]} located in?", [known[0]])
    assert predicted.answers[0].match == "predicted"


def test_glow_with_a_scripted_llm_maps_the_reply_onto_a_label_in_one_call(world):
    built, tmp, _, _, store = world
    q = built.questions[0]
    for reply, label in (("Europe", "europe"), ("It is in Southern Africa.", "africa"), ("Mars", None)):
        answer = build_runner("glow", store, ScriptedLLM([reply]), tmp / "ckpt", {"choose": "generate"})(q["question"], q["topics"])
        assert len(answer.trace.llm_calls) == 1
        assert (answer.answers[0].label if answer.answers else None) == label
        assert (answer.declined is not None) == (label is None)
    failed = build_runner("glow", store, ScriptedLLM(["!error"]), tmp / "ckpt")(q["question"], q["topics"])
    assert failed.answers[0].match == "predicted" and "LLM failed" in failed.trace.fallback


def test_calibrated_labels_rank_by_what_the_prompts_content_adds_over_the_prior(world):
    """A scorer that likes " europe" whatever the prompt, and raises the gold label only when it sees
    the entity: by likelihood alone europe wins; calibrated (the default) against the prompt with the
    question's fields blanked, the gold label does, in one recorded call whose tokens count both
    prompts (variant G, whose prior is the KG's class shares, so that the GNN cannot be what picks
    gold). A scorer the prompt does not move at all leaves only the prior to decide: the GNN's
    prediction for the entity where the prompt shows the GNN's answers (GN, N), the KG's class shares
    where it does not (G, L)."""
    built, tmp, _, _, store = world
    q = next(q for q in built.questions if "europe" not in q["answers"])
    entity, gold = q["topics"][0], q["answers"][0]

    def score(prompt: str, label: str) -> float:
        prior = -0.5 if label == " europe" else -5.0
        return prior + (3.0 if label == f" {gold}" and entity in prompt else 0.0)

    picked = {}
    for name, options in (("plain", {"calibrate": False}), ("default", {})):
        scorer = ScriptedScorer(score)
        answer = build_runner("glow", store, scorer, tmp / "ckpt", {**options, "variant": "g", "use_stored": False})(q["question"], q["topics"])
        [call] = answer.trace.llm_calls
        picked[name] = (answer.answers[0].label, answer.answers[0].match)
        assert len(scorer.scored) == (1 if name == "plain" else 2)
        assert call.prompt_tokens == sum(len(prompt.split()) for prompt, _ in scorer.scored)
    assert picked == {"plain": ("europe", "label:likelihood"), "default": (gold, "label:calibrated")}
    blank = scorer.scored[1][0]
    assert "N/A" in blank and entity not in blank and "associated triples. [N/A]" in blank
    assert "[africa, americas, asia, europe, oceania]" in blank  # the pattern's label set stays

    shares = GLOWAnswerer(store, tmp / "ckpt").checkpoint.class_prior["country-region"]
    assert abs(sum(shares) - 1) < 1e-6 and len(set(round(x, 3) for x in shares)) > 1
    labels = ["africa", "americas", "asia", "europe", "oceania"]
    gnn_only = build_runner("glow", store, None, tmp / "ckpt", {"use_stored": False})
    gnn_top = [gnn_only(q["question"], q["topics"]).answers[0].label for q in built.questions]
    assert len(set(gnn_top)) > 1  # else the two priors below could not be told apart
    for variant, expected in (("gn", gnn_top), ("n", gnn_top), ("g", [labels[shares.index(max(shares))]] * len(gnn_top)),
                              ("l", [labels[shares.index(max(shares))]] * len(gnn_top))):
        flat = ScriptedScorer(lambda prompt, label: -1.0)
        unmoved = build_runner("glow", store, flat, tmp / "ckpt", {"variant": variant, "use_stored": False})
        assert [unmoved(q["question"], q["topics"]).answers[0].label for q in built.questions] == expected, variant
        assert len(flat.scored) == len(built.questions) + 1  # the content-free prompt, the same for every question, is scored once
        if variant == "gn":
            assert "GNN Answer: [N/A]" in flat.scored[1][0] and "associated triples. [N/A]" in flat.scored[1][0]


def test_the_gnns_distribution_keeps_its_top_classes_and_ranks_the_others_below_them():
    """An entity's prior in GN and N: the stored top classes as predicted; the remaining mass spread
    over the other classes by their KG shares, none above the smallest stored probability."""
    import numpy as np

    from kgqa.methods.glow.answer import GLOWCheckpoint

    checkpoint = object.__new__(GLOWCheckpoint)
    checkpoint.classes = {"p": np.array([[3, 0], [5, 4]], dtype=np.int16)}
    checkpoint.scores = {"p": np.array([[0.5, 0.3], [0.2, 0.1]], dtype=np.float32)}
    checkpoint.class_prior = {"p": [0.4, 0.1, 0.1, 0.1, 0.1, 0.2]}
    confident = checkpoint.distribution("p", 0)  # 0.2 left for classes 1, 2, 4, 5 (shares 1:1:1:2)
    assert np.allclose(confident, [0.3, 0.04, 0.04, 0.5, 0.04, 0.08])
    unsure = checkpoint.distribution("p", 1)  # 0.7 left for classes 0-3 (shares 4:1:1:1): class 0 capped at 0.1
    assert np.allclose(unsure, [0.1, 0.1, 0.1, 0.1, 0.1, 0.2])
    assert max(unsure[:4]) <= float(checkpoint.scores["p"][1].min()) and checkpoint.class_prior["p"] == [0.4, 0.1, 0.1, 0.1, 0.1, 0.2]


def test_llm_linking_reads_the_schema_line_it_chose():
    """App. A.1's linking prompt over FB15k-237's patterns: the BGP line of the reply names the pattern
    (as written, or with words around it); a line that fits no pattern or several is an LLMError."""
    from kgqa.llm.protocol import LLMError
    from kgqa.llm.session import LLMSession
    from kgqa.methods.glow.llm_link import Understood, pick_pattern, schema, understand

    patterns = load_patterns("fb15k237").patterns
    assert "film, film of / nationality, nationality" in schema(patterns).splitlines()
    asked = Understood("film", "Kismet", "language")
    for reply, name in (("film\n2- film, label, text\n3- film, language, language", "film-language"),
                        ("film\n2- film, label, text\n3- film, film of / nationality, nationality", "film-director-nationality"),
                        ("person\n3- The BGP is: person, nationality, nationality.", "person-nationality")):
        llm = ScriptedLLM([reply])
        assert pick_pattern(LLMSession(llm, max_calls=1), asked, patterns).name == name, reply
        assert schema(patterns) in llm.prompts[0] and "describe the film language" in llm.prompts[0]
    for reply in ("film\n3- film, budget, money", "film\n3- film", "no idea"):
        with pytest.raises(LLMError, match="not one schema line"):
            pick_pattern(LLMSession(ScriptedLLM([reply]), max_calls=1), asked, patterns)
    llm = ScriptedLLM([" film 2-Main Entity: Kismet 3-Prediction label: language 4-KG name: FB15k-237"])
    assert understand(LLMSession(llm, max_calls=1), "What language is the film Kismet in?") == Understood("film", "Kismet", "language")
    assert "Question: What language is the film Kismet in?" in llm.prompts[0]
    with pytest.raises(LLMError, match="no main entity"):
        understand(LLMSession(ScriptedLLM(["film"]), max_calls=1), "What language is Kismet in?")


def test_glow_with_llm_linking_spends_two_calls_then_answers_and_falls_back_on_an_unreadable_reply(world):
    built, tmp, _, _, store = world
    q = built.questions[0]
    entity = q["topics"][0]
    understood = f"country\n2-Main Entity: {entity}\n3-Prediction label: region\n4-KG name: countries"
    options = {"choose": "generate", "link": "llm", "use_stored": False}
    llm = ScriptedLLM([understood, "country\n2- country, label, text\n3- country, locatedin, region", "Europe"])
    answer = build_runner("glow", store, llm, tmp / "ckpt", options)(f"Where on Earth would I find {entity}? Which region?")
    assert [c.purpose for c in answer.trace.llm_calls] == ["glow.understand", "glow.link", "glow.gn"]
    assert answer.trace.subgraph["pattern_linked_by"] == "llm" and answer.topics[0]["label"].replace("_", " ") == entity.replace("_", " ")
    assert [a.label for a in answer.answers] == ["europe"] and answer.trace.fallback is None
    assert "KG Schema:\ncountry, locatedin, region\ncountry, label, text\n" in llm.prompts[1]
    unreadable = ScriptedLLM([understood, "3- planet, orbits, star", "Europe"])
    fallen = build_runner("glow", store, unreadable, tmp / "ckpt", options)(q["question"], q["topics"])
    assert "LLM linking failed" in fallen.trace.fallback and fallen.trace.subgraph["pattern_linked_by"] == "phrasings"
    assert len(fallen.trace.llm_calls) == 3 and [a.label for a in fallen.answers] == ["europe"]
    elsewhere = ScriptedLLM([understood.replace(entity, "Atlantis"), "country\n3- country, locatedin, region", "Europe"])
    found = build_runner("glow", store, elsewhere, tmp / "ckpt", options)(q["question"])  # a mention the KG lacks: the question is linked
    assert found.topics and found.topics[0]["label"].replace("_", " ") == entity.replace("_", " ")
    assert found.declined is None and found.trace.fallback is None and [a.label for a in found.answers] == ["europe"]


def test_kgqa_openworld_build_then_train_then_ask(tmp_path):
    out = tmp_path / "ow"
    built = kgqa("openworld", "build", str(countries_s1() / "train.txt"), "--kg", "countries", "--patterns", "countries",
                 "--held-out", str(countries_s1() / "test.txt"), "--out", str(out))
    assert built.returncode == 0, built.stderr[-2000:]
    assert json.loads((out / "manifest.json").read_text())["questions"] == {"country-region": 24}
    trained = kgqa("train", "--method", "glow", "--openworld", str(out), "--out", str(tmp_path / "ckpt"), "--epochs", "40")
    assert trained.returncode == 0, trained.stderr[-2000:]
    assert "country-region: validation accuracy" in trained.stdout
    url = f"oxigraph://{tmp_path / 'store'}"
    assert kgqa("load", str(out / "kg.tsv"), "--kg", "countries", "--store", url).returncode == 0
    q = json.loads((out / "questions.jsonl").read_text().splitlines()[0])
    asked = kgqa("ask", q["question"], "--method", "glow", "--store", url, "--checkpoint", str(tmp_path / "ckpt"), "--json")
    assert asked.returncode == 0, asked.stderr[-2000:]
    answer = json.loads(asked.stdout)
    assert answer["answers"][0]["match"] == "predicted" and answer["trace"]["subgraph"]["pattern"] == "country-region"
    shown = kgqa("ask", q["question"], "--method", "glow", "--store", url, "--checkpoint", str(tmp_path / "ckpt"))
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert answer["answers"][0]["label"] in shown.stdout and "pattern country-region · 5 classes" in shown.stdout
    bad = kgqa("openworld", "build", str(countries_s1() / "train.txt"), "--kg", "countries", "--patterns", "nowhere", "--out", str(tmp_path / "x"))
    assert bad.returncode == 2 and "nowhere" in bad.stderr


def test_the_relational_conv_is_pygs_rgcnconv_with_mean_aggregation():
    import numpy as np
    import torch
    from torch_geometric.nn import RGCNConv

    from kgqa.methods.glow.rgcn import RelationalConv, SortedEdges

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    edge_index, edge_type = rng.integers(0, 40, (2, 300)), rng.integers(0, 6, 300)
    x = torch.randn(40, 8)
    mine = RelationalConv(8, 4, 6, 3)
    reference = RGCNConv(8, 4, 6, num_bases=3, aggr="mean")
    reference.load_state_dict(mine.state_dict())
    expected = reference(x, torch.from_numpy(edge_index), torch.from_numpy(edge_type))
    assert torch.allclose(mine(x, SortedEdges.of(edge_index, edge_type, 6, 40)), expected, atol=1e-5)


@pytest.mark.parametrize("variant,floor", [("S1", 0.9), ("S2", 0.75)])
def test_the_bundled_countries_checkpoints_predict_the_held_out_regions(variant, floor, tmp_path):
    """The bundled checkpoints, through the registry with no --checkpoint: the store's KG name picks
    them. Their questions' facts were held out of training (Countries' valid and test facts)."""
    folder = shared_data("countries", f"countries_{variant}")
    kg = f"countries-{variant.lower()}"
    held = read_facts(folder / "valid.txt") + read_facts(folder / "test.txt")
    world = build(kg, read_facts(folder / "train.txt"), load_patterns("countries"), held_out=held)
    world.write(tmp_path)
    writer = EmbeddedWriter.open(None, kg)
    load_file(writer, tmp_path / "kg.tsv", "tsv")
    run = build_runner("glow", writer.reader(), None)
    hits = [run(q["question"], q["topics"]).answers[0].label in q["answers"] for q in world.questions]
    assert len(hits) == 48 and sum(hits) / len(hits) >= floor



def test_questions_phrased_freely_find_their_pattern():
    from kgqa.methods.glow.answer import CHECKPOINTS

    answerer = GLOWAnswerer(None, CHECKPOINTS / "fb15k237-ow")  # the pattern is read from the question alone
    for question, entity, pattern in [
        ("Where is Tom Hanks a citizen?", "Tom Hanks", "person-nationality"), ("Is Meryl Streep female?", "Meryl Streep", "person-gender"),
        ("What job does Tom Hanks have?", "Tom Hanks", "person-profession"), ("Which language is spoken in the movie Amelie?", "Amelie", "film-language"),
        ("Which country produced the film Amelie?", "Amelie", "film-country"), ("What is the genre of Titanic?", "Titanic", "film-genre"),
        ("what nationality is the person who directed Titanic", "Titanic", "film-director-nationality"),
    ]:
        assert answerer.pick_pattern(question, entity)[0].name == pattern, question


def test_the_judge_matches_exactly_and_reads_the_llm_judges_pairs():
    from kgqa.llm.protocol import LLMError
    from kgqa.methods.glow.judge import exact_match, llm_judge

    assert exact_match("United States of America", ["united states of america"]) and not exact_match("USA", ["United States of America"])
    assert not exact_match(None, ["x"])
    judge = ScriptedLLM(["[[0,1],[1,1]]", "I think they match"])
    assert llm_judge(judge, [("painter", "artist"), ("Europe", "europe")]) == [(0, 1), (1, 1)]
    assert "[[painter, artist], [Europe, europe]]" in judge.prompts[0] and "exactly 2 pairs" in judge.prompts[0]
    with pytest.raises(LLMError, match="not 1 pairs"):
        llm_judge(judge, [("a", "b")])
