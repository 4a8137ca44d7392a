"""Each node's kinds built for a whole subgraph at once (kgqa.methods.kgfr.type_sets)."""

from __future__ import annotations

import numpy as np
import pytest

from kgqa.methods.kgfr import type_sets
from kgqa.methods.kgfr.type_sets import type_lists


def expected(pairs: np.ndarray, names: list[str]) -> dict[int, list[str]]:
    out: dict[int, set[str]] = {}
    for pair in pairs.tolist():
        out.setdefault(pair // len(names), set()).add(names[pair % len(names)])
    return {node: sorted(kinds) for node, kinds in out.items()}


@pytest.mark.parametrize("names_count", [3, 64, 150])  # one 64-bit word of bits, and three
def test_each_node_gets_its_kinds_sorted_once_and_nodes_of_one_kind_share_a_list(names_count):
    names = sorted(f"kind {i:03d}" for i in range(names_count))
    rng = np.random.default_rng(names_count)
    nodes = rng.integers(0, 400, 3000)
    pairs = nodes * names_count + rng.choice([0, names_count - 1, names_count // 2], 3000)  # few kinds: many nodes share
    found = type_lists(pairs, names, 400)
    assert found == expected(pairs, names)
    assert len({id(kinds) for kinds in found.values()}) == len({tuple(kinds) for kinds in found.values()}) < len(found)
    assert type_lists(np.zeros(0, dtype=np.int64), names, 400) == {}


def test_kinds_are_right_when_keys_are_too_many_to_mark_or_two_sets_share_a_hash(monkeypatch):
    names = sorted(f"kind {i:03d}" for i in range(130))
    rng = np.random.default_rng(3)
    pairs = rng.integers(0, 50, 2000) * len(names) + rng.integers(0, len(names), 2000)
    monkeypatch.setattr(type_sets, "MARKED_KEYS", 10)
    assert type_lists(pairs, names, 50) == expected(pairs, names)
    monkeypatch.setattr(type_sets, "_mixed", lambda x: np.zeros_like(x))  # every set one key: the exact check must catch it
    assert type_lists(pairs, names, 50) == expected(pairs, names)
