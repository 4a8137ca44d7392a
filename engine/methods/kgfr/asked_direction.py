"""Which way a relation is asked (kgfr/answer_kind.py reads it with the answer's kind): "who does X know" asks whom X
knows, not who knows X. A pooled reading of the question hears "know" in `knows` read either way ("known by", 2.51
against "knows" 0.91 for the bundled path reader); the word order says which: the topic, asked with "do", is the one
who does it. Likewise "in what country is X" asks what X is in, not what is in X: the university located in the
city X is no answer."""

from __future__ import annotations

import numpy as np

from kgqa.core.subgraph import Subgraph
from kgqa.methods.kgfr.asked_kind import subject_verb, topic_is_in
from kgqa.methods.kgfr.literal_kind import fact_ends
from kgqa.retrieval.relation_text import relation_words

VERB_FLOOR = 0.7  # a verb must read this much like a relation's words to say it ("works" ~ `works for` 0.75, "married" ~ `spouse of` 0.69)


def wrong_direction(sg: Subgraph, probe: str, encoder) -> np.ndarray:  # type: ignore[no-untyped-def]
    """The topics' neighbours that do to a topic what the question asks the topic does to them (a bool per node): for
    "who does X know", those who know X and whom X does not know. Only relations whose words are active ("knows", not
    "directed by") and read like the verb, as said ("know") or of one ("knows"; VERB_FLOOR), and only where the topic
    does it to someone in the subgraph."""
    mismatch = np.zeros(sg.num_nodes, dtype=bool)
    verb = subject_verb(probe)
    if (verb is None and not topic_is_in(probe)) or sg.num_edges == 0:
        return mismatch
    words = [relation_words(label)[1] for label in sg.relation_labels]
    if verb is None:  # "X is in": the relations whose words say so ("located in", "set in")
        said = np.flatnonzero(np.asarray([w == "in" or w.endswith(" in") for w in words], dtype=bool))
    else:
        reads = (encoder.encode(words) @ encoder.encode([verb, verb + "s"]).T).max(axis=1)
        said = np.flatnonzero((reads >= VERB_FLOOR) & np.asarray([not w.endswith(" by") for w in words], dtype=bool))
    subject, obj = fact_ends(sg)
    is_topic = np.zeros(sg.num_nodes, dtype=bool)
    is_topic[np.asarray(sg.topics, dtype=np.int64)] = True
    asked = np.isin(np.asarray(sg.edge_type) // 2, said)
    forward, backward = asked & is_topic[subject], asked & is_topic[obj]
    if not forward.any():
        return mismatch
    mismatch[subject[backward]] = True
    mismatch[obj[forward]] = False
    mismatch[is_topic] = False
    return mismatch
