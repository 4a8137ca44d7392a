"""Questions for the BioKG (NCBI Gene's org.Hs.eg.sqlite + GO.sqlite, `kgqa load … --format biokg`),
as JSONL for `kgqa eval`: `{"question", "answers", "topics", "hop", "path"}`.

    python bench/biokg_questions.py --out biokg-generated.jsonl [--per-template 25] [--seed 0] [--max-answers 20]
    python bench/biokg_questions.py --hand biokg-hand.jsonl
    (--org/--go name the two files; default: where kgqa.loaders.biokg.fetch() keeps them)

Generated questions follow the graph's relations from random topics (1 and 2 hops, forward and
inverse) in a fixed wording per relation; the hand-written ones are worded freely, away from the
relation names ("where in the cell…", "under what other symbols…"). Every answer set is computed
from the SQLite files directly, by the same rules the `biokg` reader turns rows into facts
(`kgqa.loaders.biokg.ANNOTATIONS`; aliases that are a gene's symbol left out; GO's root left out),
and answers are the labels a store shows: a gene's symbol, a GO term's name, "KEGG pathway 04115", "chromosome 17", …; topics are labels that link
(a gene by its symbol).
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from kgqa.loaders.biokg import ANNOTATIONS, GO_ROOT, GO_TERM_TABLES, Annotation, cache_dir, go_relation

SPECS = {a.relation: a for a in ANNOTATIONS}
GO_GRAPH = ("is_a", "part_of", "regulates", "positively_regulates", "negatively_regulates")


def _ro(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)


class BioData:
    """The two files, walked by relation name: nodes are the reader's stable ids (NCBIGene:7157, GO:…)."""

    def __init__(self, org: Path, go: Path):
        self.org, self.go = _ro(org), _ro(go)
        self.genes: dict[int, tuple[str, str, str]] = {}  # _id → (entrez, symbol, name)
        for _id, entrez, symbol, name in self.org.execute(
                "SELECT g._id, g.gene_id, i.symbol, i.gene_name FROM genes g JOIN gene_info i ON i._id = g._id"):
            self.genes[_id] = (entrez, symbol, name)
        self.by_entrez = {entrez: _id for _id, (entrez, _, _) in self.genes.items()}
        by_symbol: dict[str, list[int]] = defaultdict(list)
        for _id, (_, symbol, _) in self.genes.items():
            by_symbol[symbol].append(_id)
        self.by_symbol = {s: ids[0] for s, ids in by_symbol.items() if len(ids) == 1}  # symbols that name one gene
        self.symbols = set(by_symbol)
        self.go_names = {go: name for go, name in self.go.execute("SELECT go_id, term FROM go_term") if go != GO_ROOT}
        self.go_by_name = {name: go for go, name in self.go_names.items()}
        self._inverse: dict[str, dict[str, set[int]]] = {}

    # --- labels ---
    def display(self, node: str) -> str:
        if node.startswith("NCBIGene:"):
            return self.genes[self.by_entrez[node.split(":", 1)[1]]][1]  # its symbol
        if node.startswith("GO:"):
            return self.go_names.get(node, node)
        for spec in ANNOTATIONS:
            if spec.prefix and node.startswith(spec.prefix):
                return spec.label.format(node[len(spec.prefix):])
        raise ValueError(node)

    def topic(self, node: str) -> str:
        """The label a question names a node by: a gene by its symbol, the rest as shown."""
        if node.startswith("NCBIGene:"):
            return self.genes[self.by_entrez[node.split(":", 1)[1]]][1]
        return self.display(node)

    def gene(self, symbol: str) -> str:
        return f"NCBIGene:{self.genes[self.by_symbol[symbol]][0]}"

    # --- one step ---
    def _values(self, spec: Annotation, _id: int) -> set[str]:
        rows = self.org.execute(f'SELECT "{spec.column}" FROM "{spec.table}" WHERE _id = ?', (_id,))
        values = {str(v).strip() for (v,) in rows if v is not None and str(v).strip()}
        if spec.table == "alias":
            values -= self.symbols  # the reader's rule: no alias that is a symbol
        return values

    def _genes_with(self, spec: Annotation, value: str) -> set[int]:
        if spec.table.startswith("go_"):  # indexed by go_id
            return {i for (i,) in self.org.execute(f'SELECT _id FROM "{spec.table}" WHERE go_id = ?', (value,))}
        if spec.table == "pubmed":  # no index on the value; too big to hold
            return {i for (i,) in self.org.execute("SELECT _id FROM pubmed WHERE pubmed_id = ?", (value,))}
        if spec.table not in self._inverse:
            inverse: dict[str, set[int]] = defaultdict(set)
            for _id, v in self.org.execute(f'SELECT _id, "{spec.column}" FROM "{spec.table}"'):
                if v is not None and str(v).strip():
                    inverse[str(v).strip()].add(_id)
            self._inverse[spec.table] = inverse
        found = set(self._inverse[spec.table].get(value, ()))
        return found if spec.table != "alias" or value not in self.symbols else set()

    def _go_step(self, node: str, relation: str, inverse: bool) -> set[str]:
        found = set()
        near, far = ("t", "c") if inverse else ("c", "t")
        for table in GO_TERM_TABLES:
            for other, kind in self.go.execute(
                    f"SELECT {far}.go_id, p.relationship_type FROM {table} p JOIN go_term c ON c._id = p._id "
                    f"JOIN go_term t ON t._id = p._parent_id WHERE {near}.go_id = ?", (node,)):
                if go_relation(kind) == relation and other != GO_ROOT:
                    found.add(other)
        return found

    def step(self, node: str, relation: str, inverse: bool = False) -> set[str]:
        if relation in GO_GRAPH:
            return self._go_step(node, relation, inverse) if node.startswith("GO:") else set()
        spec = SPECS[relation]
        if not inverse:
            if not node.startswith("NCBIGene:") or node.split(":", 1)[1] not in self.by_entrez:
                return set()
            values = self._values(spec, self.by_entrez[node.split(":", 1)[1]])
            return values if spec.table.startswith("go_") else {spec.prefix + v for v in values}
        value = node if spec.table.startswith("go_") else node[len(spec.prefix):] if node.startswith(spec.prefix) and spec.prefix else None
        if value is None:
            return set()
        return {f"NCBIGene:{self.genes[i][0]}" for i in self._genes_with(spec, value) if i in self.genes}

    def walk(self, start: str, path: list[tuple[str, bool]]) -> set[str]:
        """The nodes at the end of `path` (relation, inverse) from `start`; the start is not an answer."""
        frontier = {start}
        for relation, inverse in path:
            frontier = set().union(*(self.step(n, relation, inverse) for n in frontier)) if frontier else set()
        return frontier - {start}

    def answers(self, start: str, path: list[tuple[str, bool]]) -> list[str]:
        return sorted({self.display(n) for n in self.walk(start, path)})


# --- generated questions --------------------------------------------------------------------------

@dataclass(frozen=True)
class Template:
    text: str  # with {} for the topic
    start: str  # what kind of node starts it: gene | go | <relation whose objects start it>
    path: tuple[tuple[str, bool], ...]


TEMPLATES = [
    Template("which biological processes is {} involved in?", "gene", (("involved_in_process", False),)),
    Template("what molecular functions does {} have?", "gene", (("has_molecular_function", False),)),
    Template("in which cellular components is {} located?", "gene", (("located_in_component", False),)),
    Template("which KEGG pathways is {} in?", "gene", (("in_pathway", False),)),
    Template("which protein domains does {} have?", "gene", (("has_domain", False),)),
    Template("which PROSITE motifs does {} have?", "gene", (("has_motif", False),)),
    Template("on which chromosome is {}?", "gene", (("located_on_chromosome", False),)),
    Template("at which cytoband is {} located?", "gene", (("located_at_cytoband", False),)),
    Template("which OMIM entries is {} associated with?", "gene", (("associated_with_omim", False),)),
    Template("what type of gene is {}?", "gene", (("has_gene_type", False),)),
    Template("which proteins does {} encode?", "gene", (("encodes_protein", False),)),
    Template("what are the aliases of {}?", "gene", (("has_alias", False),)),
    Template("which enzyme activity does {} have?", "gene", (("has_enzyme_activity", False),)),
    Template("which publications cite {}?", "gene", (("cited_in", False),)),
    Template("which genes are in {}?", "in_pathway", (("in_pathway", True),)),
    Template("which genes have the domain {}?", "has_domain", (("has_domain", True),)),
    Template("which genes are involved in {}?", "involved_in_process", (("involved_in_process", True),)),
    Template("which genes are associated with {}?", "associated_with_omim", (("associated_with_omim", True),)),
    Template("which genes are cited in {}?", "cited_in", (("cited_in", True),)),
    Template("which genes are located at cytoband {}?", "located_at_cytoband", (("located_at_cytoband", True),)),
    Template("what is {} a kind of?", "go", (("is_a", False),)),
    Template("what is {} part of?", "go", (("part_of", False),)),
    Template("what does {} positively regulate?", "go", (("positively_regulates", False),)),
    Template("what does {} negatively regulate?", "go", (("negatively_regulates", False),)),
    # 2 hops
    Template("which KEGG pathways are the genes with the domain {} in?", "has_domain", (("has_domain", True), ("in_pathway", False))),
    Template("on which chromosomes are the genes of {}?", "in_pathway", (("in_pathway", True), ("located_on_chromosome", False))),
    Template("which biological processes are the genes at cytoband {} involved in?", "located_at_cytoband",
             (("located_at_cytoband", True), ("involved_in_process", False))),
    Template("which genes share a protein domain with {}?", "gene", (("has_domain", False), ("has_domain", True))),
    Template("what kinds of process are the biological processes of {}?", "gene", (("involved_in_process", False), ("is_a", False))),
    Template("which genes are involved in processes that are a kind of {}?", "go", (("is_a", True), ("involved_in_process", True))),
]


def _starts(data: BioData, template: Template) -> list[str]:
    if template.start == "gene":
        return sorted(data.gene(s) for s in data.by_symbol)
    if template.start == "go":
        return sorted(data.go_names)
    spec = SPECS[template.start]
    if spec.table == "pubmed":  # a sample: 755k ids
        rows = data.org.execute("SELECT DISTINCT pubmed_id FROM pubmed WHERE rowid % 97 = 0")
    else:
        rows = data.org.execute(f'SELECT DISTINCT "{spec.column}" FROM "{spec.table}" WHERE "{spec.column}" IS NOT NULL')
    values = sorted(str(v).strip() for (v,) in rows if str(v).strip())
    return values if spec.table.startswith("go_") else [spec.prefix + v for v in values]


def generated(data: BioData, per_template: int, seed: int, max_answers: int) -> list[dict]:
    rng = random.Random(seed)
    questions = []
    for template in TEMPLATES:
        starts = _starts(data, template)
        rng.shuffle(starts)
        made = 0
        for start in starts[: per_template * 40]:
            answers = data.answers(start, list(template.path))
            if not 1 <= len(answers) <= max_answers:
                continue
            topic = data.topic(start)
            questions.append({"question": template.text.format(topic), "answers": answers, "topics": [topic],
                              "hop": len(template.path), "path": [("^" if inv else "") + r for r, inv in template.path]})
            made += 1
            if made == per_template:
                break
    return questions


# --- hand-written questions ----------------------------------------------------------------------

# (question, topic as it is named in the question, start node, path): worded away from the relation
# names; the answers are computed, never typed in.
GENE, TERM = "gene", "term"
HAND: list[tuple[str, str, str, list[tuple[str, bool]]]] = [
    ("Where in the cell does the protein made from CFTR do its work?", "CFTR", GENE, [("located_in_component", False)]),
    ("Which chromosome is the BRCA2 gene found on?", "BRCA2", GENE, [("located_on_chromosome", False)]),
    ("On what band of its chromosome does INS sit?", "INS", GENE, [("located_at_cytoband", False)]),
    ("What does the ALDH2 enzyme do at the molecular level?", "ALDH2", GENE, [("has_molecular_function", False)]),
    ("Name the signalling and metabolic maps in KEGG that include AKT1.", "AKT1", GENE, [("in_pathway", False)]),
    ("What protein families show up in the protein encoded by EGFR?", "EGFR", GENE, [("has_domain", False)]),
    ("Which Mendelian inheritance records point to HBB?", "HBB", GENE, [("associated_with_omim", False)]),
    ("What is the enzyme commission number of the enzyme LDHA codes for?", "LDHA", GENE, [("has_enzyme_activity", False)]),
    ("Which UniProt accessions correspond to what TP53 produces?", "TP53", GENE, [("encodes_protein", False)]),
    ("Under what other symbols has TP53 been published?", "TP53", GENE, [("has_alias", False)]),
    ("What kind of gene is XIST, protein-coding or not?", "XIST", GENE, [("has_gene_type", False)]),
    ("Which Ensembl record matches BRCA1?", "BRCA1", GENE, [("has_ensembl_id", False)]),
    ("What sort of gene is MIR21?", "MIR21", GENE, [("has_gene_type", False)]),
    ("Where does the SOX2 gene lie on the chromosome map?", "SOX2", GENE, [("located_at_cytoband", False)]),
    ("What jobs does the SOX2 protein carry out?", "SOX2", GENE, [("has_molecular_function", False)]),
    ("In which part of the cell is the HBA1 product found?", "HBA1", GENE, [("located_in_component", False)]),
    ("Which signature patterns from PROSITE match the KRAS protein?", "KRAS", GENE, [("has_motif", False)]),
    ("Which genes encode a protein with the Pfam PF00870 domain?", "Pfam PF00870", "has_domain:PF00870", [("has_domain", True)]),
    ("Which genes sit on the mitochondrial DNA?", "chromosome MT", "located_on_chromosome:MT", [("located_on_chromosome", True)]),
    ("What gene does the OMIM 191170 record describe?", "OMIM 191170", "associated_with_omim:191170", [("associated_with_omim", True)]),
    ("Which genes make up KEGG pathway 03440?", "KEGG pathway 03440", "in_pathway:03440", [("in_pathway", True)]),
    ("Apoptotic process is a special case of what?", "apoptotic process", TERM, [("is_a", False)]),
    ("What bigger structure contains the nucleolus?", "nucleolus", TERM, [("part_of", False)]),
    ("Positive regulation of apoptotic process speeds up which process?", "positive regulation of apoptotic process", TERM,
     [("positively_regulates", False)]),
    ("Negative regulation of cell population proliferation holds back what?", "negative regulation of cell population proliferation",
     TERM, [("negatively_regulates", False)]),
    ("What kinds of DNA repair are more specific than DNA repair itself?", "DNA repair", TERM, [("is_a", True)]),
    ("Which pathways contain genes carrying the Pfam PF00870 domain?", "Pfam PF00870", "has_domain:PF00870",
     [("has_domain", True), ("in_pathway", False)]),
    ("On which chromosomes do the genes of KEGG pathway 03440 lie?", "KEGG pathway 03440", "in_pathway:03440",
     [("in_pathway", True), ("located_on_chromosome", False)]),
    ("Which genes share a KEGG map with CHEK2?", "CHEK2", GENE, [("in_pathway", False), ("in_pathway", True)]),
    ("Into which broader kinds of process do the processes of ND1 fall?", "ND1", GENE,
     [("involved_in_process", False), ("is_a", False)]),
    ("Which papers is the gene KRT222 mentioned in?", "KRT222", GENE, [("cited_in", False)]),
    ("Which OMIM records concern the genes that carry the Pfam PF00870 domain?", "Pfam PF00870", "has_domain:PF00870",
     [("has_domain", True), ("associated_with_omim", False)]),
]


def hand(data: BioData) -> list[dict]:
    questions = []
    for question, topic, start, path in HAND:
        if start == GENE:
            node = data.gene(topic)
        elif start == TERM:
            node = data.go_by_name[topic]
        else:
            relation, value = start.split(":", 1)
            node = SPECS[relation].prefix + value
        answers = data.answers(node, path)
        if not answers:
            print(f"skipped (no answer in these files): {question}", file=sys.stderr)
            continue
        questions.append({"question": question, "answers": answers, "topics": [topic], "hop": len(path),
                          "path": [("^" if inv else "") + r for r, inv in path]})
    return questions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--org", type=Path, default=cache_dir() / "org.Hs.eg.sqlite")
    parser.add_argument("--go", type=Path, default=cache_dir() / "GO.sqlite")
    parser.add_argument("--out", type=Path, help="generated questions (JSONL)")
    parser.add_argument("--hand", type=Path, help="the hand-written questions (JSONL)")
    parser.add_argument("--per-template", type=int, default=25)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-answers", type=int, default=20)
    args = parser.parse_args()
    if not (args.out or args.hand):
        parser.error("give --out FILE, --hand FILE, or both")
    for path in (args.org, args.go):
        if not path.is_file():
            parser.error(f"{path}: no such file (fetch it: python -c 'from kgqa.loaders.biokg import fetch; fetch()')")
    data = BioData(args.org, args.go)
    for target, questions in ((args.out, lambda: generated(data, args.per_template, args.seed, args.max_answers)),
                              (args.hand, lambda: hand(data))):
        if target is None:
            continue
        made = questions()
        with open(target, "w", encoding="utf-8") as f:
            for q in made:
                f.write(json.dumps(q, ensure_ascii=False) + "\n")
        by_hop = defaultdict(int)
        for q in made:
            by_hop[q["hop"]] += 1
        print(f"{target}: {len(made)} questions ({', '.join(f'{n} of {h} hop' + ('s' if h > 1 else '') for h, n in sorted(by_hop.items()))})")


if __name__ == "__main__":
    main()
