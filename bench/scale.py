"""How kgqa's costs grow with the KG: load, memory, disk, first answer, ask latency, linking and APP
retrieval, per store and size, on generated KGs (bench/scale_kg.py). Prints a Markdown table; saves
bench/results/scale.json; `--plot FILE.png` draws each cost against the size on log-log axes.

    .venv/bin/python bench/scale.py --work DIR [--facts 1e5,1e6,1e7,5e7] [--stores embedded,virtuoso,neo4j]
                                    [--questions 50] [--seed 0] [--first-runs 3] [--plot scale.png]
    .venv/bin/python bench/scale.py --rows RESULTS.json... --plot scale.png   # the table and plot of saved rows

DIR holds the generated files (DIR/data), the stores (DIR/stores/STORE-SIZE, each with its own
KGQA_CACHE, so that no store finds the question and label embeddings another one computed), logs and
DIR/checkpoint.json: a (size, store) cell that finished is skipped when the command is run again, and
a cell whose load finished keeps its load and measures the rest (the big sizes run for hours: run it
in the background and rerun it after an interruption). A cell's store is deleted once the cell is
done unless --keep-stores. Servers are started here on loopback (docker/launchers.py), one cell at a
time, and stopped by PID.

Per cell:
- load: `kgqa load FILE --kg scale --store URL` as a subprocess: wall seconds (the process's; JSON's
  load_files_s is what `kgqa load` itself reports, without interpreter start-up), facts/s, the loader's
  peak RSS (its VmHWM, polled; children such as Virtuoso's isql not counted), the server's peak
  RSS (VmHWM of virtuoso-t / Neo4j's JVM at the end of the load; the server was started for the
  cell), and disk: du of the store's folder (embedded: with the label index `<store>.labels` beside
  it; Virtuoso: its database folder, its free-text index of the labels included; Neo4j: its home,
  its full-text index included);
- first answer: `kgqa ask QUESTION --store URL --kg scale --json` in a fresh process, wall seconds
  (interpreter, models and store opened, question answered), median of --first-runs questions;
- ask p50/p99: one warm `kgqa.Engine` (method kgfr, no LLM) in this process over the exact-name
  questions and the one-typo questions, taken in turns (after one warm-up question); linking accuracy: the gold
  topic among `answer.topics`; Hits@1: the first answer is a gold answer;
- APP p50: `kgqa.retrieve(store, [gold topic], 3 hops, λ=100)` in the same process.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docker"))
sys.path.insert(0, str(ROOT / "bench"))
import scale_kg  # noqa: E402
from launchers import Neo4jServer, VirtuosoServer  # noqa: E402

from kgqa.core.namespace import KGNamespace  # noqa: E402

KG = "scale"
STORES = ("embedded", "virtuoso", "neo4j")
WARM_UP = "which city is the birthplace of John Smith"  # "John Smith" is in every generated KG


def log(message: str) -> None:
    print(f"[{datetime.datetime.now():%H:%M:%S}] {message}", file=sys.stderr, flush=True)


def kgqa_command() -> list[str]:
    script = Path(sys.executable).parent / "kgqa"
    return [str(script)] if script.exists() else [sys.executable, "-m", "kgqa"]


def vm_hwm_kb(pid: int) -> int | None:
    """Peak resident set of a live process (VmHWM), kB."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def du_bytes(*paths: Path) -> int:
    """Disk blocks used (as du counts them), hard links once."""
    seen, total = set(), 0
    for root in paths:
        if not root.exists():
            continue
        for path in [root, *root.rglob("*")] if root.is_dir() else [root]:
            try:
                st = path.lstat()
            except OSError:
                continue
            if (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
            total += st.st_blocks * 512
    return total


def run_measured(command: list[str], env: dict[str, str], log_path: Path) -> dict:
    """Run a command to its end; wall seconds, exit code and its peak RSS in MB: its VmHWM, read every
    50 ms (the last reading before it exits). Not wait4's ru_maxrss: Linux folds the parent's
    resident set at fork time into the child's, and this process holds the models by then."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as out:
        out.write(f"\n$ {' '.join(command)}\n".encode())
        out.flush()
        started = time.perf_counter()
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)  # returns once it has exec'd
        peak_kb = 0
        try:
            while True:
                pid, status = os.waitpid(proc.pid, os.WNOHANG)
                if pid:
                    break
                peak_kb = max(peak_kb, vm_hwm_kb(proc.pid) or 0)
                time.sleep(0.05)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        seconds = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    return {"seconds": seconds, "rc": proc.returncode, "rss_mb": peak_kb / 1024}


def tail(path: Path, n: int = 2000) -> str:
    try:
        return path.read_text(errors="replace")[-n:]
    except OSError:
        return ""


def pct(values: list[float], q: int) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


@contextmanager
def kgqa_cache(path: Path):  # type: ignore[no-untyped-def]
    """KGQA_CACHE for this process while a cell is measured (its cache of text embeddings)."""
    before = os.environ.get("KGQA_CACHE")
    os.environ["KGQA_CACHE"] = str(path)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("KGQA_CACHE", None)
        else:
            os.environ["KGQA_CACHE"] = before


class Checkpoint:
    def __init__(self, path: Path):
        self.path = path
        self.data = json.loads(path.read_text()) if path.exists() else {"cells": {}}

    def cell(self, key: str) -> dict:
        return self.data["cells"].setdefault(key, {})

    def save(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=2))
        os.replace(tmp, self.path)


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def ask_all(engine, variants: dict[str, list[dict]], ns: KGNamespace) -> dict[str, dict]:  # type: ignore[no-untyped-def]
    """Each question through the warm engine, the variants' questions taken in turns (so that
    neither finds the store warmed by the other): latencies, linking (gold topic linked), Hits@1."""
    stats = {v: {"seconds": [], "linked": 0, "hits": 0, "errors": [], "per_kind": {}} for v in variants}
    turns = [(v, q) for i in range(max(map(len, variants.values()), default=0)) for v, qs in variants.items() if i < len(qs) for q in [qs[i]]]
    for variant, q in turns:
        st = stats[variant]
        gold_topic = ns.entity(q["topics"][0])
        gold = {ns.entity(a) for a in q["answers"]}
        started = time.perf_counter()
        try:
            answer = engine.ask(q["question"])
        except Exception as exc:  # a store timeout, say: counted, and the run goes on
            st["errors"].append(f"{q['question']!r}: {type(exc).__name__}: {exc}"[:300])
            continue
        st["seconds"].append(time.perf_counter() - started)
        is_linked = gold_topic in {t.get("iri") for t in answer.topics}
        hit = bool(answer.answers) and answer.answers[0].iri in gold
        st["linked"] += is_linked
        st["hits"] += hit
        kind = st["per_kind"].setdefault(q["kind"], [0, 0, 0])
        kind[0] += 1
        kind[1] += is_linked
        kind[2] += hit
    out = {}
    for variant, st in stats.items():
        n, seconds = len(variants[variant]), st["seconds"]
        out[variant] = {
            "n": n, "errors": len(st["errors"]), "error_samples": st["errors"][:3],
            "p50_ms": 1000 * pct(seconds, 50) if seconds else None, "p99_ms": 1000 * pct(seconds, 99) if seconds else None,
            "linking": st["linked"] / n if n else None, "hits1": st["hits"] / n if n else None,
            "per_kind": {k: {"n": v[0], "linking": v[1] / v[0], "hits1": v[2] / v[0]} for k, v in st["per_kind"].items()},
        }
    return out


def app_times(store, topics: list[str]) -> dict:  # type: ignore[no-untyped-def]
    """APP retrieval (3 hops, λ=100) from each topic IRI alone: p50/p99 seconds, mean edges, round trips."""
    from kgqa import retrieve

    seconds, edges, trips, errors = [], [], [], 0
    for topic in topics:
        started = time.perf_counter()
        try:
            sg = retrieve(store, [topic])
        except Exception as exc:  # a store timeout, say
            errors += 1
            log(f"APP retrieval from {topic!r} raised {type(exc).__name__}: {exc}")
            continue
        seconds.append(time.perf_counter() - started)
        edges.append(sg.num_edges)
        trips.append(sg.trace.round_trips)
    return {"app_p50_ms": 1000 * pct(seconds, 50) if seconds else None, "app_p99_ms": 1000 * pct(seconds, 99) if seconds else None,
            "app_edges_mean": statistics.mean(edges) if edges else None, "app_round_trips_max": max(trips, default=None),
            "app_errors": errors}


def typos_naming_others(store, typos: list[dict], ns: KGNamespace) -> float:  # type: ignore[no-untyped-def]
    """Share of misspelt topic names that are, as written or normalised, the name of another entity
    ("John A. Smith" → "John b. Smith"): no linker can tell those apart."""
    found = store.resolve(sorted({q["mention"] for q in typos}))
    other = sum(any(hit.entity.iri != ns.entity(q["topics"][0]) for hit in found.get(q["mention"], [])) for q in typos)
    return other / len(typos) if typos else 0.0


def open_cell_store(store: str, cell_dir: Path, servers: ExitStack, args) -> tuple[str, str, int | None, list[Path]]:  # type: ignore[no-untyped-def]
    """A cell's store under `cell_dir`, its server (if any) started on loopback and stopped with
    `servers`: (the URL kgqa load writes to, the URL questions read, the server's PID, the paths whose
    size is the store's disk; the first is the store itself, the others its label index)."""
    if store == "embedded":
        store_path = cell_dir / "store"
        url = f"oxigraph://{store_path}"
        return url, url, None, [store_path, store_path.parent / f"{store_path.name}.labels"]
    if store == "virtuoso":
        server = servers.enter_context(VirtuosoServer(cell_dir / "virtuoso"))
        return server.writer_url, "sparql+" + server.sparql_url, server.proc.pid, [cell_dir / "virtuoso"]  # type: ignore[union-attr]
    if store == "neo4j":
        neo4j = servers.enter_context(Neo4jServer(cell_dir / "neo4j", heap=args.neo4j_heap, page_cache_mb=args.neo4j_page_cache_mb))
        return neo4j.url, neo4j.url, neo4j.proc.pid, [cell_dir / "neo4j" / "home"]  # type: ignore[union-attr]
    raise SystemExit(f"unknown store {store!r}; use {', '.join(STORES)}")


def run_cell(store: str, facts: int, meta: dict, data_dir: Path, work: Path, ckpt: Checkpoint, key: str, args) -> dict:  # type: ignore[no-untyped-def]
    from kgqa import Engine

    label = scale_kg.size_label(facts)
    cell = ckpt.cell(key)
    cell_dir = work / "stores" / f"{store}-{label}"
    logs = work / "logs"
    kg_file = data_dir / meta["files"]["kg"]
    exact = read_jsonl(data_dir / meta["files"]["questions"])
    typos = read_jsonl(data_dir / meta["files"]["typo"])
    loaded = "load" in cell and cell_dir.exists()
    if not loaded and cell_dir.exists():
        log(f"{key}: a load that did not finish is in {cell_dir}: removed, loading anew")
        shutil.rmtree(cell_dir)
    cell_dir.mkdir(parents=True, exist_ok=True)
    cache = cell_dir / "cache"
    env = {**os.environ, "KGQA_CACHE": str(cache)}
    ns = KGNamespace(KG)
    with ExitStack() as servers:
        writer_url, reader_url, server_pid, disk_paths = open_cell_store(store, cell_dir, servers, args)
        with kgqa_cache(cache):
            if not loaded:
                log(f"{key}: loading {kg_file.name} into {writer_url}")
                run = run_measured([*kgqa_command(), "load", str(kg_file), "--kg", KG, "--store", writer_url, "--format", "tsv"],
                                   env, logs / f"{store}-{label}-load.log")
                if run["rc"] != 0:
                    raise RuntimeError(f"kgqa load exited with {run['rc']}:\n{tail(logs / f'{store}-{label}-load.log')}")
                said = re.findall(r"facts written in ([0-9.]+)s", tail(logs / f"{store}-{label}-load.log", 5000))
                load = {"load_s": run["seconds"], "facts_per_s": meta["lines"] / run["seconds"], "loader_rss_mb": run["rss_mb"],
                        "load_files_s": float(said[-1]) if said else None,  # load_file alone, as `kgqa load` reports it
                        "server_rss_load_mb": (vm_hwm_kb(server_pid) or 0) / 1024 if server_pid else None}
                load["disk_mb"] = du_bytes(*disk_paths) / 2**20
                load["disk_labels_mb"] = du_bytes(*disk_paths[1:]) / 2**20 if len(disk_paths) > 1 else None
                cell["load"] = load
                ckpt.save()
                log(f"{key}: loaded in {load['load_s']:.1f}s ({load['facts_per_s']:,.0f} facts/s), loader peak RSS {load['loader_rss_mb']:,.0f} MB, "
                    f"disk {load['disk_mb']:,.1f} MB")
            else:
                log(f"{key}: load measured before ({cell['load']['load_s']:.1f}s); measuring the rest")

            first = []
            for i, q in enumerate(exact[: args.first_runs]):
                run = run_measured([*kgqa_command(), "ask", q["question"], "--store", reader_url, "--kg", KG, "--json"],
                                   env, logs / f"{store}-{label}-first-answer.log")
                if run["rc"] != 0:
                    raise RuntimeError(f"kgqa ask exited with {run['rc']}:\n{tail(logs / f'{store}-{label}-first-answer.log')}")
                first.append(run)
                log(f"{key}: first answer in a fresh process #{i + 1}: {run['seconds']:.1f}s (peak RSS {run['rss_mb']:,.0f} MB)")

            log(f"{key}: {len(exact)} questions as written and {len(typos)} with a typo, through one warm Engine")
            with Engine(reader_url, kg=KG) as engine:
                try:
                    engine.ask(WARM_UP)  # models loaded, caches filled: not timed
                except Exception as exc:
                    log(f"{key}: the warm-up question raised {type(exc).__name__}: {exc}")
                asked = ask_all(engine, {"exact": exact, "typo": typos}, ns)
                app = app_times(engine.store, [ns.entity(q["topics"][0]) for q in exact])
                app["typos_naming_other_entities"] = typos_naming_others(engine.store, typos, ns)
            _forget_shared_encoder()
        server_rss_mb = (vm_hwm_kb(server_pid) or 0) / 1024 if server_pid else None

    row = {
        "store": store, "size": label, "facts": meta["lines"], "seed": meta["seed"], **cell["load"],
        "server_rss_mb": server_rss_mb,
        "first_answer_s": statistics.median(r["seconds"] for r in first) if first else None,
        "first_answer_runs_s": [r["seconds"] for r in first],
        "first_answer_rss_mb": max((r["rss_mb"] for r in first), default=None),
        "ask_p50_ms": asked["exact"]["p50_ms"], "ask_p99_ms": asked["exact"]["p99_ms"],
        "typo_ask_p50_ms": asked["typo"]["p50_ms"], "typo_ask_p99_ms": asked["typo"]["p99_ms"],
        "linking_exact": asked["exact"]["linking"], "linking_typo": asked["typo"]["linking"],
        "hits1_exact": asked["exact"]["hits1"], "hits1_typo": asked["typo"]["hits1"],
        **app, "questions": asked["exact"]["n"], "typo_questions": asked["typo"]["n"],
        "ask_errors": asked["exact"]["errors"] + asked["typo"]["errors"],
        "error_samples": asked["exact"]["error_samples"] + asked["typo"]["error_samples"],
        "per_kind": {"exact": asked["exact"]["per_kind"], "typo": asked["typo"]["per_kind"]},
        "plan": meta["plan"], "finished": datetime.datetime.now().isoformat(timespec="seconds"),
    }
    cell.update({"done": True, "row": row})
    ckpt.save()
    if not args.keep_stores:
        shutil.rmtree(cell_dir, ignore_errors=True)
    return row


def _forget_shared_encoder() -> None:
    """The linker's embedding encoder is made once per process, with the KGQA_CACHE of its time."""
    from kgqa.retrieval import linking

    clear = getattr(getattr(linking, "_shared_encoder", None), "cache_clear", None)
    if clear:
        clear()


def fmt(value, spec: str = ",.0f", none: str = "–") -> str:  # type: ignore[no-untyped-def]
    return none if value is None else format(value, spec)


def print_table(rows: list[dict]) -> None:
    print("\n## kgqa cost against KG size (generated KGs; kgfr, no LLM; 2-core machine unless said)\n")
    print("| store | facts | load s | facts/s | loader peak RSS MB | server peak RSS MB (load / all) | disk MB | first answer s (fresh process) "
          "| ask p50 / p99 ms | one-typo ask p50 / p99 ms | linking (one typo) | Hits@1 (exact / typo) | APP p50 ms (edges) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        server = "–" if r.get("server_rss_mb") is None else f"{fmt(r.get('server_rss_load_mb'))} / {fmt(r['server_rss_mb'])}"
        print(f"| {r['store']} | {r['facts']:,} | {r['load_s']:.1f} | {fmt(r['facts_per_s'])} | {fmt(r['loader_rss_mb'])} | {server} | "
              f"{fmt(r['disk_mb'], ',.1f')} | {fmt(r['first_answer_s'], '.1f')} | {fmt(r['ask_p50_ms'])} / {fmt(r['ask_p99_ms'])} | "
              f"{fmt(r['typo_ask_p50_ms'])} / {fmt(r['typo_ask_p99_ms'])} | {fmt(r['linking_typo'], '.2f')} | "
              f"{fmt(r['hits1_exact'], '.2f')} / {fmt(r['hits1_typo'], '.2f')} | {fmt(r['app_p50_ms'], '.1f')} ({fmt(r['app_edges_mean'])}) |")
    errors = sum(r.get("ask_errors", 0) + r.get("app_errors", 0) for r in rows)
    if errors:
        print(f"\n{errors} questions or retrievals raised (misses, left out of the latencies); samples in the JSON (error_samples) and the log.")


def saved_rows(paths: list[Path]) -> list[dict]:
    """The rows of earlier runs: `{"rows": [...]}` (--out) or `{"cells": {KEY: {"row": ...}}}` (a
    checkpoint's finished cells); one per (store, facts), the last file's."""
    chosen: dict[tuple[str, int], dict] = {}
    for path in paths:
        data = json.loads(path.read_text())
        found = data["rows"] if "rows" in data else [cell["row"] for cell in data.get("cells", {}).values() if cell.get("done")]
        for row in found:
            chosen[(row["store"], int(row["facts"]))] = row
    return sorted(chosen.values(), key=lambda r: (STORES.index(r["store"]) if r["store"] in STORES else 99, r["facts"]))


def plot(rows: list[dict], path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log(f"matplotlib is not installed in this environment: no plot written to {path}")
        return
    panels = [("load s", [("load_s", "-")]), ("peak RSS MB (loader —, server - -)", [("loader_rss_mb", "-"), ("server_rss_mb", "--")]),
              ("disk MB", [("disk_mb", "-")]), ("first answer s (fresh process)", [("first_answer_s", "-")]),
              ("ask p50 ms (exact —, one typo - -)", [("ask_p50_ms", "-"), ("typo_ask_p50_ms", "--")]), ("APP p50 ms", [("app_p50_ms", "-")])]
    fig, axes = plt.subplots(2, 3, figsize=(15, 8.5))
    colours = {"embedded": "tab:blue", "virtuoso": "tab:orange", "neo4j": "tab:green"}
    for ax, (title, series) in zip(axes.flat, panels):
        for store in dict.fromkeys(r["store"] for r in rows):
            mine = sorted((r for r in rows if r["store"] == store), key=lambda r: r["facts"])
            for field, style in series:
                points = [(r["facts"], r[field]) for r in mine if r.get(field)]
                if points:
                    xs, ys = zip(*points)
                    ax.plot(xs, ys, style, marker="o", color=colours.get(store), label=store if style == "-" else None)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(title)
        ax.set_xlabel("facts")
        ax.grid(True, which="both", alpha=0.3)
    axes.flat[0].legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    log(f"plot saved to {path}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, default=None, help="generated files, stores, logs and checkpoint.json (required unless --rows)")
    ap.add_argument("--facts", default="1e5,1e6,1e7,5e7", help="sizes in facts, comma-separated")
    ap.add_argument("--stores", default=",".join(STORES))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--questions", type=int, default=50, help="questions per kind (5 kinds), each also with one typo")
    ap.add_argument("--first-runs", type=int, default=3, help="fresh `kgqa ask` processes per cell (the median is reported)")
    ap.add_argument("--keep-stores", action="store_true", help="keep each cell's store after it is measured")
    ap.add_argument("--redo", action="store_true", help="measure finished cells again (their load too)")
    ap.add_argument("--neo4j-heap", default="2g")
    ap.add_argument("--neo4j-page-cache-mb", type=int, default=1024)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "scale.json")
    ap.add_argument("--plot", type=Path, default=None, help="a PNG of each cost against size (log-log)")
    ap.add_argument("--rows", type=Path, nargs="+", default=None,
                    help="measure nothing: print the table (and --plot) of rows saved before, from files such as --out "
                         "writes or a DIR/checkpoint.json (its finished cells); a later file's row for the same store and size wins")
    args = ap.parse_args()
    stores = [s for s in args.stores.split(",") if s]
    unknown = [s for s in stores if s not in STORES]
    if unknown:
        ap.error(f"unknown stores {unknown}; use {', '.join(STORES)}")
    if args.rows:
        rows = saved_rows(args.rows)
        print_table(rows)
        if args.plot:
            plot(rows, args.plot)
        return 0
    if args.work is None:
        ap.error("--work DIR is required (unless --rows)")
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    ckpt = Checkpoint(work / "checkpoint.json")
    sizes = scale_kg.parse_facts(args.facts)
    rows, failed = [], []
    for facts in sizes:
        data_dir = work / "data"
        started = time.perf_counter()
        meta = scale_kg.ensure(data_dir, facts, args.seed, args.questions)
        log(f"{scale_kg.size_label(facts)}: {meta['lines']:,} facts and {sum(meta['questions'].values())} questions in {data_dir} "
            f"({time.perf_counter() - started:.1f}s)")
        for store in stores:
            key = f"{store}/{scale_kg.size_label(facts)}/seed{args.seed}/q{args.questions}"
            cell = ckpt.cell(key)
            if args.redo:
                cell.clear()
            if cell.get("done"):
                log(f"{key}: done before ({cell['row']['finished']}); skipped")
                rows.append(cell["row"])
                continue
            try:
                rows.append(run_cell(store, facts, meta, data_dir, work, ckpt, key, args))
            except Exception as exc:  # the other cells still run; this one is redone next time
                log(f"{key}: FAILED: {type(exc).__name__}: {exc}")
                failed.append({"cell": key, "error": f"{type(exc).__name__}: {exc}"[:2000]})
    rows.sort(key=lambda r: (stores.index(r["store"]) if r["store"] in stores else 99, r["facts"]))
    print_table(rows)
    for f in failed:
        print(f"\nFAILED {f['cell']}: {f['error'][:500]}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"rows": rows, "failed": failed, "cpus": os.cpu_count()}, indent=2))
    log(f"saved {args.out}")
    if args.plot:
        plot(rows, args.plot)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
