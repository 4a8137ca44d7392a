"""GraSP's graph encoder (eq. 2–4) and the map from its states to soft tokens (eq. 5).

One layer: a_ij = softmax_j(f(W(q‖h_i), W(h_j‖r_ij))) over the edges into i (eq. 3), with f a scaled
dot product and one W for both sides (the authors' code uses the plain dot product); then
h_i' = σ(Σ_j â_ij W⁽ˡ⁾h_j + b⁽ˡ⁾) with â = D^-1/2 A D^-1/2 and D the entity degrees (eq. 2, 4; the
authors' code has no degree normalisation). Every fact is passed both ways, its reverse with the
relation read backwards, and every entity has a self-loop with a learned relation vector. Entities
start from their label's sentence vector, relations from their text's, the question from its own.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch_geometric.nn import MessagePassing
from torch_geometric.utils import degree, softmax


class QuestionAttention(MessagePassing):
    def __init__(self, dim: int):
        super().__init__(aggr="add", node_dim=0)
        self.attend = nn.Linear(2 * dim, dim)  # W of eq. 3
        self.transform = nn.Linear(dim, dim, bias=False)  # W⁽ˡ⁾ of eq. 2
        self.bias = nn.Parameter(torch.zeros(dim))  # b⁽ˡ⁾
        self.scale = 1.0 / math.sqrt(dim)

    def forward(self, h: torch.Tensor, q: torch.Tensor, edge_index: torch.Tensor, relation: torch.Tensor) -> torch.Tensor:
        src, dst = edge_index
        n = h.shape[0]
        target = self.attend(torch.cat([q.expand(n, -1), h], dim=-1))
        neighbour = self.attend(torch.cat([h[src], relation], dim=-1))
        a = softmax((target[dst] * neighbour).sum(-1) * self.scale, dst, num_nodes=n)  # eq. 3
        deg = degree(dst, n).clamp(min=1)
        weight = a * deg[src].rsqrt() * deg[dst].rsqrt()  # eq. 4
        return torch.relu(self.propagate(edge_index, x=self.transform(h), weight=weight) + self.bias)

    def message(self, x_j: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        return weight.unsqueeze(-1) * x_j


class GraphSoftPrompt(nn.Module):
    """Entity, relation and question sentence vectors → one soft token per entity, in the LLM's width."""

    def __init__(self, text_dim: int = 384, dim: int = 128, layers: int = 2, llm_dim: int = 640):
        super().__init__()
        self.entity_in = nn.Linear(text_dim, dim)
        self.question_in = nn.Linear(text_dim, dim)
        self.relation_in = nn.Linear(text_dim, dim)
        self.self_loop = nn.Parameter(torch.randn(dim) * 0.02)
        self.layers = nn.ModuleList(QuestionAttention(dim) for _ in range(layers))
        self.to_llm = nn.Sequential(nn.Linear(dim, dim), nn.Tanh(), nn.Linear(dim, llm_dim))  # the FFN of eq. 5
        self.probe = nn.Linear(dim, 1)  # training aid (not the paper's): is the entity one to select? Answering never reads it

    def states(self, entities: torch.Tensor, question: torch.Tensor, edge_index: torch.Tensor, edge_relation: torch.Tensor,
               relations: torch.Tensor) -> torch.Tensor:
        """`edge_relation` [M] indexes `relations` [T, text_dim], the texts of the relation types
        (t = 2·relation + inverse); a fact's reverse uses type t ^ 1."""
        n = entities.shape[0]
        loops = torch.arange(n, device=entities.device)
        src = torch.cat([edge_index[0], edge_index[1], loops])
        dst = torch.cat([edge_index[1], edge_index[0], loops])
        r = self.relation_in(relations)
        edge_r = torch.cat([r[edge_relation], r[edge_relation ^ 1], self.self_loop.expand(n, -1)])
        h = self.entity_in(entities)
        q = self.question_in(question).unsqueeze(0)
        for layer in self.layers:
            h = layer(h, q, torch.stack([src, dst]), edge_r)
        return h

    def forward(self, entities: torch.Tensor, question: torch.Tensor, edge_index: torch.Tensor, edge_relation: torch.Tensor,
                relations: torch.Tensor) -> torch.Tensor:
        return self.to_llm(self.states(entities, question, edge_index, edge_relation, relations))  # Ĥ of eq. 5

    def encode(self, entities: torch.Tensor, question: torch.Tensor, edge_index: torch.Tensor, edge_relation: torch.Tensor,
               relations: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The soft tokens [K, llm_dim] and the probe's logit per entity [K]."""
        h = self.states(entities, question, edge_index, edge_relation, relations)
        return self.to_llm(h), self.probe(h).squeeze(-1)
