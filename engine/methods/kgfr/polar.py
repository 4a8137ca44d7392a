"""Questions asked yes or no of two entities the KG holds ("was Kismet directed by William Dieterle", "did Ann
work for Acme"). Read from the entity the question names first, its subject, with the other left out ("was
something directed by"), the sentence encoder says which relation of the KG the question reads like, each as its
name reads. "Yes" where a fact of the subgraph links the subject to the other by that relation, and it reads so by
`YES_MARGIN` more than any other relation of the KG does; the fact is the evidence. Anything else is declined
(kgfr/answer.py): a KG that does not link the two, or links them by a relation the question does not name ("did
Ronald Colman direct Kismet": he starred in it; "was Kismet written by William Dieterle": he directed it, and
`written by` reads better), holds no fact that says yes, and a fact it lacks is no "no". The path reader is not
asked: trained on questions that ask for an entity, it reads "did something direct" as no path at all, and a
relation as well as any other where the subject has no other."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from kgqa.core.subgraph import Subgraph
from kgqa.methods.kgfr.confidence import relation_probe
from kgqa.methods.kgfr.path_reader import hop_texts
from kgqa.methods.kgfr.scorer import edge_arrays
from kgqa.retrieval.relation_text import TOPIC_MASK, relation_description

YES_MARGIN = 0.05  # cosine by which the linking relation must read better than any other (README, "Asked yes or no")


@dataclass(frozen=True)
class Link:
    edge: int  # the fact from the subject to another topic, an edge id as `edge_arrays` numbers them
    relation: str  # its relation, as walked ("directed by")
    margin: float  # how much better it reads than the best other relation of the KG or the subgraph (negative: another reads better)


def subject_probe(question: str, topics: Sequence[Mapping]) -> tuple[int, str] | None:
    """Which of the linked `topics` (`Linking.topics_json()`) the question names first, and the question with that one
    masked and the others left out ("was something directed by"); None for fewer than two topics named."""
    said = sorted((question.lower().find(str(t["query"]).lower()), i) for i, t in enumerate(topics) if str(t["query"]).strip())
    said = [(at, i) for at, i in said if at >= 0]
    if len(said) < 2:
        return None
    first = said[0][1]
    probe = relation_probe(relation_probe(question, [topics[i] for _, i in said[1:]]), [topics[first]]).replace(TOPIC_MASK, "\0", 1)
    return first, re.sub(r"\s+(?=[?.!,]|$)|(?<=\s)\s+", "", probe.replace(TOPIC_MASK, "").replace("\0", TOPIC_MASK)).strip()


def link_reading(sg: Subgraph, question: str, topics: Sequence[Mapping], encoder, relations: Sequence[str] = ()) -> Link | None:  # type: ignore[no-untyped-def]
    """The fact linking the question's subject to another topic whose relation reads the question best, and by how
    much it reads better than the best other relation of the KG (`relations`, the KG's relation labels) and of the
    subgraph; None where there are not two topics named or no fact links them."""
    asked = subject_probe(question, topics)
    if asked is None or sg.num_edges == 0:
        return None
    first, probe = asked
    subject = sg.nodes.index(str(topics[first]["iri"]))
    src, dst, types = edge_arrays(sg)
    is_topic = np.zeros(sg.num_nodes, dtype=bool)
    is_topic[np.asarray(sg.topics, dtype=np.int64)] = True
    is_topic[subject] = False
    links = np.flatnonzero((src == subject) & is_topic[dst])
    if links.size == 0:
        return None
    labels = sorted(set(sg.relation_labels) | set(relations))
    # each relation as its name reads, forward: an inverse's "is what something works for" reads like any question
    reads = dict(zip(labels, (encoder.encode([relation_description(label, False) for label in labels]) @ encoder.encode([probe])[0]).tolist()))
    best = max(dict.fromkeys(sg.relation_labels[int(t) // 2] for t in types[links]), key=reads.__getitem__)
    edge = int(links[[sg.relation_labels[int(t) // 2] == best for t in types[links]]][0])
    return Link(edge, hop_texts(sg, [int(types[edge])])[0], reads[best] - max((v for label, v in reads.items() if label != best), default=-1.0))


def says_yes(link: Link | None) -> bool:
    return link is not None and link.margin >= YES_MARGIN
