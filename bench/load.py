"""Load throughput (facts/s) of the kgqa loaders into every store, beside a naive writer that sends
one fact per statement to the same store. Prints a Markdown table; saves bench/results/load.json.

    .venv/bin/python bench/load.py [--stores embedded,oxigraph,virtuoso,neo4j,neo4j-bulk] [--naive-facts 2000]

"neo4j-bulk" is `kgqa load --bulk` (read the file, write kgqa's CSVs, run neo4j-admin import) into a
new database, beside the bare importer: neo4j-admin alone on the plainest CSVs of the same facts
(entity ids; facts with their relation), written beforehand and not timed. The index build the
first Bolt writer does afterwards is timed apart.

Servers are started here on loopback (docker/launchers.py) and stopped by PID. "load" is the whole
`load_file` (batches + fan-out recount + completion); "facts only" leaves the recount out. The naive
writer is timed on the first --naive-facts facts of each dataset (a rate, not a full load).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docker"))
from launchers import Neo4jServer, OxigraphServer, VirtuosoServer  # noqa: E402

from kgqa import open_writer  # noqa: E402
from kgqa.cypher.bulk import admin_command, bulk_load  # noqa: E402
from kgqa.loaders import load_file  # noqa: E402
from kgqa.core.namespace import KGNamespace  # noqa: E402
from kgqa.sparql import escape  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
DATASETS = {
    "MetaQA KB": (DATA / "metaqa" / "kb_reconstructed.txt", None, "|"),
    "FB15k-237 train": (DATA / "fb15k237" / "train.txt.gz", "tsv", "\t"),
}


def first_facts(path: Path, sep: str, n: int) -> list[tuple[str, str, str]]:
    opener = gzip.open if path.suffix == ".gz" else open
    out = []
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            if len(out) == n:
                break
            s, r, o = line.rstrip("\n").split(sep)
            out.append((s, r, o))
    return out


def naive_sparql(send: Callable[[list[str]], None], kg: str, facts: list[tuple[str, str, str]]) -> float:
    """One `INSERT DATA` per fact; `send` takes the statements (Virtuoso gets them in one isql session)."""
    ns = KGNamespace(kg)
    graph = escape.iri(ns.data_graph)
    statements = [
        f"INSERT DATA {{ GRAPH {graph} {{ {escape.iri(ns.entity(s))} {escape.iri(ns.relation(r))} {escape.iri(ns.entity(o))} }} }}"
        for s, r, o in facts
    ]
    started = time.perf_counter()
    send(statements)
    return len(facts) / (time.perf_counter() - started)


def naive_neo4j(url: str, kg: str, facts: list[tuple[str, str, str]]) -> float:
    import neo4j

    ns = KGNamespace(kg)
    query = (
        "MERGE (s:Entity {kg: $kg, iri: $s}) MERGE (o:Entity {kg: $kg, iri: $o}) "
        "MERGE (s)-[f:FACT {relation: $r}]->(o) "
        "ON CREATE SET f.out_group = $kg + ' ' + $s + ' ' + $r, f.in_group = $kg + ' ' + $o + ' ' + $r"
    )
    with neo4j.GraphDatabase.driver(url, auth=None) as driver, driver.session() as session:
        started = time.perf_counter()
        for s, r, o in facts:
            session.run(query, kg=kg, s=ns.entity(s), r=ns.relation(r), o=ns.entity(o)).consume()
        return len(facts) / (time.perf_counter() - started)


def bench_store(store: str, tmp_path: Path, naive_facts: int) -> list[dict]:
    """Both datasets into one freshly started server, which is stopped before the next store is
    benched, so that no idle server shares the 2 cores with the loads being timed."""
    rows = []
    with ExitStack() as servers:
        if store == "embedded":
            url = ""  # one directory per dataset below: an embedded store admits one open writer
        elif store == "oxigraph":
            url = "oxigraph+" + servers.enter_context(OxigraphServer(tmp_path / "oxigraph")).url
        elif store == "virtuoso":
            virtuoso = servers.enter_context(VirtuosoServer(tmp_path / "virtuoso"))
            url = virtuoso.writer_url
        elif store == "neo4j":
            url = servers.enter_context(Neo4jServer(tmp_path / "neo4j")).url
        else:
            raise SystemExit(f"unknown store {store!r}")
        for i, (dataset, (path, fmt, sep)) in enumerate(DATASETS.items()):
            kg = f"bench{i}"
            writer = open_writer(url or f"oxigraph://{tmp_path / f'embedded-{i}'}", kg)
            finish = writer.finish
            recount: list[float] = []

            def timed_finish(state, finish=finish, recount=recount):  # type: ignore[no-untyped-def]
                t = time.perf_counter()
                finish(state)
                recount.append(time.perf_counter() - t)

            writer.finish = timed_finish  # type: ignore[method-assign]
            started = time.perf_counter()
            report = load_file(writer, path, fmt)
            seconds = time.perf_counter() - started
            sample = first_facts(path, sep, naive_facts)
            naive_kg = f"naive{i}"
            if store == "neo4j":
                naive_rate = naive_neo4j(url, naive_kg, sample)
            elif store == "virtuoso":
                naive_rate = naive_sparql(lambda st: virtuoso.isql(*("SPARQL " + s for s in st)), naive_kg, sample)
            else:  # the same writer's update channel (an embedded store admits one writer)
                naive_rate = naive_sparql(lambda st: [writer._update(s) for s in st], naive_kg, sample)  # type: ignore[attr-defined]
            writer.close()
            row = {
                "store": store, "dataset": dataset, "facts": report.facts_in_store, "seconds": seconds,
                "facts_per_s": report.facts_in_store / seconds,
                "facts_only_per_s": report.facts_in_store / (seconds - sum(recount)),
                "recount_s": sum(recount), "naive_facts_per_s": naive_rate, "naive_sample": len(sample),
            }
            rows.append(row)
            print(f"{store} {dataset}: {row['facts_per_s']:,.0f} facts/s (naive {naive_rate:,.0f}/s)", file=sys.stderr)
    return rows


def bare_importer(path: Path, fmt: str | None, sep: str, home: Path) -> tuple[int, float]:
    """neo4j-admin on the plainest CSVs of the file's facts: (facts, seconds of the importer alone)."""
    import subprocess

    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        facts = {tuple(line.rstrip("\n").split(sep)) for line in f if line.strip()}
    entities = {e for s, _, o in facts for e in (s, o)}
    quote = lambda v: '"' + v.replace('"', '""') + '"'  # noqa: E731
    csv_dir = home.parent / "bare-csv"
    csv_dir.mkdir(parents=True, exist_ok=True)
    (csv_dir / "e.csv").write_text("id:ID\n" + "".join(quote(e) + "\n" for e in entities), encoding="utf-8")
    (csv_dir / "f.csv").write_text(":START_ID,:END_ID,relation\n" + "".join(f"{quote(s)},{quote(o)},{quote(r)}\n" for s, r, o in facts), encoding="utf-8")
    command, env = admin_command(home)
    started = time.perf_counter()
    subprocess.run(command + ["database", "import", "full", f"--nodes=Entity={csv_dir / 'e.csv'}", f"--relationships=FACT={csv_dir / 'f.csv'}",
                              "--overwrite-destination=true", "neo4j"], env=env, cwd=csv_dir, check=True, capture_output=True)
    return len(facts), time.perf_counter() - started


def bench_neo4j_bulk(tmp_path: Path) -> list[dict]:
    rows = []
    for i, (dataset, (path, fmt, sep)) in enumerate(DATASETS.items()):
        kg = f"bench{i}"
        home = tmp_path / f"bulk-{i}" / "home"
        home.mkdir(parents=True)
        report = bulk_load(home, kg, [path], fmt)
        with Neo4jServer(home.parent) as server:
            started = time.perf_counter()
            writer = open_writer(server.url, kg)  # builds kgqa's indexes over the imported graph
            index_s = time.perf_counter() - started
            assert load_file(writer, path, fmt).already_complete
            writer.close()
        bare_home = tmp_path / f"bare-{i}" / "home"
        bare_home.mkdir(parents=True)
        bare_facts, bare_s = bare_importer(path, fmt, sep, bare_home)
        row = {
            "store": "neo4j --bulk", "dataset": dataset, "facts": report.facts, "seconds": report.seconds,
            "facts_per_s": report.facts / report.seconds, "read_s": report.read_s, "import_s": report.import_s,
            "index_s": index_s, "bare_facts": bare_facts, "bare_s": bare_s, "bare_facts_per_s": bare_facts / bare_s,
        }
        rows.append(row)
        print(f"neo4j --bulk {dataset}: {row['facts_per_s']:,.0f} facts/s (bare importer {row['bare_facts_per_s']:,.0f}/s)", file=sys.stderr)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--stores", default="embedded,oxigraph,virtuoso,neo4j")
    ap.add_argument("--naive-facts", type=int, default=2000)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "load.json")
    args = ap.parse_args()
    missing = [str(p) for p, _, _ in DATASETS.values() if not p.exists()]
    if missing:
        print(f"needs {', '.join(missing)}", file=sys.stderr)
        return 2
    rows, bulk_rows = [], []
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        for store in args.stores.split(","):
            if store == "neo4j-bulk":
                bulk_rows += bench_neo4j_bulk(tmp_path)
            else:
                rows += bench_store(store, tmp_path, args.naive_facts)
    print("\n## Load throughput (2 cores; servers on loopback)\n")
    print("| store | dataset | facts | load s | facts/s (load) | facts/s (facts only) | recount s | naive facts/s (one per statement) | speed-up |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['store']} | {r['dataset']} | {r['facts']:,} | {r['seconds']:.1f} | {r['facts_per_s']:,.0f} | {r['facts_only_per_s']:,.0f} | "
              f"{r['recount_s']:.1f} | {r['naive_facts_per_s']:,.0f} (first {r['naive_sample']:,}) | {r['facts_per_s'] / r['naive_facts_per_s']:.1f}x |")
    if bulk_rows:
        neo4j = {r["dataset"]: r for r in rows if r["store"] == "neo4j"}
        print("\n## Neo4j: `kgqa load --bulk` (a new database) beside the bare importer and the Bolt loader\n")
        print("| dataset | facts | --bulk s (read+CSV / neo4j-admin) | --bulk facts/s | bare importer facts/s | --bulk / bare | "
              "index build at first open s | Bolt loader facts/s |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for r in bulk_rows:
            bolt = f"{neo4j[r['dataset']]['facts_per_s']:,.0f}" if r["dataset"] in neo4j else "–"
            print(f"| {r['dataset']} | {r['facts']:,} | {r['seconds']:.1f} ({r['read_s']:.1f} / {r['import_s']:.1f}) | {r['facts_per_s']:,.0f} | "
                  f"{r['bare_facts_per_s']:,.0f} | {r['facts_per_s'] / r['bare_facts_per_s']:.0%} | {r['index_s']:.1f} | {bolt} |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rows + bulk_rows, indent=2))
    print(f"\nsaved {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
