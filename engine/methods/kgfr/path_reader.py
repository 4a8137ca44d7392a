"""Path-aware reading (issue 46): the question (topics masked) is read against each relation path
that reaches a candidate answer from a topic, so that which relation comes last — what is asked
for — and how many hops the question spans are read in order, which one pooled sentence vector
(KGFR's q, the text prior's cosine) barely keeps.

Paths are grouped by relation sequence ("directed by → directed", whatever the films). A node's
reading is the best score among the groups that reach it; the fused score is
c + γ·(reading − best reading) over every node a group reaches, c + γ·(worst − best) elsewhere. The
model's own scores still feed confidence and declining (calibrated on them), the fused ones the
ranking, the margin answer set and the evidence.

The model (`PathReaderModel`) reads per-hop instructions from the question's tokens and matches each
against that hop's relation text; it is trained listwise: a softmax over a question's groups and one
more option, "no path reads it", the target spread over the groups whose reached set best matches the
gold answers, or on that option for a question the KG cannot answer (bench/path_reader.py builds the
data, in-domain unanswerable questions included, and trains it). How far that option beats the best
group (`Reading.lacking`) is a signal of answerability (kgfr/confidence.py)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache, cached_property
from pathlib import Path
from typing import Protocol

import numpy as np
import torch

from kgqa.core.subgraph import Subgraph
from kgqa.retrieval.relation_text import relation_description

MAX_PATH = 3  # edges
MAX_SEQUENCES = 400  # relation sequences followed per question (hubs of many relation types)
MAX_GROUPS = 24  # groups read per question: those reaching the scorer's top nodes, shortest first
MAX_GROUPS_ALL = 256  # groups read per question when every group of the subgraph is read, shortest first
FULL_READ_EDGES = 20_000  # up to this many edges, every group of the subgraph is read (MetaQA: ~5 ms)
READER_DIR = "path_reader"  # in a KGFR checkpoint folder: model.safetensors and config.json
ARROW = " → "


def path_groups(sg: Subgraph, max_len: int = MAX_PATH, targets: Sequence[int] | None = None) -> dict[tuple[int, ...], np.ndarray]:
    """Each relation-type sequence (types as in `Subgraph`: 2r + inverse) walked from the topics, of at
    most `max_len` edges → the nodes it ends on (topics excluded), as a sorted array. Breadth first:
    a sequence is extended by every edge type leaving the nodes it reached (edges looked up by their
    head, so a step costs the reached nodes' degrees, not the subgraph's size); walks may pass
    through a topic. With `targets`, a walk goes on only through nodes from which a target is still
    within reach (every fact is an edge both ways, so that is the undirected distance), and only
    sequences ending on a target are kept: on a dense 2-hop FB15k-237 subgraph (31k edges) this
    takes the cost from ~280 ms to a few. A step straight back along a relation that is one-to-one in
    the subgraph ends its walk: it returns to the node it came from (X → X's spouse → X), and read on,
    "spouse of → has spouse → born in" is X's own birthplace under the words of "X's husband's
    birthplace"; nor is that node read again under longer words ("located in → capital → capital of"
    is the country X lies in, which "which city is the capital of X's nation" reads best). Along a
    relation of many (a director's films), the way back to the topic alone is kept: "the genres of
    the films of X's director" holds X's own genres, MetaQA's answers too."""
    heads = np.concatenate([sg.edge_index[0], sg.edge_index[1]])
    tails = np.concatenate([sg.edge_index[1], sg.edge_index[0]])
    types = np.concatenate([sg.edge_type, sg.edge_type ^ 1])
    kinds_count = 2 * len(sg.relation_labels)  # edge types are 2·relation + inverse: below this
    kind_key = types.astype(np.int64) * sg.num_nodes
    is_topic = np.zeros(sg.num_nodes, dtype=bool)
    is_topic[np.asarray(sg.topics, dtype=np.int64)] = True
    near = _distance_to(targets, heads, tails, sg.num_nodes, max_len) if targets is not None else None
    by_head = _by_head(heads, sg.num_nodes)
    one_to_one = _one_to_one(sg)  # asked only where a walk comes back to the topics alone
    into_targets = _by_head(heads, sg.num_nodes, near[tails] == 0, by_head) if near is not None else by_head  # the last step's edges
    frontier: list[tuple[tuple[int, ...], np.ndarray]] = [((), np.flatnonzero(is_topic))]
    out: dict[tuple[int, ...], np.ndarray] = {}
    for step in range(1, max_len + 1):
        if not frontier:
            break
        # every sequence of the frontier stepped at once: its edges keyed (sequence, type, end), one np.unique
        order, ptr = into_targets if step == max_len else by_head
        reached = np.concatenate([nodes for _, nodes in frontier])
        sequence_of = np.repeat(np.arange(len(frontier)), [nodes.size for _, nodes in frontier])
        starts, lengths = ptr[reached], ptr[reached + 1] - ptr[reached]
        offsets = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        edges, sequence_of = order[np.repeat(starts, lengths) + offsets], np.repeat(sequence_of, lengths)
        if near is not None:  # only steps after which a target is still within reach (before sorting them: hubs)
            within = near[tails[edges]] <= max_len - step
            edges, sequence_of = edges[within], sequence_of[within]
        keys = np.unique(sequence_of * (kinds_count * sg.num_nodes) + kind_key[edges] + tails[edges])
        groups, ends = np.divmod(keys, sg.num_nodes)  # groups: sequence * kinds_count + type
        kept = ~is_topic[ends] & (near[ends] == 0 if near is not None else True)
        bounds = np.flatnonzero(np.diff(groups, prepend=-1))
        grown = []
        for group, start, stop, any_kept in zip(groups[bounds].tolist(), bounds.tolist(), [*bounds[1:].tolist(), keys.size],
                                             np.logical_or.reduceat(kept, bounds).tolist() if keys.size else []):
            sequence, kind = frontier[group // kinds_count][0], group % kinds_count
            part = ends[start:stop]
            if sequence and kind == sequence[-1] ^ 1 and one_to_one(kind // 2):
                continue  # straight back along a one-to-one relation: where it came from ("spouse of → has spouse")
            grown.append(((*sequence, kind), part, kept[start:stop] if any_kept else None))
        frontier = [(sequence, part) for sequence, part, _ in grown[:MAX_SEQUENCES]]
        out.update((sequence, part[keep]) for sequence, part, keep in grown[:MAX_SEQUENCES] if keep is not None)
    return out


def _one_to_one(sg: Subgraph) -> Callable[[int], bool]:
    """Whether a relation is one-to-one in the subgraph: no node is the subject of two of its facts, nor
    the object. Answered per relation asked (a mask over the edges), each once."""
    relation = np.asarray(sg.edge_type, dtype=np.int64) // 2

    @cache
    def one_to_one(r: int) -> bool:
        mask = relation == r
        return all(np.unique(np.asarray(ends)[mask]).size == int(mask.sum()) for ends in sg.edge_index)
    return one_to_one


def _by_head(heads: np.ndarray, num_nodes: int, keep: np.ndarray | None = None,
             everything: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Edge ids sorted by head (only those `keep` marks; taken from `everything`, the same sorted
    without `keep`, where given), and each node's range in them."""
    if everything is not None:
        order = everything[0][keep[everything[0]]]  # a stable order stays sorted when filtered
    else:
        ids = np.flatnonzero(keep) if keep is not None else np.arange(heads.shape[0])
        order = ids[_stable_order(heads[ids], num_nodes)]
    return order, np.searchsorted(heads[order], np.arange(num_nodes + 1))


def _stable_order(keys: np.ndarray, bound: int) -> np.ndarray:
    """`np.argsort(keys, kind="stable")` for integers in [0, bound): radix passes over 16-bit digits, lowest
    first (numpy sorts 16-bit integers by radix, wider ones by timsort: 1.4 against 15 ms for 193k edges)."""
    order = np.arange(keys.shape[0])
    for shift in range(0, max(1, int(bound - 1).bit_length()), 16):
        order = order[np.argsort(((keys[order] >> shift) & 0xFFFF).astype(np.uint16), kind="stable")]
    return order


def _distance_to(targets: Sequence[int], heads: np.ndarray, tails: np.ndarray, num_nodes: int, limit: int) -> np.ndarray:
    """Each node's distance (in edges, up to `limit`; beyond: limit + 1) to the nearest target."""
    far = limit + 1
    distance = np.full(num_nodes, far, dtype=np.int64)
    frontier = np.unique(np.asarray(targets, dtype=np.int64))
    distance[frontier] = 0
    for d in range(1, limit + 1):
        seen = np.zeros(num_nodes, dtype=bool)
        seen[frontier] = True
        met = np.zeros(num_nodes, dtype=bool)
        met[tails[seen[heads]]] = True
        nxt = np.flatnonzero(met & (distance == far))
        if nxt.size == 0:
            break
        distance[nxt] = d
        frontier = nxt
    return distance


def hop_texts(sg: Subgraph, sequence: Sequence[int]) -> list[str]:
    """Each edge's relation text, read in the direction walked."""
    return [relation_description(sg.relation_labels[t // 2], bool(t % 2)) for t in sequence]


def verbalise(sg: Subgraph, sequence: Sequence[int]) -> str:
    """"directed by → directed"."""
    return ARROW.join(hop_texts(sg, sequence))


def groups_for(sg: Subgraph, nodes: Sequence[int] | None, limit: int = MAX_GROUPS) -> list[tuple[tuple[int, ...], np.ndarray]]:
    """The groups that reach any of `nodes` (the scorer's top candidates; None: every group of the
    subgraph), walks no longer than the subgraph's hops, shortest first, at most `limit`."""
    max_len = min(MAX_PATH, max(1, sg.hops))
    found = list(path_groups(sg, max_len, targets=sorted(set(nodes)) if nodes is not None else None).items())
    found.sort(key=lambda item: (len(item[0]), item[0]))
    return found[:limit]


def groups_read(sg: Subgraph, top: Sequence[int]) -> list[tuple[tuple[int, ...], np.ndarray]]:
    """The groups the reader reads of a question: every group of a subgraph of up to FULL_READ_EDGES
    edges (the scorer may rank every director above every film: the path the question reads must be
    able to bring in answers it ranked low), else those reaching its `top` nodes (walking them all
    costs too much there)."""
    if sg.num_edges <= FULL_READ_EDGES:
        return groups_for(sg, None, MAX_GROUPS_ALL)
    return groups_for(sg, top, MAX_GROUPS)


@dataclass(frozen=True)
class ReaderConfig:
    weight: float  # γ
    top: int  # the scorer's top nodes re-ranked
    reads_lacking: bool = False  # trained with unanswerable questions: its "no path" option means something
    absent_margin: float | None = None  # declines a path the subgraph could hold and does not, read this much better (absent_path.py)


@dataclass
class Reading:
    """What the reader made of one question: each node a group reaches → its best group score, each
    group's text with its score, and `lacking`: the "no path reads it" score minus the best group's
    (None: a reader not trained for it, or no group to read); `sequences`: each group's relation
    sequence and the nodes it reaches, in the order of `groups` (empty where the reading was built
    without them)."""

    best: dict[int, float]
    groups: list[tuple[str, float]]
    lacking: float | None = None
    sequences: list[tuple[tuple[int, ...], np.ndarray]] = field(default_factory=list)

    @cached_property
    def _ranked(self) -> list[int]:
        """The groups' indices, best read first (ties in their order)."""
        return sorted(range(len(self.sequences)), key=lambda i: -self.groups[i][1])

    def sequence_to(self, node: int) -> tuple[int, ...] | None:
        """The relation sequence of the best-read group that reaches `node` (the path that won it its
        reading), or None where no group read reaches it."""
        for i in self._ranked:
            sequence, ends = self.sequences[i]
            at = int(np.searchsorted(ends, node))
            if at < ends.size and ends[at] == node:
                return sequence
        return None


def best_by_node(groups: Sequence[tuple[tuple[int, ...], np.ndarray]], scores: Sequence[float]) -> dict[int, float]:
    """Each node a group reaches → the best score among the groups reaching it."""
    reached = np.concatenate([ends for _, ends in groups])
    if reached.size == 0:
        return {}
    best_of = np.full(int(reached.max()) + 1, -np.inf)
    np.maximum.at(best_of, reached, np.repeat(np.asarray(scores, dtype=np.float64), [ends.size for _, ends in groups]))
    nodes = np.unique(reached)
    return dict(zip(nodes.tolist(), best_of[nodes].tolist()))


class Rereads(Protocol):
    """A second reader of a `Reading` (kgfr/cross_reader.py)."""

    def reread(self, reading: Reading, probe: str) -> Reading: ...


def _instruction_rows(lengths: torch.Tensor) -> torch.Tensor:
    """The query rows of a path of each length: length L owns rows L(L−1)/2 … L(L−1)/2 + L − 1."""
    start = lengths * (lengths - 1) // 2
    return start.unsqueeze(1) + torch.arange(MAX_PATH, device=lengths.device)  # rows past L belong to longer paths: masked


class PathReaderModel(torch.nn.Module):
    """Per-hop instructions read from the question's tokens (NSM / ReaRev style): for a path of L
    edges, L learned queries attend over the question's contextual token vectors (MiniLM, frozen),
    one instruction per hop, in order; each is matched against that hop's relation text vector
    (the sentence encoder's, frozen) through a learned map; the path's score is their mean cosine,
    scaled, plus how much the question reads like an L-hop question (a linear read of its mean token),
    plus how well the path covers the question's relation words: each token, weighted by a learned
    importance (softmax over the question), takes its best cosine with any of the path's relations.
    The instructions say whether the path's relations are asked for; coverage says whether anything
    asked for is left out — a one-hop path to the middle entity ("wrote", for "who filmed what X
    wrote") leaves "filmed" unexplained, where a mean of cosines does not see it.

        score(q, r_1..r_L) = s · mean_i cos(M·instr_{L,i}(q), u_{r_i}) + w_L·mean_t(h_t) + b_L
                             + s_c · Σ_t a_t(q) · max_i cos(C·h_t, u_{r_i})
        score(q, no path)  = w_∅·mean_t(h_t) + b_∅

    The question is read once per question, the relation texts once per KG (cached): a question
    costs one encoder pass plus a few small matrix products."""

    def __init__(self, dim: int = 384):
        super().__init__()
        rows = MAX_PATH * (MAX_PATH + 1) // 2
        self.queries = torch.nn.Parameter(torch.randn(rows, dim) * 0.02)
        self.keys = torch.nn.Linear(dim, dim, bias=False)
        self.match = torch.nn.Linear(dim, dim, bias=False)
        torch.nn.init.eye_(self.match.weight)
        self.length = torch.nn.Linear(dim, MAX_PATH)
        self.scale = torch.nn.Parameter(torch.tensor(5.0))
        self.lacks = torch.nn.Linear(dim, 1)
        self.importance = torch.nn.Linear(dim, 1)
        self.cover = torch.nn.Linear(dim, dim, bias=False)
        torch.nn.init.eye_(self.cover.weight)
        self.cover_scale = torch.nn.Parameter(torch.tensor(0.0))  # 0: a reader saved before coverage scores as it did

    def forward(self, tokens: torch.Tensor, mask: torch.Tensor, relations: torch.Tensor, lengths: torch.Tensor, owner: torch.Tensor) -> torch.Tensor:
        """tokens [Q, T, d], mask [Q, T] (True: a token) of Q questions; relations [B, MAX_PATH, d]
        (unit rows, zero padded), lengths [B] (1..MAX_PATH) and owner [B] (the question each path
        reads) of B paths → a score per path [B]. The question-side maps run once per question."""
        keys, values = self.keys(tokens)[owner], self.match(tokens)[owner]
        covering = torch.nn.functional.normalize(self.cover(tokens), dim=-1)[owner]
        path_mask = mask[owner]
        queries = self.queries[_instruction_rows(lengths)]  # [B, P, d]
        logits = torch.einsum("bpd,btd->bpt", queries, keys) / tokens.shape[-1] ** 0.5
        attention = torch.softmax(logits.masked_fill(~path_mask.unsqueeze(1), float("-inf")), dim=-1)
        instructions = torch.nn.functional.normalize(attention @ values, dim=-1)  # [B, P, d]: M·(attended tokens), M linear
        hops = torch.arange(MAX_PATH, device=tokens.device).unsqueeze(0) < lengths.unsqueeze(1)  # [B, P]
        cosines = (instructions * relations).sum(-1) * hops
        length_score = self.length(_pooled(tokens, mask))[owner].gather(1, (lengths - 1).unsqueeze(1)).squeeze(1)
        importance = torch.softmax(self.importance(tokens).squeeze(-1).masked_fill(~mask, float("-inf")), dim=-1)[owner]  # [B, T]
        coverage = _coverage(covering, path_mask, importance, relations, hops)
        return self.scale * cosines.sum(1) / lengths + length_score + self.cover_scale * coverage

    def no_path(self, tokens: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The score of "no path of the subgraph reads the question", per question [B]."""
        return self.lacks(_pooled(tokens, mask)).squeeze(1)

    def save(self, folder: Path, config: ReaderConfig, meta: dict) -> None:
        from safetensors.torch import save_file

        folder.mkdir(parents=True, exist_ok=True)
        save_file({k: v.detach().contiguous() for k, v in self.state_dict().items()}, str(folder / "model.safetensors"))
        margin = {} if config.absent_margin is None else {"absent_margin": config.absent_margin}
        (folder / "config.json").write_text(json.dumps({"weight": config.weight, "top": config.top, "reads_lacking": config.reads_lacking,
                                                        **margin, **meta}, indent=2) + "\n")

    @classmethod
    def load(cls, folder: Path) -> tuple["PathReaderModel", ReaderConfig]:
        from safetensors.torch import load_file

        spec = json.loads((folder / "config.json").read_text())
        model = cls()
        state = load_file(str(folder / "model.safetensors"))
        missing = set(model.state_dict()) - set(state)
        if missing - LACKING_PARTS - COVERAGE_PARTS:  # a reader saved before the "no path" option or coverage lacks only those
            raise ValueError(f"{folder / 'model.safetensors'}: not a path reader (missing {sorted(missing)})")
        model.load_state_dict(state, strict=False)
        model.eval()
        margin = spec.get("absent_margin")
        return model, ReaderConfig(float(spec["weight"]), int(spec["top"]), bool(spec.get("reads_lacking", False)) and not missing & LACKING_PARTS,
                                   None if margin is None else float(margin))


LACKING_PARTS = {"lacks.weight", "lacks.bias"}
COVERAGE_PARTS = {"importance.weight", "importance.bias", "cover.weight", "cover_scale"}


def _coverage(covering: torch.Tensor, mask: torch.Tensor, importance: torch.Tensor, relations: torch.Tensor, hops: torch.Tensor) -> torch.Tensor:
    """Σ_t a_t · max_i cos(C·h_t, u_{r_i}) per path [B]: the question's important tokens (`importance`,
    a_t), each explained by the path's relation that reads most like it (`covering`: C·h_t, unit)."""
    similarity = torch.einsum("btd,bpd->btp", covering, relations).masked_fill(~hops.unsqueeze(1), float("-inf"))
    return (importance * similarity.max(-1).values.masked_fill(~mask, 0.0)).sum(-1)


def _pooled(tokens: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return (tokens * mask.unsqueeze(-1)).sum(1) / mask.sum(1, keepdim=True).clamp(min=1)


def path_inputs(token_states: Sequence[np.ndarray], paths: Sequence[Sequence[np.ndarray]], owner: Sequence[int]) -> tuple[torch.Tensor, ...]:
    """Batch tensors for `PathReaderModel`: each question's tokens and mask once, and per path its
    relation vectors (one per hop), its length and `owner` (path j reads question `owner[j]`)."""
    width = max(s.shape[0] for s in token_states)
    dim = token_states[0].shape[1]
    tokens = torch.zeros(len(token_states), width, dim)
    mask = torch.zeros(len(token_states), width, dtype=torch.bool)
    for i, s in enumerate(token_states):
        tokens[i, : s.shape[0]] = torch.from_numpy(s)
        mask[i, : s.shape[0]] = True
    relations = torch.zeros(len(paths), MAX_PATH, dim)
    for j, hops in enumerate(paths):
        relations[j, : len(hops)] = torch.from_numpy(np.stack(hops))
    index = torch.as_tensor(owner, dtype=torch.long)
    lengths = torch.as_tensor([len(h) for h in paths], dtype=torch.long)
    return tokens, mask, relations, lengths, index


class PathReader:
    """The trained reader of a checkpoint, shared by the threads of a process; `cross`: the checkpoint's
    cross reader (kgfr/cross_reader.py), which re-reads the best groups, where it has one."""

    def __init__(self, folder: Path, cross: Rereads | None = None):
        self.model, self.config = PathReaderModel.load(folder)
        self.cross = cross
        self._lock = threading.Lock()

    def read(self, sg: Subgraph, probe: str, top: Sequence[int], encoder, states: np.ndarray | None = None) -> Reading:  # type: ignore[no-untyped-def]
        """The question's groups (`groups_read`, `top`: the scorer's top nodes), read. `states`: the
        probe's token states where the caller has them (`Scored.probe_states`), else the encoder's."""
        groups = groups_read(sg, top)
        if not groups:
            return Reading({}, [])
        texts = [hop_texts(sg, seq) for seq, _ in groups]
        scores, no_path = self.score_texts(texts, probe, encoder, states)
        reading = Reading(best_by_node(groups, scores), [(ARROW.join(hops), score) for hops, score in zip(texts, scores)],
                          None if no_path is None else no_path - max(scores), groups)
        return self.cross.reread(reading, probe) if self.cross is not None else reading

    def score_texts(self, texts: list[list[str]], probe: str, encoder, states: np.ndarray | None = None,  # type: ignore[no-untyped-def]
                    ) -> tuple[list[float], float | None]:
        """The score of each relation sequence given as its hops' texts, and that of "no path" (None for a
        reader not trained for it)."""
        vocabulary = sorted({t for hops in texts for t in hops})
        vectors = dict(zip(vocabulary, encoder.encode(vocabulary)))
        if states is None:
            [states] = encoder.token_states([probe])
        inputs = path_inputs([states], [[vectors[t] for t in hops] for hops in texts], [0] * len(texts))
        with self._lock, torch.inference_mode():
            scores = self.model(*inputs).float().tolist()
            no_path = float(self.model.no_path(inputs[0], inputs[1])) if self.config.reads_lacking else None
        return scores, no_path

    def fuse(self, scores: torch.Tensor, sg: Subgraph, probe: str, encoder, weight: float | None = None,  # type: ignore[no-untyped-def]
             states: np.ndarray | None = None) -> tuple[torch.Tensor, Reading]:
        """c + γ·(reading − best reading) for every node a group reaches — so that the path the
        question reads can bring in answers the scorer ranked low (it may put the path's middle
        entities, say every director, above every film) — and c + γ·(worst − best) for the rest
        (the groups read: `groups_read`)."""
        weight = self.config.weight if weight is None else weight
        finite = torch.isfinite(scores)
        order = [int(i) for i in torch.argsort(scores, descending=True)[: self.config.top] if finite[i]]
        reading = self.read(sg, probe, order, encoder, states)
        best = reading.best
        if not best:
            return scores, reading
        top_reading, worst = max(best.values()), min(best.values())
        fused = scores + weight * (worst - top_reading)
        nodes = torch.as_tensor(list(best), dtype=torch.long)
        shift = torch.as_tensor([weight * (value - top_reading) for value in best.values()], dtype=scores.dtype)
        kept = finite[nodes]
        fused[nodes[kept]] = scores[nodes[kept]] + shift[kept]
        return fused, reading
