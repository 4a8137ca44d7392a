"""The loader's memory of labels already written: bounded, and forgetting never loses a label."""

from __future__ import annotations

import pytest

from kgqa.loaders import load_file
from kgqa.sparql import written_before
from kgqa.sparql.embedded import EmbeddedWriter
from kgqa.sparql.written_before import WrittenBefore


def test_a_key_is_new_once_and_the_table_grows_to_its_cap_and_no_further():
    roomy = WrittenBefore(first_slots=1 << 12)  # 3 keys in 4,096 two-way slots: none pushed out (a small table may forget)
    assert roomy.first_time([("a", "A"), ("b", None)]) == [True, True]
    assert roomy.first_time([("b", None), ("c", "C"), ("a", "A")]) == [False, True, False]
    seen = WrittenBefore(first_slots=8, max_slots=1 << 12)
    seen.first_time([(f"e{i}", None) for i in range(300)])
    assert seen.slots == 1 << 10  # doubled until 300 keys fill at most half of it (512 slots would be over half)
    seen.first_time([(f"f{i}", None) for i in range(5000)])
    assert seen.slots == 1 << 12  # 5,300 keys would want 16,384 slots: capped
    with pytest.raises(ValueError, match="powers of two"):
        WrittenBefore(first_slots=12)


def test_keys_of_one_call_that_pick_one_empty_slot_are_all_remembered():
    """Small ints hash to themselves: their high bits, the first slot, are all zero, so every key of
    the call picks slot 0; each must land somewhere (one used to overwrite the others)."""
    seen = WrittenBefore(first_slots=1 << 12)
    assert seen.first_time([1, 2, 3, 4]) == [True] * 4
    assert seen.first_time([4, 3, 2, 1]) == [False] * 4


def test_a_full_table_forgets_but_never_calls_an_unseen_key_old():
    seen = WrittenBefore(first_slots=16, max_slots=64)
    keys = [(f"e{i}", f"E {i}") for i in range(2000)]
    assert all(seen.first_time(keys[:1000]))
    assert all(seen.first_time(keys[1000:]))  # none of these was seen: each is new, whatever the table forgot
    again = seen.first_time(keys)
    assert 0 < again.count(False) <= 64  # at most a slot's worth remembered


@pytest.mark.parametrize("max_slots", [1 << 25, 4], ids=["remembers", "forgets"])
def test_entities_met_in_several_batches_get_their_labels_written(tmp_path, monkeypatch, max_slots):
    """Every entity ends up labelled and indexed once, however little the writer remembers; with room
    to remember, a label is written once however many batches meet its entity."""
    monkeypatch.setattr(written_before, "MAX_SLOTS", max_slots)
    monkeypatch.setattr(written_before, "FIRST_SLOTS", min(max_slots, 1 << 20))  # remembering: 3,040 keys in 1M slots
    path = tmp_path / "kb.txt"
    path.write_text("".join(f"m{i}|r{i % 3}|e{i % 40}\n" for i in range(3000)), encoding="utf-8")
    writer = EmbeddedWriter.open(None, "t")
    indexed: list[str] = []
    add = writer.label_index.add
    writer.label_index.add = lambda pairs: (indexed.extend(iri for iri, _ in pairs), add(pairs))[1]  # type: ignore[method-assign]
    load_file(writer, path, batch_size=250)
    read = writer.reader()
    names = {row["label"] for row in read._execute("labels", f"SELECT ?label WHERE {{ GRAPH <{read.ns.meta_graph}> {{ ?e <http://www.w3.org/2000/01/rdf-schema#label> ?label }} }}")}
    assert {f"e{i}" for i in range(40)} | {f"m{i}" for i in range(3000)} <= names
    assert len(writer.label_index) == 3040
    if max_slots > 4:
        assert len(indexed) == 3040  # e0..e39 recur in every batch and are handed to the index once
    else:
        assert len(indexed) > 3040
