"""What an RDF writer remembers having written across batches, in memory that stops growing.

A load writes an entity's label quads and label-index row the first time it meets the entity; a
later batch that meets it again should not write them again (the store and the index would keep one
copy, but each rewrite costs quads, a look-up in the index and Python work). A set of (IRI, label)
pairs holds ~200 bytes a pair, so it was capped and cleared at 500,000; in a 50M-fact KG of 8M
entities most repeats then came after a clear (15.5M label writes for 8M entities). This keeps one
64-bit hash a pair in a table of two-way slots (a hash lives in one of two, so that a table a
quarter full rarely pushes a key out) that doubles while it is less than half full, up to
`MAX_SLOTS` (256 MB): a pair found was written (a false match needs two pairs with one 64-bit hash);
a pair pushed out is forgotten, which only costs writing it again.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np

FIRST_SLOTS = 1 << 16
MAX_SLOTS = 1 << 25  # 8 bytes a slot: 256 MB at most, whatever the KG's size
_MASK64 = (1 << 64) - 1


class WrittenBefore:
    def __init__(self, first_slots: int | None = None, max_slots: int | None = None):
        first_slots, max_slots = first_slots or FIRST_SLOTS, max_slots or MAX_SLOTS
        if first_slots & (first_slots - 1) or max_slots & (max_slots - 1):
            raise ValueError(f"slot counts must be powers of two (got {first_slots}, {max_slots})")
        self._max = max_slots
        self._table = np.zeros(first_slots, dtype=np.uint64)  # 0: an empty slot
        self._filled = 0

    @property
    def slots(self) -> int:
        return len(self._table)

    def first_time(self, keys: Sequence[Hashable]) -> list[bool]:
        """For each key, whether it is new (not remembered); all of them are remembered afterwards.
        `keys` should be distinct (a repeat within one call is reported new each time)."""
        if not keys:
            return []
        hashes = np.fromiter(((hash(k) & _MASK64) or 1 for k in keys), dtype=np.uint64, count=len(keys))
        while self._filled + len(hashes) > len(self._table) // 2 and len(self._table) < self._max:
            self._grow()
        one, two = self._slots(hashes)
        new = (self._table[one] != hashes) & (self._table[two] != hashes)
        self._put(hashes[new], one[new], two[new])
        return new.tolist()

    def _slots(self, hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each hash's two slots, from its high and its low bits: a key lives in either, so that a
        table a quarter full rarely has to push one key out for another."""
        bits = len(self._table).bit_length() - 1
        mask = np.uint64(len(self._table) - 1)
        return (hashes >> np.uint64(64 - bits)).astype(np.int64), (hashes & mask).astype(np.int64)

    def _put(self, hashes: np.ndarray, one: np.ndarray, two: np.ndarray) -> None:
        """Each hash into its first slot if empty, else its second (overwriting what was there). Of
        the hashes of one call that pick one slot, the first takes it and the others go to their other
        slot; any that meet again there are forgotten."""
        taken = np.where(self._table[one] == 0, one, two)
        for _ in range(2):
            slots, first = np.unique(taken, return_index=True)
            self._filled += int(np.count_nonzero(self._table[slots] == 0))
            self._table[slots] = hashes[first]
            left = np.ones(len(taken), dtype=bool)
            left[first] = False
            hashes, taken = hashes[left], np.where(taken[left] == one[left], two[left], one[left])
            one, two = one[left], two[left]
            if not len(hashes):
                return

    def _grow(self) -> None:
        kept = self._table[self._table != 0]
        self._table = np.zeros(len(self._table) * 2, dtype=np.uint64)
        self._filled = 0
        self._put(kept, *self._slots(kept))  # two that now share both slots: one is forgotten
