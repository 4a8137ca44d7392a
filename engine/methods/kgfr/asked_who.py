"""What a "who" question cannot ask for (kgfr/answer_kind.py reads it).

Someone, a person or an organisation, and English writes their names with capitals: in a KG whose labels
are cased, a candidate whose label has letters and no capital is a common noun (an occupation, "carpenter";
an industry; a tag; a cause of death), no one (`uncased`). Measured where it mattered: "who employs X" and
"who does X's spouse work for" were answered with X's occupation (the people and scale KGs; types or not,
the occupation's relation reads like "employ"), "who are the brothers of the author who wrote …" with a
disease. A KG that writes every label in lower case (Nations' "usa", UMLS, Kinships' "person56") shows
nothing here, and neither does "who is X", which may ask what X is ("an actor"). "Where" is not read so:
a cell's "nucleus" or a cytoband "3q26.33" is where a protein works or a gene lies.

Nor, in a KG without types, a work (`works`): the film someone directed or wrote."""

from __future__ import annotations

import re

import numpy as np

from kgqa.core.subgraph import Subgraph
from kgqa.methods.kgfr.literal_kind import fact_ends
from kgqa.retrieval.relation_text import TOPIC_MASK, agent_noun, relation_words

# a KG that writes names with capitals: 0.6 to 0.94 of a MetaQA subgraph's labels (tags are lower case), 0.95 and more
# on the scale and people KGs; of a Countries subgraph's, 0 to 0.02 (15 subgraphs of each, 3 hops)
CASED_SHARE = 0.25
_WHO_IS_TOPIC = re.compile(rf"^\W*who\s+(?:is|was|are|were)\s+{TOPIC_MASK}(?!['’]s)\b")  # "who is X": what X is, maybe


def works(sg: Subgraph) -> np.ndarray:
    """In a KG without types, what a "who" question cannot ask for: the subject of a fact whose
    relation names its object's agent (a film `directed_by` or `written_by` someone) that is the object of
    no fact of the subgraph. "Who directed the scripts X wrote" is answered by the director, not by the
    script X wrote; a company that someone `works_for` is an object, and keeps its place ("who does X
    work for")."""
    agent = [kind == "passive" and agent_noun(words) is not None for kind, words in map(relation_words, sg.relation_labels)]
    mismatch = np.zeros(sg.num_nodes, dtype=bool)
    if sg.num_edges == 0 or not any(agent):
        return mismatch
    subject, obj = fact_ends(sg)
    mismatch[subject[np.asarray(agent)[np.asarray(sg.edge_type) // 2]]] = True
    mismatch[obj] = False
    return mismatch


def describes_topic(probe: str) -> bool:
    """Whether the question asks who its topic is ("who was Isaac Newton": a mathematician), not its possessive."""
    return _WHO_IS_TOPIC.match(probe.lower()) is not None


def uncased(sg: Subgraph) -> np.ndarray:
    """The nodes whose label has letters, none of them a capital, where a share (CASED_SHARE) of the subgraph's
    labels have a capital (a bool per node; all False in a KG of lower-case labels, and in one whose labels are
    lower case but a few: Countries' "Åland_islands"). Topics are no candidates."""
    lower = np.zeros(sg.num_nodes, dtype=bool)
    cased = np.zeros(sg.num_nodes, dtype=bool)
    for node, label in enumerate(sg.node_labels):
        if any(c.isalpha() for c in label):
            lower[node] = label == label.lower()
            cased[node] = not lower[node]
    cased[np.asarray(sg.topics, dtype=np.int64)] = False
    return lower if cased.any() and cased.sum() >= CASED_SHARE * (cased.sum() + lower.sum()) else np.zeros_like(lower)
