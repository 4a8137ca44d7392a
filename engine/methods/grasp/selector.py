"""The selector LLM of GraSP (eq. 6–7, 9): a small causal LM run in-process with transformers, fed
[instruction, question, candidate entities, soft tokens] as `inputs_embeds`, that names the entities
relevant to the question.

Soft tokens are the FFN's outputs (eq. 5), one per candidate entity in the order the candidates are
listed. Layout "after" (eq. 6) puts them all after the candidate names; "interleaved" (kgqa's, not
the paper's) puts each right after its entity's name, so that the LM need not count positions to tell
whose state a soft token is. Each is rescaled to the mean norm of the LM's own (scaled) token
embeddings: Gemma multiplies its input embeddings by √d, and a soft token far smaller or larger than
a word would be ignored or would swamp the text. The LM is frozen; with `lora` its attention q/v projections get a LoRA adapter
(r=8, α=16, dropout 0.1; App. A). Loss is on the target tokens only.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import torch
import torch.nn.functional as F

from kgqa.llm.local import BUNDLED_MODEL, load_causal_lm
from kgqa.llm.prompt import load_prompt

GRAPH_SLOT = "\x00graph\x00"
INPUTS = ("soft", "none", "triples")  # what stands in the graph slot: soft tokens, nothing, or the facts as text
LAYOUTS = ("after", "interleaved")  # where the soft tokens go: after all candidate names (eq. 6), or each after its name
END = "\n"


@dataclass
class SelectorInput:
    embeds: torch.Tensor  # [1, T, d]
    text_tokens: int
    soft_tokens: int


@dataclass
class Selection:
    text: str
    names: list[str]
    prompt_tokens: int
    soft_tokens: int
    completion_tokens: int
    seconds: float


def check_layout(layout: str) -> None:
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(LAYOUTS)} (got {layout!r})")


def split_names(text: str) -> list[str]:
    return [part.strip().strip(".") for part in text.replace("\n", ";").split(";") if part.strip().strip(".")]


class Selector:
    def __init__(self, model: str | None = None, lora: bool | str | Path = False, trainable: bool = False, device: str = "cpu",
                 loaded: tuple | None = None):
        """`loaded`: (tokenizer, model) from `load_causal_lm(model)`, to share one copy of the weights
        (not with a LoRA adapter, which is injected into the model)."""
        self.model_name = model or BUNDLED_MODEL
        self.tokenizer, self.lm = loaded or load_causal_lm(model, device)
        for p in self.lm.parameters():
            p.requires_grad_(False)
        self.lora = bool(lora)
        self.adapter = None  # the peft wrapper (it injects its layers into self.lm, which is what runs)
        if lora:
            from peft import LoraConfig, PeftModel, get_peft_model

            if isinstance(lora, (str, Path)):
                self.adapter = PeftModel.from_pretrained(self.lm, str(lora), is_trainable=trainable)
            else:
                self.adapter = get_peft_model(self.lm, LoraConfig(r=8, lora_alpha=16, lora_dropout=0.1, target_modules=["q_proj", "v_proj"],
                                                                  bias="none", task_type="CAUSAL_LM"))
        self.device = device
        embed = self.lm.get_input_embeddings()
        self.width = int(embed.weight.shape[1])
        scale = float(getattr(embed, "embed_scale", 1.0))
        with torch.no_grad():
            self.text_norm = float(embed.weight.norm(dim=-1).mean()) * scale
        self.prompt = load_prompt("grasp_select")
        self._lock = threading.Lock()

    def lora_parameters(self) -> list[torch.nn.Parameter]:
        return [p for n, p in self.lm.named_parameters() if "lora_" in n]

    def train(self, on: bool) -> None:
        self.lm.train(on)

    def _embed_text(self, text: str, bos: bool) -> torch.Tensor:
        ids = self.tokenizer(text, add_special_tokens=bos, return_tensors="pt")["input_ids"].to(self.device)
        return self.lm.get_input_embeddings()(ids)

    def inputs(self, question: str, candidates: list[str], soft: torch.Tensor | None, mode: str = "soft", facts: str = "",
               layout: str = "after") -> SelectorInput:
        """`soft` [K, d] (FFN outputs, unscaled) for mode "soft"; `facts` (one per line) for "triples"."""
        check_layout(layout)
        interleaved = mode == "soft" and layout == "interleaved"
        graph = {"soft": "" if interleaved else "Graph: " + GRAPH_SLOT, "none": "", "triples": "Facts:\n" + facts}[mode]
        listed = "; ".join(c + GRAPH_SLOT for c in candidates) if interleaved else "; ".join(candidates)
        text = self.prompt.render(True, question=question, candidates=listed, graph=graph).rstrip("\n")
        if not graph:
            text = text.replace("\n\nSelected:", "\nSelected:")
        pieces = text.split(GRAPH_SLOT)
        if len(pieces) == 1:
            pieces[0] = pieces[0].rstrip("\n")
        else:
            pieces[-1] = pieces[-1].rstrip(" ")
        parts = [self._embed_text(pieces[0], bos=True)]
        soft_tokens = 0
        if len(pieces) > 1:
            assert soft is not None and soft.shape[0] == len(candidates)
            rows = (F.normalize(soft, dim=-1) * self.text_norm).unsqueeze(0).to(parts[0].dtype)
            blocks = [rows] if len(pieces) == 2 else [rows[:, k:k + 1] for k in range(len(candidates))]
            for block, piece in zip(blocks, pieces[1:]):
                parts.append(block)
                if piece:
                    parts.append(self._embed_text(piece, bos=False))
            soft_tokens = int(soft.shape[0])
        embeds = torch.cat(parts, dim=1)
        return SelectorInput(embeds, int(embeds.shape[1]) - soft_tokens, soft_tokens)

    def loss(self, given: SelectorInput, target: str) -> torch.Tensor:
        """Eq. 9: −log P(target | prompt), the mean over the target's tokens (the prompt's positions carry no loss)."""
        ids = self.tokenizer(" " + target + END, add_special_tokens=False, return_tensors="pt")["input_ids"].to(self.device)
        embeds = torch.cat([given.embeds, self.lm.get_input_embeddings()(ids)], dim=1)
        hidden = self.lm.model(inputs_embeds=embeds).last_hidden_state
        start = given.embeds.shape[1] - 1
        logits = self.lm.lm_head(hidden[0, start:start + ids.shape[1]])
        return F.cross_entropy(logits.float(), ids[0])

    def next_token_logits(self, given: SelectorInput) -> torch.Tensor:
        hidden = self.lm.model(inputs_embeds=given.embeds).last_hidden_state
        return self.lm.lm_head(hidden[0, -1])

    def select(self, given: SelectorInput, max_new_tokens: int | None = None) -> Selection:
        started = time.perf_counter()
        with self._lock, torch.inference_mode():
            out = self.lm.generate(inputs_embeds=given.embeds, attention_mask=torch.ones(given.embeds.shape[:2], dtype=torch.long, device=self.device),
                                   max_new_tokens=max_new_tokens or self.prompt.max_tokens, do_sample=False, stop_strings=[END],
                                   tokenizer=self.tokenizer, pad_token_id=self.tokenizer.eos_token_id)
        text = self.tokenizer.decode(out[0], skip_special_tokens=True).split(END)[0].strip()
        return Selection(text, split_names(text), given.text_tokens, given.soft_tokens, int(out.shape[1]), time.perf_counter() - started)


@lru_cache(maxsize=2)
def frozen_selector(model: str | None = None, device: str = "cpu") -> Selector:
    """One frozen selector per model and device in a process: the engines, the service and training
    without LoRA share its weights (it only reads them; calls take turns on its lock)."""
    return Selector(model, device=device)
