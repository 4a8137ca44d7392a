"""Questions that read as a path the KG holds for others but not from their topic (kgqa.methods.kgfr.absent_path):
which sequences are absent from a real store's subgraph, how far the best of them reads above the held groups,
and the bundled checkpoint declining such a question on the demo KG, naming the path."""

from __future__ import annotations

from dataclasses import replace

import pytest
from conftest import DEMO_KG, subgraph_from_lines

from kgqa.loaders import load_file
from kgqa.methods.kgfr.absent_path import absent_reading, absent_sequences
from kgqa.methods.kgfr.answer import KGFRAnswerer
from kgqa.methods.kgfr.path_reader import PathReaderModel, Reading, ReaderConfig, path_groups, verbalise
from kgqa.sparql.embedded import EmbeddedWriter

LINES = [
    "Kismet|directed_by|William Dieterle",
    "Juarez|directed_by|William Dieterle",
    "Kismet|written_by|Edward Knoblock",
    "Kismet|starred_actors|Ronald Colman",
    "Random Harvest|starred_actors|Ronald Colman",
    "Random Harvest|directed_by|Mervyn LeRoy",
    "Random Harvest|written_by|Mervyn LeRoy",  # one of the two directors writes
    "Little Caesar|directed_by|Mervyn LeRoy",
    "Juarez|release_year|1939",  # three films of four have a year; Kismet has none here
    "Random Harvest|release_year|1942",
    "Little Caesar|release_year|1931",
    "Juarez|has_genre|Drama",  # one film of four has a genre: too few to ask it of Kismet
]


@pytest.fixture(scope="module")
def films(tmp_path_factory):
    sg = subgraph_from_lines(tmp_path_factory.mktemp("absent"), "films", LINES, "Kismet")
    held = list(path_groups(sg).items())
    texts = [verbalise(sg, sequence) for sequence, _ in held]
    scores = [3.0 if text == "directed by → directed" else 0.0 for text in texts]  # the reader's best group
    return sg, Reading({}, list(zip(texts, scores)), None, held)


def test_a_step_the_topics_kind_takes_and_it_does_not_is_absent(films):
    sg, reading = films
    absent = {verbalise(sg, sequence) for sequence in absent_sequences(sg, reading)}
    assert "release year" in absent  # other films have one
    assert "directed by → wrote" in absent  # LeRoy writes, Dieterle does not
    assert not absent & {text for text, _ in reading.groups}  # nothing the subgraph holds from Kismet
    assert "has genre" not in absent  # one film in four: not what films have
    assert "starred actors → directed" not in absent  # no actor directs


class Scores:
    """A reader whose scores are given per sequence text."""

    def __init__(self, by_text: dict[str, float]):
        self.by_text = by_text

    def score_texts(self, texts, probe, encoder, states=None):  # type: ignore[no-untyped-def]
        return [self.by_text.get(" → ".join(hops), -5.0) for hops in texts], None


def test_the_absent_path_that_reads_best_and_its_margin_over_the_held_groups(films):
    sg, reading = films
    found = absent_reading(Scores({"directed by → wrote": 4.5, "release year": 1.0}), sg, reading, "which films did the director of something write", None)
    assert found is not None and found.path == "directed by → wrote" and found.margin == pytest.approx(1.5)
    assert absent_reading(Scores({}), sg, Reading({}, []), "anything", None) is None  # nothing read: nothing to compare


@pytest.fixture(scope="module")
def demo():
    writer = EmbeddedWriter.open(None, "demo")
    load_file(writer, DEMO_KG)
    return writer.reader()


def test_the_bundled_checkpoint_declines_a_fact_its_kg_holds_for_others_only(demo):
    answerer = KGFRAnswerer(demo)
    margin = answerer.scorer.reader.config.absent_margin
    assert margin == 2.0  # the bundled reader's, from its config.json
    missing = answerer.answer("when was Black Fury released")  # the demo slice has no year for Black Fury, for most films one
    assert missing.signals["path_absent"] >= margin and not missing.answers
    assert missing.declined is not None and "“release year” from Black Fury" in missing.declined, missing.declined
    held = answerer.answer("when did Captain Blood come out")
    assert held.declined is None and held.answers[0].label == "1935" and held.signals["path_absent"] < margin
    assert KGFRAnswerer(demo, decline_below=0).answer("when was Black Fury released").answers  # declining off: answered


def test_a_readers_margin_is_saved_with_it(tmp_path):
    PathReaderModel().save(tmp_path / "reader", ReaderConfig(1.0, 5, absent_margin=2.5), {})
    assert PathReaderModel.load(tmp_path / "reader")[1].absent_margin == 2.5


def test_a_reader_without_a_margin_reads_no_absent_paths(demo):
    answerer = KGFRAnswerer(demo)
    bundled = answerer.scorer.reader.config
    answerer.scorer.reader.config = replace(bundled, absent_margin=None)  # a reader trained anew: none chosen for it
    try:
        result = answerer.answer("when was Black Fury released")
    finally:
        answerer.scorer.reader.config = bundled
    assert "path_absent" not in result.signals and "reads as" not in (result.declined or ""), result.declined
