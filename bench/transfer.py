"""Leave-one-KG-out transfer of the KGFR retriever (KGFR §VI's zero-shot claim, tested here).

    python bench/transfer.py build --work /tmp/transfer      # questions (kgqa synth) and packs per KG
    python bench/transfer.py run --work /tmp/transfer --budget 8
    python bench/transfer.py arm --work /tmp/transfer --budget 8 --kgs umls   # one of run's models alone
    python bench/transfer.py bundle --work /tmp/transfer --budget 70   # the checkpoint to bundle
    python bench/transfer.py polish --work /tmp/transfer --budget 9    # its short MetaQA-heavy second phase
    python bench/transfer.py prior --work /tmp/transfer --model DIR...  # choose each model's text prior
    python bench/transfer.py score --work /tmp/transfer --model DIR...  # Hits@1 per pack and hop

`build` needs each KG loaded in an embedded store (see STORES below; `kgqa load` makes them) and
writes, per KG, the generated questions split 80/20 (fixed seed) and two packs of them: relation
texts in the v2 style (what new checkpoints read) and in v1 (what the first bundled checkpoint read).
MetaQA dev keeps the bundled checkpoint's own validation questions as validation, so that no model
started from it is validated on a question it trained on. Hand-written questions (HAND_WRITTEN: the
BioKG's, from bench/biokg_questions.py --hand) are packed whole for evaluation only: no arm trains or
stops early on them, and every table reports them apart from the generated questions of their KG.

`run` trains, each for the same time budget and each starting from the bundled checkpoint:
"all" on every KG's training part, and for each left-out X on every KG's training part but X's.
It then prints one table: Hits@1 on each KG's validation questions for today's checkpoint, the
model that never saw X (left out), the model trained on all (in domain) and the new bundled checkpoint
(`--model DIR` to name another). `arm --kgs NAME` trains one of these models alone, so that they can be
trained side by side where a machine has room (they ran so on one GPU); `run` then scores them.

`bundle` trains the checkpoint that replaces the bundled one: every KG's training part, the training
part of the human Freebase questions grounded in FB15k-237 where `build` packed them (from
WORK/freebase-human.jsonl, written by bench/ground_freebase.py), and a larger sample of MetaQA dev
(METAQA_BUNDLE per hop from the bundled checkpoint's training part), starting
from today's checkpoint (or `--init DIR`), written to WORK/model-bundle (run it again with a new
budget to go on; `--out DIR` to write elsewhere).

`polish` is the bundle's second phase: one epoch at lr 1e-4 over a MetaQA-heavy mix (POLISH: 9,000 of
the MetaQA bundle pack's training questions, 300 of each other pack's), from WORK/model-bundle (or
`--init`), written to WORK/model-polish (or `--out`). Phase 1 moves MetaQA below its bar; this brings
it back without undoing the rest.

`prior` chooses each model's text prior (kgqa.methods.kgfr.text_prior) and writes it into the
model's config.json: its weight for relations the model trained on on the validation parts of the
KGs it trained on (never its left-out one), its weight for relations it never saw on the arms'
left-out KGs (never its own); `run` and `score` then score the models with it. Run `prior` on the
arms after `arm`/`run` has trained them, then `run` again for the table with priors. Packs made
before the prior read masked questions have no probe vectors, and packs made before it read relation
questions have none of those: `build` again (the cache keeps it quick), or the prior reads the
questions as asked and the relation texts.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

from kgqa.loaders.qa import read_qa, split
from kgqa.methods.kgfr.pack import PackedQA, pack
from kgqa.methods.kgfr.scorer import BUNDLED_CHECKPOINT
from kgqa.methods.kgfr.text_prior import TextPrior, load_vocabulary, novelty, relation_vocabulary, save_vocabulary
from kgqa.methods.kgfr.train import (NOVEL_PENALTIES, NOVEL_WEIGHTS, PRIOR_MAX_LOSS, TrainConfig, batched, choose_margin, choose_text_prior, evaluate,
                                    load_checkpoint, pick_text_prior, prior_grid, text_prior_of, train)
from kgqa.retrieval.text import TextEncoder

# The steps that read stores (build, and bundle when the MetaQA bundle pack is missing) import the
# store side when they run: the others need only packs and torch, so they run on a bare GPU machine.

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
# name: (store URL, KG name, questions, path lengths, APP hops of the packed subgraphs)
STORES = {
    "fb15k237": ("oxigraph:///tmp/kgs/fb15k237", "fb15k237", 2000, (1, 2), 2),  # 3-hop FB15k-237 subgraphs hold ~80k edges
    "umls": ("oxigraph:///tmp/kgs/umls", "umls", 1000, (1, 2, 3), 3),
    "countries": ("oxigraph:///tmp/kgs/countries", "countries", 600, (1, 2, 3), 3),
    "nations": ("oxigraph:///tmp/kgs/nations", "nations", 600, (1, 2, 3), 3),
    "kinships": ("oxigraph:///tmp/kgs/kinships", "kinships", 800, (1, 2, 3), 3),
    "metaqa-free": ("oxigraph:///tmp/metaqa-store", "metaqa", 2000, (1, 2, 3), 3),
    # NCBI Gene + GO (`kgqa load org.Hs.eg.sqlite GO.sqlite --kg biokg --format biokg`, 2.6M facts): hub GO terms
    # hold thousands of genes, so two hops
    "biokg": ("oxigraph:///tmp/kgs/biokg", "biokg", 1000, (1, 2), 2),
}
LEFT_OUT = ("fb15k237", "umls", "countries", "metaqa-free", "biokg")
METAQA_PER_HOP = (600, 200)  # MetaQA dev questions per hop: training, validation
HUMAN = "freebase-human"  # real questions grounded in FB15k-237 (bench/ground_freebase.py), packed when present
# Questions written by hand, packed for evaluation only (never trained or validated on): name → (STORES key, file
# under WORK, the command that writes it when missing)
HAND_WRITTEN = {"biokg-hand": ("biokg", "biokg-hand.jsonl", ["biokg_questions.py", "--hand"])}
METAQA_BUNDLE = (6000, 200)  # the same for the checkpoint to bundle: more MetaQA so that it keeps its MetaQA Hits@1
POLISH = (9000, 300)  # the polish step's training questions: from the MetaQA bundle pack, from each other pack


def _pack_both(name: str, store, examples, validation, hops: int, work: Path, encoder: TextEncoder, meta: dict) -> None:
    from kgqa.methods.kgfr.data import prepare
    prepared = prepare(store, examples, hops, 100, cache_dir=work / "cache")
    for style in ("v2", "v1"):
        data = pack(prepared, encoder, validation, json.dumps({**meta, "kg": name}), style=style)
        data.save(work / f"{name}.{style}.npz")
    print(f"{name}: {len(examples)} questions, {int(np.sum(validation))} for validation", flush=True)


def _today(work: Path) -> Path:
    """A copy of the bundled checkpoint as it was when the packs were built: every run starts from it,
    and it stays "today's" after the bundled one is replaced."""
    base = work / "today-checkpoint"
    if not base.exists():
        shutil.copytree(BUNDLED_CHECKPOINT, base)
    return base


def build(work: Path, only: list[str] | None) -> None:
    from kgqa.eval.synth import synthesise, write_jsonl
    from kgqa.retrieval.store_url import open_store
    work.mkdir(parents=True, exist_ok=True)
    base = _today(work)
    encoder = TextEncoder()
    for name, (url, kg, count, lengths, hops) in STORES.items():
        if only and name not in only:
            continue
        store = open_store(url, kg)
        questions = work / f"{name}.jsonl"
        if not questions.exists():
            write_jsonl(synthesise(store, count, seed=11, hops=lengths), questions)
        _pack_split(name, store, questions, hops, work, encoder)
    if not only or "metaqa" in only:
        _pack_metaqa("metaqa", METAQA_PER_HOP, work, base, encoder)
    human = work / f"{HUMAN}.jsonl"  # bench/ground_freebase.py --out WORK/freebase-human.jsonl
    if (not only or HUMAN in only) and human.exists():
        url, kg, _, _, hops = STORES["fb15k237"]
        _pack_split(HUMAN, open_store(url, kg), human, hops, work, encoder)
    for name, (kg_name, file, command) in HAND_WRITTEN.items():
        if only and name not in only and kg_name not in only:
            continue
        path = work / file
        if not path.exists():
            subprocess.run([sys.executable, str(Path(__file__).resolve().parent / command[0]), *command[1:], str(path)], check=True)
        url, kg, _, _, hops = STORES[kg_name]
        examples = read_qa(path)
        _pack_both(name, open_store(url, kg), examples, [True] * len(examples), hops, work, encoder,
                   {"questions": str(path), "split": "evaluation only (hand-written)"})


def _pack_split(name: str, store, questions: Path, hops: int, work: Path, encoder: TextEncoder) -> None:  # type: ignore[no-untyped-def]
    """A JSONL file's questions split 80/20 (seed 11: what bench/abstention.py holds out too), packed."""
    train_part, val_part = split(read_qa(questions), 0.2, seed=11)
    _pack_both(name, store, train_part + val_part, [False] * len(train_part) + [True] * len(val_part), hops, work, encoder,
               {"questions": str(questions), "split": "80/20, seed 11"})


def metaqa_split(base: Path, per_hop: tuple[int, int]) -> tuple[list, list[bool]]:
    """MetaQA dev questions: per hop, per_hop[0] from the training part of checkpoint `base`'s split
    and per_hop[1] from its validation part (seed 11); with the validation flags."""
    held = set(json.loads((base / "config.json").read_text())["train"]["split"]["validation_qids"])
    rng = random.Random(11)
    chosen, validation = [], []
    for hop in (1, 2, 3):
        rows = read_qa(SHARED / "metaqa" / f"{hop}-hop" / "qa_dev.txt")
        trained = [e for e in rows if e.qid not in held]
        kept = [e for e in rows if e.qid in held]
        chosen += rng.sample(trained, per_hop[0]) + rng.sample(kept, per_hop[1])
        validation += [False] * per_hop[0] + [True] * per_hop[1]
    return chosen, validation


def _pack_metaqa(name: str, per_hop: tuple[int, int], work: Path, base: Path, encoder: TextEncoder) -> None:
    from kgqa.retrieval.store_url import open_store
    store = open_store(*STORES["metaqa-free"][:2])
    chosen, validation = metaqa_split(base, per_hop)
    _pack_both(name, store, chosen, validation, 3, work, encoder,
               {"split": f"MetaQA dev: {per_hop[0]}/hop from the bundled checkpoint's training part, {per_hop[1]}/hop of its validation part"})


def _hits(model, data: PackedQA) -> dict:  # type: ignore[no-untyped-def]
    return evaluate(model, data.split()[1], next(model.parameters()).device)


def run(work: Path, budget: float, kgs: list[str], bundled: Path | None = None) -> None:
    names = kgs or [*STORES, "metaqa"]
    packs = {n: PackedQA.load(work / f"{n}.v2.npz") for n in names}
    hand = _hand_written_packs(work, names)  # scored, never trained on: kept apart from `packs`
    results: dict[str, dict[str, dict]] = {}
    today, _ = load_checkpoint(_today(work), "auto")
    results["today"] = {n: _hits(today, PackedQA.load(work / f"{n}.v1.npz")) for n in [*names, *hand]}
    print(json.dumps({"today": {n: round(r["all"], 3) for n, r in results["today"].items()}}), flush=True)
    for run_name in ["all", *[x for x in LEFT_OUT if x in names]]:
        out = arm(work, budget, run_name, packs)
        model, _ = load_checkpoint(out, "auto")
        results[run_name] = {n: _hits(model, p) for n, p in {**packs, **hand}.items()}
        print(json.dumps({run_name: {n: round(r["all"], 3) for n, r in results[run_name].items()}}), flush=True)
    model, _ = load_checkpoint(bundled or BUNDLED_CHECKPOINT, "auto")  # the checkpoint that replaced today's
    results["bundle"] = {n: _hits(model, p) for n, p in {**packs, **hand}.items()}
    (work / "results.json").write_text(json.dumps(results, indent=2))
    table(results, [*names, *hand])


def _hand_written_packs(work: Path, names: list[str]) -> dict[str, PackedQA]:
    """The hand-written packs `build` made for the KGs in `names` (v2 texts)."""
    return {h: PackedQA.load(work / f"{h}.v2.npz") for h, (kg_name, _, _) in HAND_WRITTEN.items()
            if kg_name in names and (work / f"{h}.v2.npz").exists()}


def arm(work: Path, budget: float, run_name: str, packs: dict[str, PackedQA]) -> Path:
    """One model of `run` ("all", or a left-out KG's name) trained unless WORK/model-NAME/done says it was.
    Arms are independent, so on a machine with room they can be trained side by side (`arm --kgs NAME`)."""
    out = work / f"model-{run_name}"
    if not (out / "done").exists():
        _check_start_never_saw(work, run_name, packs)
        train_part, val_part = PackedQA.concat([p for n, p in packs.items() if n != run_name]).split()
        config = TrainConfig(epochs=50, patience=3, lr=3e-4, batch_size=32, residual=True, norm=True, message="product", device="auto",
                             time_budget=budget * 60, init=str(_today(work)), split={"left_out": run_name})
        _train_marked(run_name, train_part, val_part, config, out)
    return out


def _check_start_never_saw(work: Path, left_out: str, packs: dict[str, PackedQA]) -> None:
    """An arm starts from WORK/today-checkpoint, which must not have trained on its left-out KG: a work
    folder made after the bundled checkpoint was replaced would copy one that trained on every KG
    (its relation vocabulary gives it away), and the arm would then neither be left out nor get the
    weight for unfamiliar relations."""
    if left_out not in packs:
        return
    start = load_vocabulary(_today(work))
    if start is None:
        return  # checkpoints from before vocabularies: kgfr-metaqa, trained on MetaQA dev only
    others = np.concatenate([p.trained_relation_vectors() for n, p in packs.items() if n != left_out])
    own = packs[left_out].split()[1]
    with_start = _unfamiliar_share(relation_vocabulary(np.concatenate([others, start.astype(np.float32)])), own)
    if with_start < 0.5 <= _unfamiliar_share(relation_vocabulary(others), own):
        raise SystemExit(f"{_today(work)} trained on {left_out}'s relations: an arm that leaves {left_out} out cannot start from it "
                         "(copy a checkpoint that never saw it there, e.g. the first bundled one from git history)")


def _train_marked(name: str, train_part: PackedQA, val_part: PackedQA, config: TrainConfig, out: Path) -> None:
    """Train, logging with the step's name, and write OUT/done with the seconds it took."""
    started = time.perf_counter()
    train(train_part, val_part, config, out, log=lambda line: print(f"[{name}] {line}", flush=True))
    (out / "done").write_text(f"{time.perf_counter() - started:.0f} s\n")


def _bundle_packs(work: Path) -> list[str]:
    base = _today(work)
    if not (work / "metaqa-bundle.v2.npz").exists():
        _pack_metaqa("metaqa-bundle", METAQA_BUNDLE, work, base, TextEncoder())
    return [n for n in STORES] + ["metaqa-bundle"] + ([HUMAN] if (work / f"{HUMAN}.v2.npz").exists() else [])


def _held_split(work: Path) -> dict:
    """The MetaQA questions held out from every model in the chain (today's checkpoint's validation ids)
    stay written down: bench scripts and method READMEs take MetaQA's validation split from here."""
    held = json.loads((_today(work) / "config.json").read_text())["train"]["split"]
    return {"files": held["files"], "validation_qids": held["validation_qids"]}


def bundle(work: Path, budget: float, init: Path | None, out: Path | None) -> None:
    """Train the checkpoint to bundle on every pack (MetaQA's larger one); resumes from its last best."""
    names = _bundle_packs(work)
    data = PackedQA.concat([PackedQA.load(work / f"{n}.v2.npz") for n in names])
    train_part, val_part = data.split()
    out = out or work / "model-bundle"
    (out / "done").unlink(missing_ok=True)
    init = out if (out / "config.json").exists() else (init or _today(work))
    split = {"packs": names, "metaqa_bundle": METAQA_BUNDLE, **_held_split(work)}
    config = TrainConfig(epochs=100, patience=4, lr=3e-4, batch_size=32, residual=True, norm=True, message="product", device="auto",
                         time_budget=budget * 60, init=str(init), split=split)
    _train_marked("bundle", train_part, val_part, config, out)


def polish(work: Path, budget: float, init: Path | None, out: Path | None) -> None:
    """The bundle's second phase (see the module's doc): one epoch at lr 1e-4, MetaQA-heavy."""
    names = _bundle_packs(work)
    packs = [PackedQA.load(work / f"{n}.v2.npz").capped(POLISH[0] if n == "metaqa-bundle" else POLISH[1], seed=5) for n in names]
    train_part, val_part = PackedQA.concat(packs).split()
    init, out = init or work / "model-bundle", out or work / "model-polish"
    split = {"packs": names, "polish": POLISH, "metaqa_bundle": METAQA_BUNDLE, **_held_split(work)}
    config = TrainConfig(epochs=1, patience=1, lr=1e-4, lr_decay=1.0, batch_size=32, residual=True, norm=True, message="product", device="auto",
                         time_budget=budget * 60, init=str(init), split=split)
    _train_marked("polish", train_part, val_part, config, out)


def prior(work: Path, models: list[Path]) -> None:
    """Choose each model's text prior (kgqa.methods.kgfr.text_prior).

    β and λ, for relations it trained on: on the validation parts of the packs it trained on (all of
    them, less its left-out KG, and the human Freebase questions when FB15k-237 is left out), so that a
    left-out KG never picks its own setting. β_novel and λ_novel, for relations it never saw: those
    cannot be judged on KGs it trained on, so they are chosen on the leave-one-KG-out arms' left-out
    KGs (WORK/model-X on X's validation part, WORK/novel-X.json), never X's for a model that left X
    out. Writes "text_prior" into the model's config.json (and relation_vocab.npy, the relations it
    trained on, where missing), re-chooses its answer-set margin for the fused scores, and writes every
    familiar setting's Hits@1 per pack to WORK/prior-NAME.json."""
    novel = _novel_grids(work)
    for path in models:
        model, config = load_checkpoint(path, "auto")
        device = next(model.parameters()).device
        left = config["train"]["split"].get("left_out")
        names = [n for n in [*STORES, "metaqa", HUMAN] if (work / f"{n}.v2.npz").exists() and n != left
                 and not (left == "fb15k237" and n == HUMAN)]
        style = config.get("relation_text", "v1")
        parts = {n: PackedQA.load(work / f"{n}.{style}.npz").split() for n in names}
        packs = {n: validation for n, (_, validation) in parts.items()}
        if load_vocabulary(path) is None:
            save_vocabulary(path, *[training.trained_relation_vectors() for training, _ in parts.values()])
        chosen, table = choose_text_prior(model, packs, device)
        key = f"{chosen.weight}/{chosen.length_penalty}"
        judged = {x: grid for x, grid in novel.items() if x != left}
        novel_table = {k: {x: grid[k][x] for x, grid in judged.items()} for k in next(iter(judged.values()))} if judged else {}
        unseen = pick_text_prior(novel_table, max_loss=float("inf")) if novel_table else TextPrior(chosen.weight, chosen.length_penalty)
        print(f"{path}: weight {chosen.weight}, length penalty {chosen.length_penalty}; Hits@1 " +
              ", ".join(f"{n} {table['0.0/0.0'][n]:.3f} → {table[key][n]:.3f}" for n in names) +
              f"; unfamiliar relations: weight {unseen.weight}, length penalty {unseen.length_penalty} (chosen on {', '.join(judged) or 'nothing'})", flush=True)
        (work / f"prior-{path.name}.json").write_text(json.dumps(table, indent=1) + "\n")  # every setting's Hits@1 per pack
        novel_key = f"{unseen.weight}/{unseen.length_penalty}"
        config["text_prior"] = {"weight": chosen.weight, "length_penalty": chosen.length_penalty, "chosen_on": names,
                                "max_loss": PRIOR_MAX_LOSS, "validation_hits1": table[key], "validation_hits1_without": table["0.0/0.0"],
                                "novel_weight": unseen.weight, "novel_penalty": unseen.length_penalty, "novel_chosen_on": list(judged),
                                "novel_validation_hits1": novel_table.get(novel_key, {}), "novel_validation_hits1_without": novel_table.get("0.0/0.0", {})}
        raw = config.setdefault("without_prior", {"margin": config.get("margin"), "margin_val_f1": config.get("margin_val_f1")})
        config["margin"], config["margin_val_f1"] = raw["margin"], raw["margin_val_f1"]
        (path / "config.json").write_text(json.dumps(config, indent=2) + "\n")
        if chosen.weight > 0:  # on the packs it trained on: the familiar weights
            model.text_prior = text_prior_of(config["text_prior"], path, device)
            config["margin"], config["margin_val_f1"] = choose_margin(model, PackedQA.concat(list(packs.values())), device)
            (path / "config.json").write_text(json.dumps(config, indent=2) + "\n")


def _novel_grids(work: Path) -> dict[str, dict[str, dict[str, float]]]:
    """Per left-out KG X with a trained arm (WORK/model-X) whose relations are new to it: Hits@1 of the
    arm on X's validation part for each β_novel/λ_novel (prior_grid; computed once, kept in
    WORK/novel-X.json). An X whose relations the arm knows (MetaQA's KB asked in free words: the
    arm trained on MetaQA dev) says nothing of a weight that applies only to unknown ones."""
    grids = {}
    for x in LEFT_OUT:
        arm_dir, cached = work / f"model-{x}", work / f"novel-{x}.json"
        if not (arm_dir / "done").exists():
            continue
        pack_file = work / f"{x}.{json.loads((arm_dir / 'config.json').read_text()).get('relation_text', 'v1')}.npz"
        settings = {"weights": list(NOVEL_WEIGHTS), "penalties": list(NOVEL_PENALTIES), "weights_file": (arm_dir / "model.safetensors").stat().st_mtime,
                    "pack_file": pack_file.stat().st_mtime if pack_file.exists() else None}
        found = json.loads(cached.read_text()) if cached.exists() else {}
        if not isinstance(found, dict) or found.get("settings") != settings:  # none yet, another grid or layout, the arm retrained or the pack rebuilt
            model, config = load_checkpoint(arm_dir, "auto")
            data = PackedQA.load(pack_file).split()[1]
            if load_vocabulary(arm_dir) is None:
                names = [n for n in [*STORES, "metaqa"] if n != x]
                save_vocabulary(arm_dir, *[PackedQA.load(work / f"{n}.{config.get('relation_text', 'v1')}.npz").split()[0].trained_relation_vectors() for n in names])
            unfamiliar = _unfamiliar_share(load_vocabulary(arm_dir), data)
            grid = prior_grid(model, {x: data}, next(model.parameters()).device, NOVEL_WEIGHTS, NOVEL_PENALTIES) if unfamiliar >= 0.5 else {}
            found = {"settings": settings, "unfamiliar_share": unfamiliar, "grid": grid}
            cached.write_text(json.dumps(found, indent=1) + "\n")
        print(f"{x}: n(q) = {found['unfamiliar_share']:.2f} on average (the share of a question's relation types new to model-{x})" +
              ("" if found["grid"] else ": not used to choose the weight for unfamiliar relations"), flush=True)
        if found["grid"]:
            grids[x] = found["grid"]
    return grids


def _unfamiliar_share(vocabulary: np.ndarray | None, data: PackedQA) -> float:
    """The mean over `data`'s questions of n(q) (text_prior.novelty) for a relation vocabulary."""
    familiar = None if vocabulary is None else torch.from_numpy(vocabulary.astype(np.float32))
    usable = [i for i in range(len(data)) if data.has_subgraph(i)]
    shares = [novelty(data.batch(chunk), familiar) for chunk in batched(usable, 64)]
    return float(torch.cat(shares).mean()) if shares else 0.0


def score(work: Path, models: list[Path]) -> None:
    """Validation Hits@1 per pack and per hop for each model (a checkpoint reads the packs of its own
    relation-text style: v1 for today's, v2 for the new ones)."""
    names = [n for n in [*STORES, "metaqa", HUMAN, *HAND_WRITTEN] if (work / f"{n}.v2.npz").exists()]
    print("| model | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(names))
    for path in models:
        model, config = load_checkpoint(path, "auto")
        style = config.get("relation_text", "v1")
        cells = []
        for n in names:
            r = _hits(model, PackedQA.load(work / f"{n}.{style}.npz"))
            hops = "/".join(f"{r[k]:.3f}" for k in ("hop1", "hop2", "hop3") if k in r)
            cells.append(f"{r['all']:.3f} ({hops})")
        print(f"| {path} | " + " | ".join(cells) + " |", flush=True)


def table(results: dict, names: list[str]) -> None:
    print("\n| KG (validation questions) | today's checkpoint | left out (never saw the KG) | in domain (trained on all) | new bundled checkpoint |")
    print("|---|---|---|---|---|")
    for n in names:
        left = results.get(HAND_WRITTEN[n][0] if n in HAND_WRITTEN else n, {}).get(n, {}).get("all")
        cells = [results["today"][n]["all"], left, results.get("all", {}).get(n, {}).get("all"), results.get("bundle", {}).get(n, {}).get("all")]
        print(f"| {n} | " + " | ".join("—" if c is None else f"{c:.3f}" for c in cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("step", choices=("build", "run", "arm", "table", "bundle", "polish", "prior", "score"))
    parser.add_argument("--work", type=Path, default=Path("/tmp/transfer"))
    parser.add_argument("--budget", type=float, default=8.0, help="minutes of training per model")
    parser.add_argument("--kgs", nargs="*", default=[], help="only these (build: names of STORES or metaqa)")
    parser.add_argument("--model", type=Path, nargs="*", default=[], help="score: checkpoints to score on every pack's validation part; run: the new bundled checkpoint (default: the one bundled)")
    parser.add_argument("--init", type=Path, help="bundle/polish: the checkpoint to start from (bundle: today's; polish: WORK/model-bundle)")
    parser.add_argument("--out", type=Path, help="bundle/polish: where to write (WORK/model-bundle, WORK/model-polish)")
    args = parser.parse_args()
    if args.step == "build":
        build(args.work, args.kgs)
    elif args.step == "run":
        run(args.work, args.budget, args.kgs, args.model[0] if args.model else None)
    elif args.step == "arm":  # --kgs: the arms to train ("all" or left-out KG names), one after another
        packs = {n: PackedQA.load(args.work / f"{n}.v2.npz") for n in [*STORES, "metaqa"]}
        for name in args.kgs:
            arm(args.work, args.budget, name, packs)
    elif args.step == "bundle":
        bundle(args.work, args.budget, args.init, args.out)
    elif args.step == "polish":
        polish(args.work, args.budget, args.init, args.out)
    elif args.step == "prior":
        prior(args.work, args.model)
    elif args.step == "score":
        score(args.work, args.model)
    else:
        results = json.loads((args.work / "results.json").read_text())
        table(results, list(results["today"]))


if __name__ == "__main__":
    sys.exit(main())
