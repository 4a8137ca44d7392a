"""text2query (issue 47) against real stores: an LLM that writes hostile queries — writes, deletes,
SERVICE and LOAD calls to a listening trap, `LOAD CSV`, `dbms.*` and other procedures, a DETACH
DELETE hidden after a comment, another KG's graph, a cartesian product of the KG — has every one
refused before it runs, by a named rule; nothing is written, nothing is fetched, and the answer is
kgfr's with the reason in the trace. A well-formed query answers from the store."""

from __future__ import annotations

import http.server
import threading

import pytest
from conftest import store_from_lines
from scripted_llm import ScriptedLLM

from kgqa import open_store, open_writer
from kgqa.core.namespace import KGNamespace
from kgqa.faces.sdk import Engine
from kgqa.loaders import load_file
from kgqa.methods.text2query.cypher_guard import check_cypher
from kgqa.methods.text2query.refusal import QueryRefused
from kgqa.methods.text2query.sparql_guard import check_sparql

FILMS = KGNamespace("films")
OTHER = KGNamespace("other")
LINES = [
    "Kismet|directed_by|William Dieterle", "Juarez|directed_by|William Dieterle", "Dr. Socrates|directed_by|William Dieterle",
    "Kismet|release_year|1944", "Juarez|release_year|1939", "Kismet|starred_actors|Ronald Colman",
    "Random Harvest|starred_actors|Ronald Colman", "Random Harvest|directed_by|Mervyn LeRoy",
]
OTHER_LINES = ["Secret Film|directed_by|Hidden Person", "Secret Film|release_year|2001"]
RULES = {"read-only", "service", "graph", "limit", "cartesian", "not-a-query", "empty", "explain", "load-csv", "transactions",
         "procedure", "database", "kg-scope", "unanchored"}


class Trap(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:  # noqa: N802
        Trap.hits.append(self.path)
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"s,p,o\n")

    do_POST = do_GET  # noqa: N815

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def trap():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Trap)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def hostile_sparql(trap: str) -> list[str]:
    data, other = f"<{FILMS.data_graph}>", f"<{OTHER.data_graph}>"
    kismet, directed = f"<{FILMS.entity('Kismet')}>", f"<{FILMS.relation('directed_by')}>"
    bodies = [
        f"INSERT DATA {{ GRAPH {data} {{ {kismet} {directed} <urn:intruder> }} }}",
        f"DELETE DATA {{ GRAPH {data} {{ {kismet} {directed} <{FILMS.entity('William Dieterle')}> }} }}",
        f"DELETE WHERE {{ GRAPH {data} {{ ?s ?p ?o }} }}",
        f"WITH {data} DELETE {{ ?s ?p ?o }} WHERE {{ ?s ?p ?o }}",
        f"INSERT {{ GRAPH {data} {{ ?s {directed} ?s }} }} WHERE {{ GRAPH {data} {{ ?s ?p ?o }} }}",
        f"CLEAR GRAPH {data}", "CLEAR ALL", f"DROP GRAPH {data}", "DROP ALL", "CREATE GRAPH <urn:new>",
        f"LOAD <{trap}/data.ttl>", f"LOAD <{trap}/data.ttl> INTO GRAPH {data}", f"COPY {data} TO {other}", f"MOVE {data} TO <urn:x>",
        f"SELECT * WHERE {{ SERVICE <{trap}/sparql> {{ ?s ?p ?o }} }}",
        f"SELECT * WHERE {{ SERVICE SILENT <{trap}/sparql> {{ ?s ?p ?o }} }}",
        f"SELECT ?x WHERE {{ GRAPH {data} {{ {kismet} {directed} ?x }} OPTIONAL {{ SERVICE <{trap}/a> {{ ?x ?p ?o }} }} }}",
        f"SELECT ?x WHERE {{ {{ GRAPH {data} {{ {kismet} {directed} ?x }} }} UNION {{ SERVICE <{trap}/b> {{ ?x ?p ?o }} }} }}",
        f"SELECT ?x WHERE {{ GRAPH {data} {{ {kismet} {directed} ?x }} FILTER EXISTS {{ SERVICE <{trap}/c> {{ ?x ?p ?o }} }} }}",
        f"SELECT ?x WHERE {{ {{ SELECT ?x WHERE {{ SERVICE <{trap}/d> {{ ?x ?p ?o }} }} }} }}",
        f"SELECT * WHERE {{ VALUES ?u {{ <{trap}/e> }} SERVICE ?u {{ ?s ?p ?o }} }}",
        f"SELECT ?x FROM {other} WHERE {{ ?x ?p ?o }}",
        f"SELECT ?x FROM NAMED {other} WHERE {{ GRAPH ?g {{ ?x ?p ?o }} }}",
        f"SELECT ?x WHERE {{ GRAPH {other} {{ ?x ?p ?o }} }}",
        "SELECT ?x WHERE { GRAPH <http://www.openlinksw.com/schemas/virtrdf#> { ?x ?p ?o } }",
        f"SELECT ?x FROM <{trap}/remote.ttl> WHERE {{ ?x ?p ?o }}",
        f"CONSTRUCT {{ ?s ?p ?o }} WHERE {{ GRAPH {data} {{ ?s ?p ?o }} }}",
        f"DESCRIBE {kismet}",
        f'define get:soft "replace" SELECT * FROM <{trap}/soft> WHERE {{ ?s ?p ?o }}',
        f"DEFINE input:grab-all \"yes\" SELECT * WHERE {{ GRAPH {data} {{ ?s ?p ?o }} }}",
        f"SELECT * WHERE {{ GRAPH {data} {{ ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l }} }}",
        f"SELECT * WHERE {{ GRAPH {data} {{ ?a ?b ?c }} GRAPH {data} {{ ?d ?e ?f }} GRAPH {data} {{ ?g ?h ?i }} }}",
        f"SELECT ?x WHERE {{ GRAPH {data} {{ {kismet} {directed} ?x }} }} LIMIT 10000000",
        f"SELECT * {{ GRAPH {data} {{ ?s ?p ?o }} }} ; INSERT DATA {{ <urn:a> <urn:b> <urn:c> }}",
        "",
    ]
    wrappers = [
        lambda b: b,
        lambda b: "# a harmless question\n" + b,
        lambda b: "PREFIX r: <urn:kgqa:kg:films:r:>\nPREFIX e: <urn:kgqa:kg:films:e:>\n" + b,
        lambda b: b.lower() if "<" not in b else b.replace("SELECT", "select").replace("INSERT", "insert").replace("DELETE", "delete"),
        lambda b: f"```sparql\n{b}\n```",
        lambda b: "BASE <urn:kgqa:kg:films:>\n" + b.replace("\n", " "),
        lambda b: b + "\n# done",
    ]
    return [wrap(body) for body in bodies for wrap in wrappers]


def hostile_cypher(trap: str) -> list[str]:
    bodies = [
        "CREATE (n:Entity {kg: $kg, iri: 'urn:intruder', label: 'intruder'}) RETURN n",
        "MERGE (n:Entity {kg: $kg, iri: 'urn:intruder'}) RETURN n.iri",
        "MATCH (n:Entity {kg: $kg}) DETACH DELETE n",
        "MATCH (n:Entity {kg: $kg}) SET n.label = 'owned' RETURN n",
        "MATCH (n:Entity {kg: $kg}) REMOVE n.label RETURN n",
        "MATCH (a:Entity {kg: $kg})-[f:FACT]->(b) DELETE f",
        "// who directed Kismet\nMATCH (n:Entity {kg: $kg}) DETACH DELETE n",
        "/* read only */ MATCH (t:Entity {kg: $kg, iri: $topic0}) WITH t MATCH (n) DETACH DELETE n",
        "MATCH (t:Entity {kg: $kg, iri: $topic0}) CALL { WITH t DETACH DELETE t } RETURN 1 AS x",
        "MATCH (t:Entity {kg: $kg}) FOREACH (x IN [1] | SET t.x = 1) RETURN t",
        "MATCH (t:Entity {kg: $kg}) CALL { WITH t SET t.y = 2 } IN TRANSACTIONS RETURN t",
        f"LOAD CSV FROM '{trap}/x.csv' AS row MATCH (t:Entity {{kg: $kg}}) RETURN row, t",
        f"MATCH (t:Entity {{kg: $kg}}) WITH t LOAD CSV WITH HEADERS FROM '{trap}/y.csv' AS row RETURN row",
        "CALL dbms.components() YIELD name MATCH (t:Entity {kg: $kg}) RETURN name",
        "CALL dbms.listConfig() YIELD name MATCH (t:Entity {kg: $kg}) RETURN name",
        "CALL dbms.security.createUser('eve', 'secret', false) MATCH (t:Entity {kg: $kg}) RETURN t",
        "CALL db.createLabel('Owned') MATCH (t:Entity {kg: $kg}) RETURN t",
        "CALL db.clearQueryCaches() YIELD value MATCH (t:Entity {kg: $kg}) RETURN value",
        "CALL apoc.create.node(['X'], {}) YIELD node MATCH (t:Entity {kg: $kg}) RETURN node",
        f"CALL apoc.load.json('{trap}/z.json') YIELD value MATCH (t:Entity {{kg: $kg}}) RETURN value",
        "CALL apoc.periodic.iterate('MATCH (n) RETURN n', 'DETACH DELETE n', {}) YIELD batches MATCH (t:Entity {kg: $kg}) RETURN batches",
        "CREATE INDEX owned IF NOT EXISTS FOR (n:Entity) ON (n.kg)",
        "DROP CONSTRAINT kgqa_entity",
        "SHOW USERS",
        "USE system SHOW DATABASES",
        "MATCH (n:Entity {kg: 'other'}) RETURN n.iri AS answer",
        "MATCH (n:Entity) WHERE n.kg = 'other' RETURN n.iri AS answer",
        "MATCH (n:Entity) RETURN n.iri AS answer",
        "MATCH (a:Entity {kg: $kg}), (b:Entity {kg: $kg}), (c:Entity {kg: $kg}), (d:Entity {kg: $kg}), (e:Entity {kg: $kg}), "
        "(f:Entity {kg: $kg}), (g:Entity {kg: $kg}), (h:Entity {kg: $kg}) RETURN a, b, c, d, e, f, g, h",
        "MATCH (a:Entity {kg: $kg})-[:FACT]->(x), (b:Entity {kg: $kg})-[:FACT]->(y) RETURN a, x, b, y",
        "MATCH (t:Entity {kg: $kg}) RETURN t; MATCH (n) DETACH DELETE n",
        "",
    ]
    wrappers = [
        lambda b: b,
        lambda b: "// generated\n" + b,
        lambda b: f"```cypher\n{b}\n```",
        lambda b: b.replace("MATCH", "match").replace("DELETE", "delete").replace("CALL", "call"),
        lambda b: "CYPHER " + b if b and not b.startswith(("CREATE INDEX", "DROP", "SHOW", "USE")) else b,
        lambda b: b + "\n/* end */",
        lambda b: "  \n" + b.replace(" ", "  "),
    ]
    return [wrap(body) for body in bodies for wrap in wrappers]


def _load(url: str, kg: str, lines: list[str], tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / f"{kg}.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    writer = open_writer(url, kg)
    load_file(writer, path)
    writer.close()


@pytest.fixture(scope="module", params=["embedded", "virtuoso", "neo4j"])
def store_url(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(request.param)
    if request.param == "embedded":
        url = store_from_lines(tmp, "films", LINES)
        _load(url, "other", OTHER_LINES, tmp)
        return url
    server = request.getfixturevalue("virtuoso_server" if request.param == "virtuoso" else "neo4j_server")
    writer_url = server.writer_url if request.param == "virtuoso" else server.url
    _load(writer_url, "films", LINES, tmp)
    _load(writer_url, "other", OTHER_LINES, tmp)
    return "sparql+" + server.sparql_url if request.param == "virtuoso" else server.url


def _counts(url: str) -> tuple:
    stores = [open_store(url, kg) for kg in ("films", "other")]
    try:
        return tuple(s.counts() for s in stores)
    finally:
        for s in stores:
            s.close()


def test_every_hostile_query_is_refused_by_a_named_rule_before_it_runs(store_url, trap):
    Trap.hits.clear()
    before = _counts(store_url)
    cypher = store_url.startswith("bolt")
    queries = hostile_cypher(trap) if cypher else hostile_sparql(trap)
    assert len(queries) >= 200
    llm = ScriptedLLM(queries)
    refused: dict[str, int] = {}
    with Engine(store_url, "text2query", llm=llm, kg="films", query_retries=2) as engine:
        for _ in range(len(queries) // 3):
            answer = engine.ask("who directed Kismet")
            assert answer.trace.fallback and answer.trace.fallback.startswith("kgfr's answer (no LLM): query 3 refused ("), answer.evidence.queries
            assert [a.label for a in answer.answers][:1] == ["William Dieterle"]  # kgfr's answer, said to be one
            for record in answer.evidence.queries:
                assert record["verdict"] == "refused" and record["rule"] in RULES, record
                refused[record["rule"]] = refused.get(record["rule"], 0) + 1
    assert sum(refused.values()) == 3 * (len(queries) // 3)
    assert _counts(store_url) == before and Trap.hits == []
    # the main rules all fired (the list above is not one rule tried many times)
    expected = {"read-only", "load-csv", "procedure", "kg-scope", "cartesian"} if cypher else {"read-only", "service", "graph", "cartesian", "limit"}
    assert expected <= set(refused), refused


def test_a_checked_query_answers_from_the_store_and_its_rows_are_the_evidence(store_url):
    if store_url.startswith("bolt"):
        good = ("MATCH (t:Entity {kg: $kg, iri: $topic0})-[f:FACT]->(d:Entity)<-[g:FACT]-(x:Entity) "
                "WHERE f.relation = $r_directed_by AND g.relation = $r_directed_by AND x <> t RETURN DISTINCT x.iri AS answer")
        other = "MATCH (n:Entity {kg: $kg}) WHERE n.label = 'Hidden Person' RETURN n.iri AS answer"
    else:
        good = (f"SELECT DISTINCT ?answer WHERE {{ GRAPH <{FILMS.data_graph}> {{ <{FILMS.entity('Kismet')}> <{FILMS.relation('directed_by')}> ?d . "
                f"?answer <{FILMS.relation('directed_by')}> ?d . FILTER(?answer != <{FILMS.entity('Kismet')}>) }} }}")
        other = f"SELECT ?answer WHERE {{ GRAPH ?g {{ ?answer ?p <{OTHER.entity('Hidden Person')}> }} }}"
    llm = ScriptedLLM([f"```\n{good}\n```", other, other, other])
    with Engine(store_url, "text2query", llm=llm, kg="films") as engine:
        answer = engine.ask("what else did the director of Kismet make")
        assert sorted(a.label for a in answer.answers) == ["Dr. Socrates", "Juarez"] and answer.trace.fallback is None
        [record] = answer.evidence.queries
        assert record["verdict"] == "ran" and record["rows"] == 2 and "Kismet" in llm.prompts[0] and "directed_by" in llm.prompts[0]
        # another KG's facts are out of reach: nothing is found, the LLM hears so, and kgfr answers
        answer = engine.ask("who is hidden")
        assert [r["verdict"] for r in answer.evidence.queries] == ["no rows"] * 3
        assert "ran and found nothing" in llm.prompts[-1] and answer.trace.fallback.startswith("kgfr's answer")
        assert "Hidden Person" not in [a.label for a in answer.answers]


def test_the_sparql_checker_adds_a_limit_and_checks_what_it_will_run():
    graphs = [FILMS.data_graph, FILMS.meta_graph]
    query = f"SELECT ?x WHERE {{ GRAPH <{FILMS.data_graph}> {{ ?x ?p ?o }} }} # no limit"
    checked = check_sparql(query, graphs, 50)
    assert checked.endswith("\nLIMIT 50") and check_sparql(checked, graphs, 50) == checked
    assert check_sparql(query.replace("# no limit", "LIMIT 7"), graphs, 50).endswith("LIMIT 7")
    with pytest.raises(QueryRefused, match=r"refused \(limit\)"):
        check_sparql(f"SELECT ?x WHERE {{ GRAPH <{FILMS.data_graph}> {{ ?x ?p ?o }} }} VALUES ?x {{ <urn:a> }}", graphs, 50)
    assert check_sparql(f"ASK {{ GRAPH <{FILMS.data_graph}> {{ ?x ?p ?o }} }}", graphs, 50).startswith("ASK")


def test_the_cypher_checker_refuses_before_planning_a_query_without_this_kg(tmp_path):
    class NoServer:
        def explain(self, *args):  # type: ignore[no-untyped-def]
            raise AssertionError("planned")

    for text in ["MATCH (n) RETURN n", "MATCH (n {kg: 'other'}) RETURN n", "MATCH (n {kg: $kg}), (m {kg: 'x'}) RETURN n"]:
        with pytest.raises(QueryRefused, match="kg-scope"):
            check_cypher(NoServer(), text, {})


def test_the_prompts_worked_example_is_a_query_over_this_kg_that_the_checks_accept(store_url):
    """Small models copy the worked example: it is written over this KG's own graph, relation and
    entity, so that a copy with the question's topic put in is a query that runs (an example over
    another KG taught Gemma to read a graph the checks refuse); a copy as is, about the example's
    entity, names none of the question's topics and is refused as such."""

    class CopiesTheExample(ScriptedLLM):
        few_shot = True

    def example(prompt: str) -> str:
        return prompt.split("Query:\n", 1)[1].split("\n\n", 1)[0]

    def topics(prompt: str) -> list[str]:
        return [line.split(" is ", 1)[0] for line in prompt.splitlines() if line.startswith("Topic entities: ")]

    def follow(prompt: str) -> str:  # the example with this question's topic in place of the example's
        shown, asked = topics(prompt)[:2]
        return example(prompt).replace(shown.removeprefix("Topic entities: "), asked.removeprefix("Topic entities: ").split(";")[0])

    llm = CopiesTheExample(follow)
    with Engine(store_url, "text2query", llm=llm, kg="films") as engine:
        answer = engine.ask("who directed Kismet")
        copied = example(llm.prompts[0])
        [record] = answer.evidence.queries
        assert record["verdict"] in ("ran", "no rows"), record
        assert ("$kg" in copied) if store_url.startswith("bolt") else (f"<{FILMS.data_graph}>" in copied and "urn:kgqa:kg:example" not in copied)
        if store_url.startswith("bolt"):
            return  # Cypher names the topic as $topic0, in the example as in the question: a copy is always anchored
        shown = topics(llm.prompts[0])[0]
        other = next(film for film in ("Juarez", "Random Harvest") if film not in shown)
        llm.replies = example
        answer = engine.ask(f"who directed {other}")
    # the example's query is about the example's entity, not this question's: refused, and kgfr answers
    assert {r["rule"] for r in answer.evidence.queries} == {"unanchored"} and answer.trace.fallback, answer.evidence.queries
