"""APP retrieval on the full MetaQA KB in one store, beside two baselines on the same store, with and
without a 1,000,000-edge hub. Prints a Markdown table and saves JSON (bench/results/retrieval-STORE.json).

    .venv/bin/python bench/retrieval.py [--store embedded|virtuoso|neo4j] [--topics 500]
                                        [--baseline-topics 100] [--tog-topics 30]

Servers are started here on loopback (docker/launchers.py) and stopped by PID; the hub goes into a
second KG of the same server, loaded through the same writer, so both are timed alternately.

Baselines compute the same subgraph (checked on every topic they run):
- naive: one round trip per hop that fetches every neighbour of the frontier, then caps in Python;
- ToG-style: per frontier entity, one query for its relations, then one per (entity, relation).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from contextlib import ExitStack

import pyoxigraph as ox

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docker"))
from launchers import Neo4jServer, VirtuosoServer  # noqa: E402

from kgqa import open_store, open_writer, retrieve
from kgqa.core.errors import StoreError
from kgqa.loaders import load_file
from kgqa.core.namespace import KGNamespace
from kgqa.sparql.embedded import EmbeddedStore, EmbeddedWriter
from kgqa.core.store import GraphStore, LoadState

METAQA = ROOT.parent / "shared" / "data" / "metaqa"
HUB_EDGES = 1_000_000


def dev_topics(n: int, seed: int = 0) -> list[str]:
    names: set[str] = set()
    for hop in (1, 2, 3):
        for line in open(METAQA / f"{hop}-hop" / "qa_dev.txt", encoding="utf-8"):
            names.update(re.findall(r"\[([^\]]+)\]", line.split("\t")[0]))
    return random.Random(seed).sample(sorted(names), n)


def naive(store: EmbeddedStore, topics: list[str], hops: int, lam: int) -> set:
    reached, frontier, edges = set(topics), list(topics), set()
    for hop in range(1, hops + 1):
        if not frontier:
            break
        groups: dict[tuple, list] = defaultdict(list)
        for e in store.expand_uncapped(frontier):
            groups[(e.head, e.relation, e.inverse)].append(e.tail)
        before, new = frozenset(reached), set()
        for (head, rel, inv), tails in groups.items():
            for tail in (tails if len(tails) <= lam else [t for t in tails if t in before]):
                edges.add((head, rel, inv, tail, hop))
                if tail not in before:
                    new.add(tail)
        reached |= new
        frontier = sorted(new)
    return edges


def tog(store: EmbeddedStore, topics: list[str], hops: int, lam: int, budget_s: float) -> set | None:
    started = time.perf_counter()
    reached, frontier, edges = set(topics), list(topics), set()
    for hop in range(1, hops + 1):
        before, new = frozenset(reached), set()
        for head in frontier:
            for rel, inv in store.relations_of(head):
                tails = store.neighbours(head, rel, inv)
                for tail in (tails if len(tails) <= lam else [t for t in tails if t in before]):
                    edges.add((head, rel, inv, tail, hop))
                    if tail not in before:
                        new.add(tail)
            if time.perf_counter() - started > budget_s:
                return None
        reached |= new
        frontier = sorted(new)
    return edges


def hub_director() -> tuple[str, list[str]]:
    """The director with the most movies, and those movies: their 2-hop neighbourhoods all pass
    through the director, where the hub goes."""
    director_movies: dict[str, list[str]] = defaultdict(list)
    for line in open(METAQA / "kb_reconstructed.txt", encoding="utf-8"):
        s, r, o = line.rstrip("\n").split("|")
        if r == "directed_by":
            director_movies[o].append(s)
    director = max(sorted(director_movies), key=lambda d: len(director_movies[d]))
    return director, sorted(director_movies[director])


def server_stores(kind: str, tmp: Path, servers: ExitStack, director: str) -> tuple[GraphStore, GraphStore, float, float]:
    """MetaQA in KG `metaqa`, and MetaQA plus the hub in KG `metaqahub`, on one server."""
    if kind == "neo4j":
        server = servers.enter_context(Neo4jServer(tmp / "neo4j"))
        writer_url = reader_url = server.url
    else:
        virtuoso = servers.enter_context(VirtuosoServer(tmp / "virtuoso"))
        writer_url, reader_url = virtuoso.writer_url, "sparql+" + virtuoso.sparql_url
    hub_file = tmp / "hub.txt"
    with open(hub_file, "w", encoding="utf-8") as f:
        f.writelines(f"{director}|bench_hub_link|bench hub leaf {i}\n" for i in range(HUB_EDGES))
    writer = open_writer(writer_url, "metaqa")
    _, load_s = timed(lambda: load_file(writer, METAQA / "kb_reconstructed.txt"))
    writer.close()
    hub_writer = open_writer(writer_url, "metaqahub")
    load_file(hub_writer, METAQA / "kb_reconstructed.txt")
    _, hub_s = timed(lambda: load_file(hub_writer, hub_file))
    hub_writer.close()
    return open_store(reader_url, "metaqa"), open_store(reader_url, "metaqahub"), load_s, hub_s


def timed(fn):
    t = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - t


def survived(fn, topics: list[str]) -> list[float]:  # type: ignore[no-untyped-def]
    """Seconds per topic, leaving out topics whose queries the store stopped at its timeout."""
    out = []
    for t in topics:
        try:
            out.append(timed(lambda: fn(t))[1])
        except StoreError as exc:
            print(f"baseline stopped on {t}: {exc}", file=sys.stderr)
    return out


def pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--topics", type=int, default=500, help="APP topics per (hops, λ) row; each row has its own")
    ap.add_argument("--baseline-topics", type=int, default=100)
    ap.add_argument("--tog-topics", type=int, default=30)
    ap.add_argument("--tog-budget", type=float, default=20.0, help="seconds per topic before ToG is cut off")
    ap.add_argument("--store", choices=["embedded", "virtuoso", "neo4j"], default="embedded")
    ap.add_argument("--out", type=Path, default=None, help="default: bench/results/retrieval-STORE.json")
    args = ap.parse_args()
    if not METAQA.exists():
        print(f"needs {METAQA}", file=sys.stderr)
        return 2
    ns = KGNamespace("metaqa")
    director, movies = hub_director()
    hub_topics = [ns.entity(m) for m in movies] + [ns.entity(director)]
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as servers:
        if args.store == "embedded":
            writer = EmbeddedWriter.open(Path(tmp) / "store", "metaqa")
            report, load_s = timed(lambda: load_file(writer, METAQA / "kb_reconstructed.txt"))
            store: GraphStore = writer.reader()
        else:
            store, hub_store, load_s, hub_load_s = server_stores(args.store, Path(tmp), servers, director)
            print(f"hub of {HUB_EDGES:,} edges loaded into {args.store} in {hub_load_s:.1f}s", file=sys.stderr)
        print(f"loaded MetaQA into {args.store} in {load_s:.1f}s", file=sys.stderr)
        # Each (hops, λ) row gets topics of its own: a row that repeated another's topics would find
        # its query texts compiled already on Virtuoso (it caches plans by text), and more so for
        # ToG-style, whose texts do not depend on λ and whose hop-1 texts do not depend on hops.
        grid = [(hops, lam) for hops in (1, 2, 3) for lam in (10, 100, 1000)]
        names = dev_topics(len(grid) * args.topics + 200)  # a few dev topics are missing from the reconstructed KB
        linked = store.resolve(names)
        found = list(dict.fromkeys(hits[0].entity.iri for name in names if (hits := linked[name])))  # two names may link to one entity
        if len(found) < len(grid) * args.topics:
            print(f"only {len(found)} of the sampled dev topics are in the KB", file=sys.stderr)
            return 2
        rows = []
        for row_index, (hops, lam) in enumerate(grid):
            topics = found[row_index * args.topics : (row_index + 1) * args.topics]
            app_t, nodes, edges, trips = [], [], [], []
            for t in topics:
                sg, s = timed(lambda: retrieve(store, [t], hops, lam))
                app_t.append(s), nodes.append(sg.num_nodes), edges.append(sg.num_edges), trips.append(sg.trace.round_trips)
            naive_t = []
            for t in topics[: args.baseline_topics]:
                got, s = timed(lambda: naive(store, [t], hops, lam))
                assert got == retrieve(store, [t], hops, lam).edge_set(), ("naive differs", t, hops, lam)
                naive_t.append(s)
            tog_t, tog_cut = [], 0
            for t in topics[: args.tog_topics]:
                got, s = timed(lambda: tog(store, [t], hops, lam, args.tog_budget))
                if got is None:
                    tog_cut += 1
                    continue
                assert got == retrieve(store, [t], hops, lam).edge_set(), ("ToG differs", t, hops, lam)
                tog_t.append(s)
            row = {
                "hops": hops, "lambda": lam, "topics": len(topics),
                "app_p50_ms": 1000 * pct(app_t, 50), "app_p95_ms": 1000 * pct(app_t, 95),
                "nodes_mean": statistics.mean(nodes), "edges_mean": statistics.mean(edges),
                "round_trips_max": max(trips),
                "naive_p50_ms": 1000 * pct(naive_t, 50), "naive_p95_ms": 1000 * pct(naive_t, 95), "naive_topics": len(naive_t),
                "tog_p50_ms": 1000 * pct(tog_t, 50) if tog_t else None, "tog_topics": len(tog_t), "tog_cut_off": tog_cut,
            }
            rows.append(row)
            print(f"hops={hops} λ={lam}: APP p50 {row['app_p50_ms']:.1f} ms, naive p50 {row['naive_p50_ms']:.1f} ms", file=sys.stderr)

        if args.store == "embedded":
            # Two on-disk stores, one with the hub and one without, both compacted (`optimize`) so
            # that no background compaction lands on one side; topics are timed alternately.
            hub_writer = EmbeddedWriter.open(Path(tmp) / "hub-store", "metaqa")
            load_file(hub_writer, METAQA / "kb_reconstructed.txt")
            data = ox.NamedNode(ns.data_graph)
            hub, rel = ox.NamedNode(ns.entity(director)), ox.NamedNode(ns.relation("bench_hub_link"))
            _, attach_s = timed(lambda: hub_writer.store.bulk_extend(
                ox.Quad(hub, rel, ox.NamedNode(ns.entity(f"bench hub leaf {i}")), data) for i in range(HUB_EDGES)))
            _, recount_s = timed(lambda: hub_writer.finish(LoadState("bench-hub")))
            print(f"hub attached to {director!r} in {attach_s:.1f}s; fan-out recount {recount_s:.1f}s", file=sys.stderr)
            writer.store.optimize()
            hub_writer.store.optimize()
            hub_store = hub_writer.reader()
        hub_ns = KGNamespace(hub_store.kg)
        hub_topics_there = [hub_ns.entity(m) for m in movies] + [hub_ns.entity(director)]
        hub_there = dict(zip(hub_topics, hub_topics_there))
        without, with_hub, sizes_without, sizes_with = [], [], [], []
        for _ in range(3):  # three passes over the hub topics for a steadier p50
            for t in hub_topics:
                sg, s = timed(lambda: retrieve(store, [t], 2, 100))
                without.append(s), sizes_without.append(sg.num_edges)
                sg, s = timed(lambda: retrieve(hub_store, [hub_there[t]], 2, 100))
                with_hub.append(s), sizes_with.append(sg.num_edges)
        naive_without = [timed(lambda: naive(store, [t], 2, 100))[1] for t in hub_topics[:10]]
        # A baseline that reads the whole hub may run past the store's query timeout: that is recorded.
        # the naive baseline reads all 1M hub edges on every topic: a sample of 10 is enough to show it
        naive_with = survived(lambda t: naive(hub_store, [t], 2, 100), hub_topics_there[:10])
        tog_without = [timed(lambda: tog(store, [t], 2, 100, args.tog_budget))[1] for t in hub_topics[:10]]
        tog_with = survived(lambda t: tog(hub_store, [t], 2, 100, args.tog_budget), hub_topics_there[:10])
        hub_row = {
            "hub_entity": director, "hub_edges": HUB_EDGES, "topics": len(hub_topics),
            "app_p50_ms_without": 1000 * pct(without, 50), "app_p50_ms_with": 1000 * pct(with_hub, 50),
            "app_p95_ms_without": 1000 * pct(without, 95), "app_p95_ms_with": 1000 * pct(with_hub, 95),
            "ratio_p50": pct(with_hub, 50) / pct(without, 50),
            "edges_mean_without": statistics.mean(sizes_without), "edges_mean_with": statistics.mean(sizes_with),
            "naive_p50_ms_without": 1000 * pct(naive_without, 50), "naive_p50_ms_with": 1000 * pct(naive_with, 50) if naive_with else None,
            "tog_p50_ms_without": 1000 * pct(tog_without, 50), "tog_p50_ms_with": 1000 * pct(tog_with, 50) if tog_with else None,
        }
        store.close()
        hub_store.close()

    print(f"\n## APP retrieval on MetaQA ({args.store}), per topic entity\n")
    print("| hops | λ | topics | APP p50 ms | APP p95 ms | nodes (mean) | edges (mean) | round trips (max) | naive p50 ms | naive p95 ms | ToG-style p50 ms (n, cut off) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        tog_cell = f"{r['tog_p50_ms']:.1f} ({r['tog_topics']}, {r['tog_cut_off']})" if r["tog_p50_ms"] is not None else f"— (0, {r['tog_cut_off']})"
        print(f"| {r['hops']} | {r['lambda']} | {r['topics']} | {r['app_p50_ms']:.2f} | {r['app_p95_ms']:.2f} | {r['nodes_mean']:.0f} | "
              f"{r['edges_mean']:.0f} | {r['round_trips_max']} | {r['naive_p50_ms']:.2f} | {r['naive_p95_ms']:.2f} | {tog_cell} |")
    h = hub_row
    print(f"\n## 2-hop λ=100 on {args.store} with a {HUB_EDGES:,}-edge hub on {h['hub_entity']!r} ({h['topics']} topics: its movies and itself, 3 passes, timed alternately; naive and ToG-style on 10 topics)\n")
    print("| | APP p50 ms | APP p95 ms | edges (mean) | naive p50 ms | ToG-style p50 ms |")
    print("|---|---:|---:|---:|---:|---:|")
    print(f"| without hub | {h['app_p50_ms_without']:.2f} | {h['app_p95_ms_without']:.2f} | {h['edges_mean_without']:.0f} | {h['naive_p50_ms_without']:.2f} | {h['tog_p50_ms_without']:.2f} |")
    cell = lambda v: f"{v:.2f}" if v is not None else "timed out"  # noqa: E731
    print(f"| with hub | {h['app_p50_ms_with']:.2f} | {h['app_p95_ms_with']:.2f} | {h['edges_mean_with']:.0f} | {cell(h['naive_p50_ms_with'])} | {cell(h['tog_p50_ms_with'])} |")
    print(f"\nAPP with/without hub (p50): {h['ratio_p50']:.2f}x")
    args.out = args.out or ROOT / "bench" / "results" / f"retrieval-{args.store}.json"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"load_seconds": load_s, "rows": rows, "hub": hub_row}, indent=2))
    print(f"\nsaved {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
