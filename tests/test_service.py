"""The HTTP service (`kgqa serve` as a subprocess) over real Virtuoso and real Neo4j: the Answer JSON,
health, methods, metrics, OpenAPI; hostile requests get 4xx with a reason and change nothing in the
store; many clients wait in the queue rather than get 503; a full queue (503 + Retry-After), the request
timeout (504) and API keys. Cold start: the service listens at once and says "warming" until its
warm-up has loaded the models; questions wait for it; a failed warm-up is a 503 with its reason."""

from __future__ import annotations

import concurrent.futures
import signal
import threading
import time

import httpx
import pytest
from fastapi.testclient import TestClient
from conftest import DEMO_KG
from launchers import KgqaService

from kgqa import Engine, open_store, open_writer
from kgqa.loaders import load_file
from kgqa.faces.service import AnswerSchema, ServiceLimits, create_app
from kgqa.sparql.embedded import EmbeddedWriter

pytestmark = pytest.mark.slow
KG = "svc"
INJECTIONS = [
    '"} } ; DROP ALL ; INSERT DATA { <urn:x> <urn:y> <urn:z> } #',
    "Zzyzx') DETACH DELETE n //",
    "x' OR 1=1 -- ; MATCH (n) DETACH DELETE n",
    "}} CLEAR GRAPH <urn:kgqa:kg:svc:data> {{",
]


def _loaded(writer_url: str) -> None:
    writer = open_writer(writer_url, KG)
    load_file(writer, DEMO_KG)  # idempotent
    writer.close()


@pytest.fixture(scope="module", params=["virtuoso", "neo4j"])
def service(request, virtuoso_server, neo4j_server, tmp_path_factory):
    if request.param == "virtuoso":
        _loaded(virtuoso_server.writer_url)
        reader = "sparql+" + virtuoso_server.sparql_url
    else:
        _loaded(neo4j_server.url)
        reader = neo4j_server.url
    with KgqaService(reader, kg=KG, log_dir=tmp_path_factory.mktemp("svc")) as svc:
        yield svc, reader


def until_warm(url: str, timeout_s: float = 120, headers: dict[str, str] | None = None) -> dict:
    """/v1/health once it is no longer "warming"."""
    deadline = time.monotonic() + timeout_s
    while True:
        health = httpx.get(url + "/v1/health", headers=headers, timeout=60).json()
        if health["status"] != "warming" or time.monotonic() > deadline:
            return health
        time.sleep(0.2)


def counts(reader: str) -> tuple[int, int]:
    store = open_store(reader, KG)
    try:
        c = store.counts()
        return c.facts, c.entities
    finally:
        store.close()


def test_ask_returns_the_answer_json_with_evidence(service):
    svc, _ = service
    r = httpx.post(svc.url + "/v1/ask", json={"question": "who directed Kismet"}, timeout=60)
    assert r.status_code == 200, r.text
    data = r.json()
    AnswerSchema.model_validate(data)  # the documented schema (OpenAPI) is what the service sends
    assert [t["label"] for t in data["topics"]] == ["Kismet"] and data["method"] == "kgfr"
    assert data["answers"] and all(a["iri"].startswith(f"urn:kgqa:kg:{KG}:") for a in data["answers"])
    drawn = data["evidence"]["path_edges"]  # from the topic to each answer
    assert drawn and drawn[0][0]["head"] == "Kismet" and drawn[0][-1]["tail"] == data["answers"][0]["label"]
    # the retrieval's store round trips: one in all, on Neo4j (expand_hops.cypher) and on Virtuoso
    # (kgqa's APP procedure, virtuoso_app.sql)
    assert data["trace"]["round_trips"] == 1
    assert data["trace"]["seconds"]["total"] > 0
    again = httpx.post(svc.url + "/v1/ask", json={"question": "films directed by William Dieterle", "topics": ["William Dieterle"]}, timeout=60)
    assert again.status_code == 200 and [t["label"] for t in again.json()["topics"]] == ["William Dieterle"]


def test_health_methods_metrics_docs(service):
    svc, _ = service
    health = until_warm(svc.url)
    assert health["ok"] and health["store"] == "reachable" and health["checkpoint"] == "ready" and health["kg"] == KG
    assert health["status"] == "ok" and set(health["warm_up_s"]) == {"store", "method", "encoder"}
    methods = httpx.get(svc.url + "/v1/methods").json()
    assert methods["default"] == "kgfr" and {m["name"]: m["available"] for m in methods["methods"]}["lmp"] is False
    httpx.post(svc.url + "/v1/ask", json={"question": "who directed Kismet"}, timeout=60)
    metrics = httpx.get(svc.url + "/metrics").text
    assert 'kgqa_requests_total{path="/v1/ask",status="200"}' in metrics
    assert 'kgqa_ask_seconds_bucket{le="+Inf"}' in metrics and "kgqa_store_round_trips_total" in metrics
    assert "kgqa_llm_calls_total 0" in metrics
    assert httpx.get(svc.url + "/docs").status_code == 200
    assert "/v1/ask" in httpx.get(svc.url + "/openapi.json").json()["paths"]


def test_hostile_requests_get_4xx_with_a_reason_and_change_nothing(service):
    svc, reader = service
    before = counts(reader)
    cases = [
        (dict(content=b"x" * 20_000, headers={"Content-Type": "application/json"}), 413, "over"),
        (dict(content=b'{"question": "who directed', headers={"Content-Type": "application/json"}), 422, "invalid request"),
        (dict(content=b"question=who", headers={"Content-Type": "application/x-www-form-urlencoded"}), 422, "invalid request"),
        (dict(json={"question": "who directed Kismet", "method": "cypher"}), 422, "unknown method"),
        (dict(json={"question": "who directed Kismet", "method": "lmp"}), 422, "needs an LLM"),
        (dict(json={"question": "who directed Kismet", "sparql": "DROP ALL"}), 422, "sparql: Extra inputs are not permitted"),
        (dict(json={"question": "who directed Kismet", "options": {"timeout": 1}}), 422, "unknown option"),
        (dict(json={"question": "x" * 600}), 422, "limit is 500"),
        (dict(json={"question": "   "}), 422, "empty"),
        (dict(json={"question": 42}), 422, "invalid request"),
    ]
    cases += [(dict(json={"question": "who directed it", "topics": [text]}), 422, "not entities of KG") for text in INJECTIONS]
    for kwargs, status, reason in cases:
        r = httpx.post(svc.url + "/v1/ask", timeout=60, **kwargs)
        assert r.status_code == status, (kwargs, r.text)
        body = r.json()
        assert body["error"]["status"] == status and reason in body["error"]["reason"], (kwargs, body)
        assert "Traceback" not in r.text
    # injection text in a question is only text: where no word of it names an entity the service
    # says so (422); where one does ("match" is a MetaQA tag) that entity is linked, nothing else happens
    for text in INJECTIONS:
        r = httpx.post(svc.url + "/v1/ask", json={"question": text}, timeout=60)
        if r.status_code == 200:
            assert all(t["query"] in text for t in r.json()["topics"])
        else:
            assert r.status_code == 422 and "no entity of the KG" in r.json()["error"]["reason"]
    # injection text around a real entity is just text: the entity is linked, the rest is ignored
    mixed = httpx.post(svc.url + "/v1/ask", json={"question": "Kismet') DETACH DELETE n // }; DROP ALL"}, timeout=60)
    assert mixed.status_code == 200 and [t["label"] for t in mixed.json()["topics"]] == ["Kismet"]
    assert httpx.get(svc.url + "/v1/nothing").json()["error"]["status"] == 404
    assert counts(reader) == before


def test_with_default_settings_sixty_four_clients_at_once_all_get_answers(service):
    svc, _ = service
    questions = ["who directed Kismet", "who wrote Funny Games", "who starred in Click", "when was Felon released",
                 "films directed by William Dieterle", "what language is Les Misérables in"]
    with concurrent.futures.ThreadPoolExecutor(64) as pool:
        replies = list(pool.map(lambda i: httpx.post(svc.url + "/v1/ask", json={"question": questions[i % len(questions)]}, timeout=120),
                                range(64)))
    assert [r.status_code for r in replies] == [200] * 64, [r.text for r in replies if r.status_code != 200][:2]
    by_question = {}
    for i, r in enumerate(replies):  # batched or not, one question gets one answer
        by_question.setdefault(questions[i % len(questions)], set()).add(tuple(a["iri"] for a in r.json()["answers"]))
    assert all(len(answers) == 1 for answers in by_question.values()), by_question
    batched = [r.json()["trace"]["subgraph"]["scoring_batch"] for r in replies]
    assert max(batched) > 1, batched  # concurrent questions shared model calls


def test_concurrency_limit_timeout_and_api_keys(virtuoso_server, llama_server, tmp_path):
    _loaded(virtuoso_server.writer_url)
    reader = "sparql+" + virtuoso_server.sparql_url
    llm = f"{llama_server.url}?model=gemma3-270m&mode=completion"
    slow = {"question": "what movies did Ronald Colman act in", "method": "lmp", "options": {"depth": 2}}
    with KgqaService(reader, "--llm", llm, "--max-concurrent", "1", "--max-queue", "1", "--api-keys", "k1,k2", kg=KG, log_dir=tmp_path) as svc:
        assert httpx.post(svc.url + "/v1/ask", json=slow).status_code == 401
        assert httpx.get(svc.url + "/v1/health").status_code == 401
        assert until_warm(svc.url, headers={"X-API-Key": "k2"})["status"] == "ok"
        assert httpx.get(svc.url + "/v1/health", headers={"X-API-Key": "k2"}, timeout=60).status_code == 200
        headers = {"X-API-Key": "k1"}
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            replies = list(pool.map(lambda _: httpx.post(svc.url + "/v1/ask", json=slow, headers=headers, timeout=120), range(4)))
        statuses = sorted(r.status_code for r in replies)
        assert statuses.count(200) >= 1 and 503 in statuses, statuses  # one answered (a second may, after its wait); the rest: queue full
        # the two that found the queue full (the one that waited may also get 503, past --queue-timeout)
        busy = [r for r in replies if r.status_code == 503 and "busy and 1 questions are waiting" in r.json()["error"]["reason"]]
        assert busy and all(r.headers["Retry-After"] == "1" for r in busy), [r.text for r in replies]
        ok = next(r for r in replies if r.status_code == 200).json()
        assert ok["method"] == "lmp" and 1 <= ok["trace"]["llm"]["calls"] <= 25
        metrics = httpx.get(svc.url + "/metrics").text
        assert 'status="503"' in metrics and "kgqa_llm_calls_total 0" not in metrics
    with KgqaService(reader, "--llm", llm, "--request-timeout", "0.3", kg=KG, log_dir=tmp_path) as svc:
        warming = httpx.post(svc.url + "/v1/ask", json=slow, timeout=60)  # still warming at its deadline
        assert warming.status_code == 503 and warming.headers["Retry-After"] == "5" and "still warming up" in warming.json()["error"]["reason"]
        assert until_warm(svc.url)["status"] == "ok"
        r = httpx.post(svc.url + "/v1/ask", json=slow, timeout=60)
        assert r.status_code == 504 and "0.3 s request timeout" in r.json()["error"]["reason"]


def test_stopped_by_sigterm_the_service_closes_and_runs_its_exit_handlers(tmp_path):
    """uvicorn raises SIGTERM again after its shutdown; `kgqa serve` then exits (143) through its
    `finally` and exit handlers instead of dying there: the files PyG wrote for the model are gone
    (RAPL's GCN layers: KGFR's use no PyG)."""
    location = tmp_path / "store"
    writer = open_writer(f"oxigraph://{location}", KG)
    load_file(writer, DEMO_KG)
    writer.close()
    temp = tmp_path / "tmp"
    temp.mkdir()
    with KgqaService(f"oxigraph://{location}", "--method", "rapl", kg=KG, env={"TMPDIR": str(temp)}, log_dir=tmp_path) as svc:
        process = svc.proc
        assert httpx.post(svc.url + "/v1/ask", json={"question": "who directed Kismet"}, timeout=120).status_code == 200
        assert list(temp.glob("*_propagate_*.py")), "the model wrote no generated file: nothing to check"
    assert process is not None and process.returncode == 128 + signal.SIGTERM  # stopped by PID with SIGTERM
    assert not list(temp.glob("*_propagate_*.py"))


def test_kgqa_serve_listens_at_once_says_warming_then_ok_and_the_first_question_waits_for_the_warm_up(tmp_path):
    location = tmp_path / "store"
    writer = open_writer(f"oxigraph://{location}", KG)
    load_file(writer, DEMO_KG)
    writer.close()
    with KgqaService(f"oxigraph://{location}", kg=KG, env={"KGQA_CACHE": str(tmp_path / "cache")}, log_dir=tmp_path) as svc:
        first = httpx.get(svc.url + "/v1/health", timeout=10)  # the port answers while the models load
        assert first.status_code == 503 and first.json()["status"] == "warming", first.text
        assert first.headers["Retry-After"] == "5" and first.json()["kg"] == KG
        asked = httpx.post(svc.url + "/v1/ask", json={"question": "who directed Kismet"}, timeout=120)  # waits, then answers
        assert asked.status_code == 200 and asked.json()["answers"][0]["label"] == "William Dieterle"
        health = until_warm(svc.url)
        assert health["status"] == "ok" and health["ok"] and health["warm_up_s"]["method"] > 0
        assert httpx.get(svc.url + "/v1/health").status_code == 200
        log = svc.log_path.read_text()
    assert "Warning" not in log and "Loading weights" not in log, log


@pytest.fixture(scope="module")
def demo_store():
    writer = EmbeddedWriter.open(None, KG)
    load_file(writer, DEMO_KG)
    return writer.reader()


def gated(engine: Engine) -> threading.Event:
    """Hold the engine's warm-up until the returned event is set."""
    gate, warm_up = threading.Event(), engine.warm_up
    engine.warm_up = lambda: (gate.wait(60), warm_up())[1]  # type: ignore[method-assign]
    return gate


def test_while_warming_health_is_503_and_a_question_waits_then_is_answered(demo_store):
    engine = Engine(demo_store)
    gate = gated(engine)
    with TestClient(create_app(engine)) as client, concurrent.futures.ThreadPoolExecutor(1) as pool:
        health = client.get("/v1/health")
        assert health.status_code == 503 and health.headers["Retry-After"] == "5"
        assert health.json()["status"] == "warming" and not health.json()["ok"] and "loading models" in health.json()["reason"]
        assert client.get("/v1/methods").status_code == 200  # what needs no model answers meanwhile
        assert client.post("/v1/ask", json={"question": "who directed Kismet", "method": "lmp"}).status_code == 422  # checked first
        asked = pool.submit(client.post, "/v1/ask", json={"question": "who directed Kismet"})
        time.sleep(0.5)
        assert not asked.done()  # waiting for the warm-up, not failed
        gate.set()
        assert asked.result(timeout=120).status_code == 200 and asked.result().json()["answers"][0]["label"] == "William Dieterle"
        health = client.get("/v1/health")
        assert health.status_code == 200 and health.json()["status"] == "ok" and health.json()["ok"]
    engine.close()


def test_a_question_still_waiting_at_its_timeout_gets_503_with_retry_after(demo_store):
    engine = Engine(demo_store)
    gate = gated(engine)
    with TestClient(create_app(engine, ServiceLimits(request_timeout_s=0.3))) as client:
        r = client.post("/v1/ask", json={"question": "who directed Kismet"})
        assert r.status_code == 503 and r.headers["Retry-After"] == "5"
        assert "still warming up" in r.json()["error"]["reason"] and r.json()["error"]["status"] == 503
        gate.set()
    engine.close()


def test_a_failed_warm_up_is_503_with_its_reason_for_health_and_questions_and_is_tried_again_later(demo_store, tmp_path):
    engine = Engine(demo_store, checkpoint=tmp_path / "no-checkpoint")
    with TestClient(create_app(engine, ServiceLimits(warm_up_retry_s=3600))) as client:
        health = until_warm_client(client)
        assert health.status_code == 503 and health.json()["status"] == "failed" and not health.json()["ok"]
        reason = health.json()["reason"]
        assert reason.startswith("warm-up failed: method: ValueError:") and "no-checkpoint: no KGFR checkpoint here" in reason
        assert "Traceback" not in health.text and int(health.headers["Retry-After"]) > 3000
        r = client.post("/v1/ask", json={"question": "who directed Kismet"})
        assert r.status_code == 503 and "Traceback" not in r.text and int(r.headers["Retry-After"]) > 3000
        assert r.json()["error"]["reason"] == "the service could not warm up: " + reason.removeprefix("warm-up failed: ")
        assert health.json()["attempt"] == client.get("/v1/health").json()["attempt"] == 1  # not again before warm_up_retry_s
    with TestClient(create_app(engine, ServiceLimits(warm_up_retry_s=0))) as client:
        until_warm_client(client)
        assert until_warm_client(client).json()["attempt"] >= 2  # a request after warm_up_retry_s starts it again
    engine.close()


def until_warm_client(client: TestClient):  # type: ignore[no-untyped-def]
    for _ in range(600):
        health = client.get("/v1/health")
        if health.json()["status"] != "warming":
            return health
        time.sleep(0.1)
    return health
