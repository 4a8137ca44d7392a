"""Each node's kinds as a list of names, built for a whole subgraph at once (kgfr/answer_kind.py types
every node of a 3-hop FB15k-237 subgraph, ~10k nodes and ~30k (node, kind) pairs, for every
question that names a kind): nodes of the same kinds share one list, so that what is read per list
(how much its best kind reads like the asked noun) is read once per kind of node, not per node."""

from __future__ import annotations

import numpy as np

MARKED_KEYS = 1 << 23  # up to this many possible (node, name) keys, pairs are deduplicated by marking them (8 MB of bools)


def type_lists(pairs: np.ndarray, names: list[str], num_nodes: int) -> dict[int, list[str]]:
    """`pairs`: (node, name) as `node * len(names) + index into names`, repeats allowed; `names` sorted →
    each node that has a pair → its names, sorted, each once. Nodes with the same names share one list
    (not to be changed in place)."""
    if pairs.size == 0:
        return {}
    if num_nodes * len(names) <= MARKED_KEYS:  # a sort of ~200k keys took ~9 ms; marking them ~1
        marked = np.zeros(num_nodes * len(names), dtype=bool)
        marked[pairs] = True
        keys = np.flatnonzero(marked)
    else:
        keys = np.unique(pairs)
    nodes, words = np.divmod(keys, len(names))  # by node, then by name
    starts = np.flatnonzero(np.diff(nodes, prepend=-1))
    bits = np.zeros((starts.size, (len(names) + 63) // 64), dtype=np.uint64)  # each node's names as a bit set
    for chunk in range(bits.shape[1]):
        here = words // 64 == chunk
        bit = np.where(here, np.left_shift(np.uint64(1), (words % 64).astype(np.uint64)), np.uint64(0))
        bits[:, chunk] = np.bitwise_or.reduceat(bit, starts)
    # which bit set each node has: by one hashed 64-bit key per set (np.unique(axis=0) sorts the rows ~10x slower),
    # checked exactly, and sorted row by row after all in the unlikely case that two sets share a key
    key = np.zeros(starts.size, dtype=np.uint64)
    for column in bits.T:
        key = _mixed(key ^ _mixed(column))
    _, first, same = np.unique(key, return_index=True, return_inverse=True)
    if not (bits[first][same] == bits).all():
        _, first, same = np.unique(bits, axis=0, return_index=True, return_inverse=True)
    stops = np.append(starts[1:], keys.size)
    named = np.asarray(names, dtype=object)[words].tolist()
    shared = [named[start:stop] for start, stop in zip(starts[first].tolist(), stops[first].tolist())]
    return dict(zip(nodes[starts].tolist(), [shared[j] for j in same.reshape(-1).tolist()]))


def _mixed(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser, element-wise: every input bit moves every output bit (a product alone moves
    only higher ones)."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))
