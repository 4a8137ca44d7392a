"""`kgqa train`: the KGFR scorer, the RAPL retriever or GraSP's graph encoder on QA pairs over a store (or from a pack made
elsewhere), or GLOW's label predictors on an open-world benchmark."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from kgqa.core.errors import KGQAError
from kgqa.faces.cli_common import KgOpt, StoreOpt, err, fail, out, progress_bar
from kgqa.retrieval.store_url import default_store_url, open_store


def train(
    qa: Annotated[Optional[list[Path]], typer.Argument(help="QA files (MetaQA `question [topic]<TAB>a|b`, or .jsonl); not with --pack")] = None,
    out_dir: Annotated[Optional[Path], typer.Option("--out", help="Checkpoint folder to write")] = None,
    store: StoreOpt = None,
    kg: KgOpt = None,
    pack_in: Annotated[Optional[list[Path]], typer.Option("--pack", help="Train from this pack (written by --pack-out): no store, no encoder needed. "
                                                          "Several --pack (one per KG) are trained on together, in mixed batches")] = None,
    init: Annotated[Optional[Path], typer.Option("--init", help="Start from this checkpoint's weights (its model shape is kept); also how to go on after --time-budget")] = None,
    hops: Annotated[int, typer.Option("--hops", min=1, max=3, help="With QA files: APP hops of the packed subgraphs (2 keeps dense KGs such as FB15k-237 small)")] = 3,
    max_per_pack: Annotated[Optional[int], typer.Option("--max-per-pack", min=1, help="Train on at most N questions of each pack (fixed seed); validation keeps all")] = None,
    pack_out: Annotated[Optional[Path], typer.Option("--pack-out", help="Write the packed subgraphs + embeddings here (without --out: only that)")] = None,
    max_per_hop: Annotated[Optional[int], typer.Option("--max-per-hop", min=1, help="Sample at most N questions per file (fixed seed)")] = None,
    validation: Annotated[float, typer.Option("--validation", min=0.01, max=0.5)] = 0.1,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    epochs: Annotated[Optional[int], typer.Option("--epochs", min=1, help="Default: kgfr 20, rapl 15, glow 200 (full-graph steps), grasp 2")] = None,
    patience: Annotated[Optional[int], typer.Option("--patience", min=1, help="Default: kgfr 5, rapl 3, glow 25")] = None,
    lr: Annotated[Optional[float], typer.Option("--lr", help="Default: kgfr, rapl and grasp (its GNN + FFN) 1e-3, glow 5e-3")] = None,
    lr_decay: Annotated[float, typer.Option("--lr-decay", min=0.01, max=1.0, help="Multiply the learning rate by this after two epochs without a better validation Hits@1 (1: off)")] = 0.5,
    batch_size: Annotated[int, typer.Option("--batch-size", min=1)] = 64,
    residual: Annotated[bool, typer.Option("--residual/--no-residual", help="Deviation from eq. 3: add e(i) to the layer's output")] = True,
    norm: Annotated[bool, typer.Option("--norm/--no-norm", help="Deviation from eq. 3: LayerNorm + ReLU after each layer")] = True,
    attn_dim: Annotated[int, typer.Option("--attn-dim", min=1, help="d_attn of eq. 5")] = 4,
    attn_act: Annotated[str, typer.Option("--attn-act", help="g of eq. 5: relu (paper) | leaky_relu")] = "relu",
    message: Annotated[str, typer.Option("--message", help="eq. 4 message: sum = α(s + r) (paper) | product = α(s ⊙ r) (the bundled checkpoint's; see kgqa.methods.kgfr.model)")] = "product",
    device: Annotated[str, typer.Option("--device", help="auto | cpu | cuda")] = "auto",
    time_budget: Annotated[Optional[float], typer.Option("--time-budget", min=0.1, help="Minutes: start no epoch that would likely end past it, and stop one that runs past it (then validate)")] = None,
    cache_dir: Annotated[Path, typer.Option("--cache-dir", help="Where retrieved subgraphs are cached")] = Path(".kgqa/cache"),
    method: Annotated[str, typer.Option("--method", help="kgfr (the KGFR scorer) | rapl (the RAPL path retriever) | glow (GLOW's label predictors) "
                                        "| grasp (GraSP's graph encoder, through the frozen selector LLM)")] = "kgfr",
    lora: Annotated[bool, typer.Option("--lora", help="grasp: also train a LoRA adapter (r=8, α=16, q/v) on the selector LLM")] = False,
    soft_layout: Annotated[Optional[str], typer.Option("--soft-layout", help="grasp: where the selector reads the soft tokens: after (all after "
                                                       "the candidate names, eq. 6) | interleaved (each after its entity's name); default: the --init "
                                                       "checkpoint's, else after")] = None,
    probe_weight: Annotated[float, typer.Option("--probe-weight", min=0.0, help="grasp: weight of a probe loss that trains the GNN states to tell "
                                                "the entities to select, beside eq. 9 (0: eq. 9 alone; kgqa.methods.grasp.train)")] = 0.0,
    openworld: Annotated[Optional[Path], typer.Option("--openworld", help="glow: the folder `kgqa openworld build` wrote (its kg.tsv and patterns)")] = None,
    rationaliser: Annotated[str, typer.Option("--rationaliser", help="rapl: who picks the rational paths for labels: encoder (here, no LLM) | llm (with --llm) | shortest")] = "encoder",
    llm: Annotated[Optional[str], typer.Option("--llm", help="rapl with --rationaliser llm: gemma3-270m | local:PATH | http://host/v1?model=NAME | openai:MODEL")] = None,
    lookahead: Annotated[bool, typer.Option("--lookahead/--no-lookahead", help="rapl: the GCN on the reversed line graph (eq. 10)")] = True,
    step_relation: Annotated[bool, typer.Option("--step-relation/--no-step-relation", help="rapl: a walk's next triple is also scored by its "
                                                "relation's text, as question triples are (kgqa.methods.rapl.model)")] = True,
    label_neighbours: Annotated[int, typer.Option("--label-neighbours", min=0, help="rapl: how many similar training questions' answer coverage "
                                                  "helps pick each question's label chain (kgqa.methods.rapl.rationalise.neighbour_support; 0: each question alone)")] = 30,
) -> None:
    """Train the KGFR scorer (eq. 9) on QA pairs over a store; early stopping on validation Hits@1.

    Two steps when the GPU is elsewhere: `--pack-out data.npz` where the store is, then
    `kgqa train --pack data.npz --out DIR` on the GPU machine."""
    if method not in ("kgfr", "rapl", "glow", "grasp"):
        fail(f"--method must be kgfr, rapl, glow or grasp, not {method!r}")
    if method == "grasp":
        _train_grasp(qa, out_dir, store, kg, pack_in, init, hops, pack_out, max_per_hop, validation, seed, epochs or 2, lr or 1e-3,
                     time_budget, cache_dir, lora, device, soft_layout, probe_weight)
        return
    if method == "glow":
        _train_glow(openworld, out_dir, qa, epochs or 200, patience or 25, lr or 5e-3, validation, seed, time_budget, device)
        return
    if method == "rapl":
        epochs, patience, lr = epochs or 15, patience or 3, lr or 1e-3
        _train_rapl(qa, out_dir, store, kg, pack_in, init, hops, pack_out, max_per_hop, validation, seed, epochs, patience, lr, batch_size,
                    device, time_budget, cache_dir, rationaliser, llm, lookahead, step_relation, label_neighbours)
        return
    from kgqa.methods.kgfr.pack import PackedQA
    from kgqa.methods.kgfr.train import TrainConfig, train as run_training

    epochs, patience, lr = epochs or 20, patience or 5, lr or 1e-3

    if pack_in == []:
        pack_in = None
    if pack_in is not None and qa:
        fail("give QA files (with a store) or --pack FILE, not both")
    if pack_in is None and not qa:
        fail("nothing to train on: give QA files (with a store) or --pack FILE")
    if pack_in is not None and pack_out is not None:
        fail("--pack-out writes a pack from QA files; with --pack there is nothing to pack")
    if out_dir is None and pack_out is None:
        fail("nothing to write: give --out (a checkpoint) and/or --pack-out (a pack)")
    from kgqa.methods.kgfr.model import ATTN_ACTIVATIONS, MESSAGES

    if attn_act not in ATTN_ACTIVATIONS or message not in MESSAGES:
        fail(f"--attn-act must be one of {', '.join(ATTN_ACTIVATIONS)} and --message one of {', '.join(MESSAGES)}")
    try:
        if pack_in is not None:
            data = PackedQA.concat([PackedQA.load(p).capped(max_per_pack, seed) for p in pack_in])
        else:
            data = _pack_questions(qa or [], store, kg, max_per_hop, validation, seed, cache_dir, hops)
            if pack_out is not None:
                data.save(pack_out)
                err.print(f"pack: {len(data):,} questions, {len(data.edge_head):,} facts → {pack_out}", highlight=False)
        if out_dir is None:
            return
        train_part, val_part = data.split()
        config = TrainConfig(epochs=epochs, patience=patience, lr=lr, batch_size=batch_size, residual=residual, norm=norm, seed=seed, device=device, lr_decay=lr_decay,
                             attn_dim=attn_dim, attn_act=attn_act, message=message, split=json.loads(data.meta),
                             time_budget=time_budget * 60 if time_budget else None, init=str(init) if init else None, hops=data.hops)
        with progress_bar("training", 1) as bar:
            task = bar.add_task("epoch 1", total=1)

            def progress(epoch: int, step: int, total: int) -> None:
                bar.update(task, description=f"epoch {epoch}", completed=step, total=total)

            result = run_training(train_part, val_part, config, out_dir, log=lambda line: err.print(line, highlight=False), progress=progress)
    except (KGQAError, ValueError, OSError) as exc:
        fail(str(exc))
        return
    out.print(f"best validation Hits@1 {result['best_val_hits1']:.3f} (epoch {result['best_epoch']}); checkpoint in {out_dir}")


def _train_rapl(qa, out_dir, store, kg, pack_in, init, hops, pack_out, max_per_hop, validation, seed, epochs, patience, lr, batch_size,  # type: ignore[no-untyped-def]
                device, time_budget, cache_dir, rationaliser, llm, lookahead, step_relation, label_neighbours) -> None:
    """RAPL: QA files → APP subgraphs → line graphs + rationalised labels (a pack) → the retriever."""
    from kgqa.methods.rapl.data import RAPLPack
    from kgqa.methods.rapl.train import RAPLTrainConfig, train as run_training

    if pack_in and qa:
        fail("give QA files (with a store) or --pack FILE, not both")
    if not pack_in and not qa:
        fail("nothing to train on: give QA files (with a store) or --pack FILE")
    if pack_in and len(pack_in) > 1:
        fail("rapl trains from one --pack")
    if out_dir is None and pack_out is None:
        fail("nothing to write: give --out (a checkpoint) and/or --pack-out (a pack)")
    try:
        if pack_in:
            data = RAPLPack.load(pack_in[0])
        else:
            data = _rapl_pack(qa, store, kg, max_per_hop, validation, seed, cache_dir, hops, rationaliser, llm, pack_out, label_neighbours)
        if out_dir is None:
            return
        config = RAPLTrainConfig(lookahead=lookahead, step_relation=step_relation, lr=lr, batch_size=batch_size, epochs=epochs, patience=patience, seed=seed, device=device,
                                 time_budget=time_budget * 60 if time_budget else None, init=str(init) if init else None, split=json.loads(data.meta))
        with progress_bar("training", 1) as bar:
            task = bar.add_task("epoch 1", total=1)

            def progress(epoch: int, step: int, total: int) -> None:
                bar.update(task, description=f"epoch {epoch}", completed=step, total=total)

            result = run_training(data, config, out_dir, log=lambda line: err.print(line, highlight=False), progress=progress)
    except (KGQAError, ValueError, OSError) as exc:
        fail(str(exc))
        return
    out.print(f"best validation Hits@1 {result['best_val_hits1']:.3f} (epoch {result['best_epoch']}); checkpoint in {out_dir}")


def _train_grasp(qa, out_dir, store, kg, pack_in, init, hops, pack_out, max_per_hop, validation, seed, epochs, lr,  # type: ignore[no-untyped-def]
                 time_budget, cache_dir, lora, device, soft_layout=None, probe_weight=0.0) -> None:
    """GraSP: QA files → APP subgraphs → focus graphs + selector targets (a pack) → the graph encoder (eq. 9)."""
    from kgqa.methods.grasp.data import build_pack, load_pack, save_pack
    from kgqa.methods.grasp.train import GraspTrainConfig, train as run_training

    from kgqa.methods.grasp.selector import check_layout

    if bool(pack_in) == bool(qa):
        fail("grasp trains from QA files (with a store) or from one --pack FILE")
    if soft_layout is not None:  # None: the --init checkpoint's layout
        try:
            check_layout(soft_layout)
        except ValueError as exc:
            fail(f"--soft-layout: {exc}")
    if out_dir is None and pack_out is None:
        fail("nothing to write: give --out (a checkpoint) and/or --pack-out (a pack)")
    try:
        if pack_in:
            examples, meta = load_pack(pack_in[0])
        else:
            from kgqa.retrieval.entity_vectors import EntityVectors
            from kgqa.retrieval.text import TextEncoder

            prepared, flags, meta, graph_store = _prepare_split(qa, store, kg, max_per_hop, validation, seed, cache_dir, hops)
            encoder = TextEncoder()
            per_hop = [12] * hops
            with progress_bar("focus graphs", len(prepared)) as bar:
                task = bar.add_task("focus graphs + targets", total=len(prepared))
                examples = build_pack(prepared, EntityVectors(graph_store, encoder), encoder, per_hop, flags,
                                      progress=lambda n: bar.update(task, completed=n))
            meta = {**meta, "per_hop": per_hop}
            if pack_out is not None:
                save_pack(examples, meta, pack_out)
        labelled = sum(1 for e in examples if e.target)
        err.print(f"grasp pack: {len(examples):,} questions, {labelled:,} with an answer in the focus graph", highlight=False)
        if out_dir is None:
            return
        config = GraspTrainConfig(lora=lora, lr=lr, epochs=epochs, seed=seed, layers=int(meta.get("hops", hops)),
                                  time_budget=time_budget * 60 if time_budget else None, init=str(init) if init else None, data=meta,
                                  device=device, layout=soft_layout, probe_weight=probe_weight)
        result = run_training(examples, config, out_dir, log=lambda line: err.print(line, highlight=False))
    except (KGQAError, ValueError, OSError) as exc:
        fail(str(exc))
        return
    out.print(f"validation Hits@1 (LLM-free) {result['validation'].get('hits1', float('nan')):.3f} after {result['questions_seen']:,} "
              f"questions; checkpoint in {out_dir}")


def _train_glow(openworld, out_dir, qa, epochs, patience, lr, validation, seed, time_budget, device) -> None:  # type: ignore[no-untyped-def]
    """GLOW: one RGCN per pattern on the benchmark's KG (its deleted facts absent), every entity's top classes saved."""
    from kgqa.methods.glow.openworld import read_facts
    from kgqa.methods.glow.patterns import load_patterns
    from kgqa.methods.glow.train import GLOWTrainConfig, train as run_training

    if qa:
        fail("glow trains on a KG, not on QA files: give --openworld DIR (from `kgqa openworld build`)")
    if openworld is None or out_dir is None:
        fail("glow needs --openworld DIR (from `kgqa openworld build`) and --out CHECKPOINT")
    try:
        patterns = load_patterns(openworld / "patterns.json")
        raw = json.loads((openworld / "patterns.json").read_text(encoding="utf-8"))
        texts = {p["name"]: p.get("label_texts", p["labels"]) for p in raw["patterns"]}
        facts = read_facts(openworld / "kg.tsv")
        config = GLOWTrainConfig(epochs=epochs, patience=patience, lr=lr, validation=validation, seed=seed,
                                 time_budget=time_budget * 60 if time_budget else None, device=device)
        meta = run_training(facts, patterns.patterns, out_dir, config, patterns.kg, patterns.description, texts,
                            log=lambda line: err.print(line, highlight=False))
    except (KGQAError, ValueError, OSError) as exc:
        fail(str(exc))
        return
    for name, m in meta["metrics"].items():
        out.print(f"{name}: validation accuracy {m['validation_accuracy']:.3f} (majority class {m['validation_majority']:.3f}), "
                  f"{m['labelled']:,} labelled entities, {m['classes']} classes", highlight=False)
    out.print(f"checkpoint in {out_dir}")


def _prepare_split(qa, store, kg, max_per_hop, validation, seed, cache_dir, hops):  # type: ignore[no-untyped-def]
    """Read the QA files (at most `max_per_hop` of each, seeded), split off validation, retrieve every
    question's APP subgraph: (prepared, validation flags, meta, store)."""
    import random

    from kgqa.loaders.qa import read_qa, split
    from kgqa.methods.kgfr.data import prepare

    graph_store = open_store(store or default_store_url(), kg)
    examples = []
    for i, path in enumerate(qa):
        rows = read_qa(path)
        examples += random.Random(seed + i).sample(rows, max_per_hop) if max_per_hop and len(rows) > max_per_hop else rows
    train_set, val_set = split(examples, validation, seed)
    with progress_bar("subgraphs", len(examples)) as bar:
        task = bar.add_task("subgraphs", total=len(examples))
        prepared = prepare(graph_store, train_set + val_set, hops, 100, cache_dir=cache_dir, progress=lambda n: bar.update(task, completed=n))
    meta = {"kg": graph_store.kg, "files": [str(p) for p in qa], "max_per_hop": max_per_hop, "validation": validation, "seed": seed,
            "hops": hops, "lambda": 100, "validation_qids": [e.qid for e in val_set]}
    return prepared, [False] * len(train_set) + [True] * len(val_set), meta, graph_store


def _rapl_pack(qa, store, kg, max_per_hop, validation, seed, cache_dir, hops, rationaliser_name, llm, pack_out, neighbours):  # type: ignore[no-untyped-def]
    from kgqa.llm.spec import open_llm
    from kgqa.methods.rapl.data import build_pack
    from kgqa.methods.rapl.rationalise import rationaliser
    from kgqa.retrieval.text import TextEncoder

    prepared, flags, meta, _ = _prepare_split(qa, store, kg, max_per_hop, validation, seed, cache_dir, hops)
    encoder = TextEncoder()
    chooser = rationaliser(rationaliser_name, encoder, open_llm(llm) if llm else None)
    log = pack_out.with_suffix(".labels.jsonl") if pack_out else cache_dir / "rapl-labels.jsonl"
    log.parent.mkdir(parents=True, exist_ok=True)
    with progress_bar("labels", len(prepared)) as bar:
        task = bar.add_task("line graphs + labels", total=len(prepared))
        data = build_pack(prepared, encoder, chooser, flags, meta, log,
                          progress=lambda n: bar.update(task, completed=n), neighbours=neighbours)
    found = json.loads(data.meta)
    err.print(f"rapl pack: {found['questions']:,} questions, {found['labelled']:,} with a rational path (labelling log: {log})", highlight=False)
    if pack_out is not None:
        data.save(pack_out)
    return data


def _pack_questions(qa: list[Path], store: str | None, kg: str | None, max_per_hop: int | None, validation: float, seed: int, cache_dir: Path,
                    hops: int = 3):  # type: ignore[no-untyped-def]
    """Read and split the QA files, retrieve every question's subgraph from the store, pack them."""
    import random

    from kgqa.methods.kgfr.data import prepare
    from kgqa.methods.kgfr.pack import pack
    from kgqa.loaders.qa import read_qa, split
    from kgqa.retrieval.text import TextEncoder

    graph_store = open_store(store or default_store_url(), kg)
    examples = []
    for i, path in enumerate(qa):
        rows = read_qa(path)
        examples += random.Random(seed + i).sample(rows, max_per_hop) if max_per_hop and len(rows) > max_per_hop else rows
    train_set, val_set = split(examples, validation, seed)
    prepared = []
    for name, part in (("train", train_set), ("validation", val_set)):
        with progress_bar(name, len(part)) as bar:
            task = bar.add_task(f"subgraphs ({name})", total=len(part))
            prepared += prepare(graph_store, part, hops, 100, cache_dir=cache_dir, progress=lambda n: bar.update(task, completed=n))
    meta = {"kg": graph_store.kg, "files": [str(p) for p in qa], "max_per_hop": max_per_hop, "validation": validation, "seed": seed,
            "train": len(train_set), "validation_size": len(val_set), "validation_qids": [e.qid for e in val_set]}
    err.print("embedding questions and relation descriptions …", highlight=False)
    return pack(prepared, TextEncoder(), [False] * len(train_set) + [True] * len(val_set), json.dumps(meta))
