"""A "who" question that the KG's facts read as asking for no one is declined (issue 46, part 4: knowing what the
KG lacks; for KGs without types).

"Who is the mayor of X", "who is the CEO of X", "who are the children of X", asked of the scale KG (`bench/scale_kg.py`),
which holds none of these, were answered with a person after the kind rules moved the scorer's own best candidate, a
city, last (kgfr/answer_kind.py): the scorer had read the question as the facts nearest in words (`located in`,
`headquartered in`), and the person left first answered nothing asked. Where a question asks for someone ("who", not
"who is X", which may ask what X is; "which people", `names_people`) and the scorer's best candidate is no one — a
place (the object of a relation that says where, `organisation_kind.places`), a common noun (`asked_who.uncased`), a
year or a number — the answer is declined. Measured before it was made, on the questions it reads (the scorer's best
no one): the plain people KG's 1 / 2-hop and the scale KG's 75 gave 24 such answerable questions, every one answered
wrong ("who employs X": an occupation read, a colleague answered); its lacking set 18 (13 answered); MetaQA's free
words 3 (1 answered right: a year read, the director answered), its free-lacking 2, held-out none.

Only where the KG shows no kinds (`containment.shows_kinds`): in a typed KG a country may be who ("who did France
surrender to")."""

from __future__ import annotations

import numpy as np
import torch

from kgqa.core.subgraph import Subgraph
from kgqa.methods.kgfr.asked_kind import WHO, asked_kind, names_people
from kgqa.methods.kgfr.asked_who import describes_topic, uncased
from kgqa.methods.kgfr.containment import shows_kinds
from kgqa.methods.kgfr.literal_kind import literal_nodes
from kgqa.methods.kgfr.organisation_kind import places


def asks_for_someone(probe: str) -> bool:
    """"who directed X", "by whom …", "which people …"; not "who is X" (the probe: topics masked)."""
    asked = asked_kind(probe)
    if asked.literal != "entity":
        return False
    return names_people(asked) or (asked.noun is None and WHO.search(probe.lower()) is not None and not describes_topic(probe))


def no_one(sg: Subgraph) -> np.ndarray:
    """The nodes (a bool per node) that are no one: places, common nouns in a KG of names with capitals, years and numbers."""
    literal = np.asarray([kind in ("time", "number") for kind in literal_nodes(sg)], dtype=bool)
    return places(sg) | uncased(sg) | literal


def reads_no_one(sg: Subgraph, scores: torch.Tensor, probe: str) -> str | None:
    """The label of the scorer's best candidate where the question asks for someone and that candidate is no one, in a KG
    without kinds; None otherwise. `scores`: the scorer's own, before any rule moved a candidate."""
    if sg.num_edges == 0 or not torch.isfinite(scores).any() or not asks_for_someone(probe) or shows_kinds(sg):
        return None
    best = int(torch.argmax(scores))  # candidates out of the running score −inf
    return sg.node_labels[best] if no_one(sg)[best] else None
