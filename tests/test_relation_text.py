"""Relation text from any naming convention, both directions (KGFR §IV-A)."""

from __future__ import annotations

import pytest

from kgqa.retrieval.relation_text import freebase_object_word, freebase_subject_type, readable_relation, relation_description, relation_question, relation_words, singular


@pytest.mark.parametrize("label, words", [
    ("directed_by", "directed by"),  # snake_case (MetaQA)
    ("hasCapital", "has capital"),  # camelCase
    ("/film/film/directed_by", "directed by"),  # Freebase property path
    ("/people/person/nationality", "nationality"),
    ("/film/film/release_date_s./film/film_regional_release_date/film_release_region", "release date film release region"),  # a CVT path
    ("http://dbpedia.org/ontology/birthPlace", "birth place"),  # an IRI: its local name
    ("http://www.w3.org/2000/01/rdf-schema#subClassOf", "sub class of"),
    ("urn:kgqa:kg:x:r:located-in", "located in"),
    ("isa", "is a"),
])
def test_relation_words_read_the_same_whatever_the_convention(label, words):
    assert readable_relation(label) == words


@pytest.mark.parametrize("label, inverse", [
    ("directed_by", "directed"),  # (Kismet, directed by, Borzage) read from Borzage: "Borzage directed Kismet"
    ("written_by", "wrote"),  # an irregular participle reads as the active past: "Hecht wrote Kismet"
    ("/film/film/directed_by", "directed"),
    ("hasCapital", "capital of"),
    ("nationality", "nationality of"),
    ("part_of", "has part"),
    ("affects", "affected by"),  # a verb: its passive
    ("carries_out", "carried out by"),
    ("located_in", "is what something is located in"),
    ("in_language", "language of"),
    ("/sports/sports_team_location/teams", "teams of"),  # Freebase names are nouns, never verbs
    ("isa", "has instance"),
])
def test_inverse_relations_are_phrased_from_the_object(label, inverse):
    assert relation_description(label, True) == inverse
    assert relation_description(label, False) != inverse


def test_descriptions_override_and_the_first_checkpoints_style_is_kept():
    assert relation_description("directed_by", True, style="v1") == "inverse of: directed by"
    assert relation_description("/film/film/genre", False, style="v1") == "film film genre"  # as that checkpoint was trained
    assert relation_description("directed_by", False, {"directed_by": "the film's director"}) == "the film's director"
    assert relation_description("directed_by", True, {"directed_by⁻¹": "films by this director"}) == "films by this director"
    assert relation_description("directed_by", True, {"directed_by": "the film's director"}) == "inverse of: the film's director"
    with pytest.raises(ValueError, match="style"):
        relation_description("directed_by", True, style="v9")


@pytest.mark.parametrize("label, inverse, asked", [
    ("/film/film/directed_by", False, "what directed something"),  # (film, directed by, ?) from the film
    ("/film/film/directed_by", True, "what directed by something"),
    ("complicates", True, "what complicates something"),  # (?, complicates, X) from X
    ("complicates", False, "what complicated by something"),
    ("located_in", False, "what something is located in"),  # the inverse phrasing is already a question
])
def test_relation_questions_put_the_answer_where_the_wh_word_stands(label, inverse, asked):
    assert relation_question(label, inverse) == asked


def test_relation_questions_follow_given_descriptions():
    assert relation_question("directed_by", False, {"directed_by⁻¹": "films by this director"}) == "what films by this director something"
    assert relation_question("directed_by", False, {"directed_by": "the film's director"}) == "something the film's director what"  # no "inverse of: …"


@pytest.mark.parametrize("label, subject_type", [
    ("/people/person/spouse_s./people/marriage/spouse", "person"),
    ("/location/country/capital", "country"),
    ("/base/aareas/schema/administrative_area/administrative_parent", "administrative area"),
    ("/film/film/directed_by", "film"),
    ("/common/topic", None),  # no property: no subject type
    ("located_in", None),
    ("http://example.org/ontology/birthPlace", None),
])
def test_a_freebase_property_names_its_subjects_type(label, subject_type):
    assert freebase_subject_type(label) == subject_type


@pytest.mark.parametrize("label, object_word", [
    ("/people/person/employment_history./business/employment_tenure/company", "company"),  # the last property
    ("/people/person/place_of_birth", "place of birth"),
    ("/film/film/directed_by", "directed by"),
    ("located_in", None),
])
def test_a_freebase_property_names_what_its_objects_are(label, object_word):
    assert freebase_object_word(label) == object_word


@pytest.mark.parametrize("label, words", [
    ("/people/person/spouse_s./people/marriage/spouse", "spouse"),  # the models read "spouse spouse"; questions say it once
    ("/film/film/starring./film/performance/actor", "starring actor"),  # nothing shared: both properties said
    ("/sports/sports_league/teams./sports/sports_league_participation/team", "teams"),
    ("/film/film/film_festivals", "film festivals"),  # no compound: as readable_relation
])
def test_questions_say_a_word_both_properties_of_a_compound_path_share_once(label, words):
    assert relation_words(label)[1] == words


def test_the_models_text_of_a_compound_path_keeps_both_properties():
    assert readable_relation("/people/person/spouse_s./people/marriage/spouse") == "spouse spouse"  # what KGFR trained on


@pytest.mark.parametrize("word, one", [("films", "film"), ("genres", "genre"), ("companies", "company"), ("business", "business"), ("class", "class"), ("bus", "bus")])
def test_singular_drops_a_plurals_s_only(word, one):
    assert singular(word) == one
