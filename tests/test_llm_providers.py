"""The OpenAI-compatible provider against a real local HTTP server that misbehaves on purpose
(429s, 5xx, stalls, `<think>` tags), the response cache, and the prompt files."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from kgqa.llm.protocol import LLMError, strip_reasoning
from kgqa.llm.cache import CachedLLM
from kgqa.llm.openai_compat import OpenAICompatibleLLM
from kgqa.llm.prompt import PROMPT_DIR, load_prompt


class MisbehavingServer:
    """Each request takes the next step of the script: ("ok", text), ("status", code),
    ("stall", seconds) — answer only after that long — or ("ok-after", seconds, text)."""

    def __init__(self) -> None:
        self.script: list[tuple] = []
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.requests.append({"path": self.path, **body})
                    step = server.script.pop(0) if server.script else ("ok", "1. default")
                if step[0] == "status":
                    self._send(step[1], {"error": {"message": f"scripted {step[1]}", "type": "scripted"}})
                    return
                if step[0] == "stall":
                    time.sleep(step[1])
                    step = ("ok", "1. late")
                text = step[-1]
                if self.path.endswith("/chat/completions"):
                    choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                    kind = "chat.completion"
                else:
                    choice = {"index": 0, "text": text, "finish_reason": "stop", "logprobs": None}
                    kind = "text_completion"
                self._send(200, {"id": "x", "object": kind, "created": 0, "model": body["model"], "choices": [choice],
                                 "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}})

            def _send(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except BrokenPipeError:
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> "MisbehavingServer":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    with MisbehavingServer() as s:
        yield s


def llm_for(server: MisbehavingServer, **kwargs) -> OpenAICompatibleLLM:
    options = {"model": "scripted-model", "base_url": server.url, "api_key": "test", "timeout": 2.0,
               "max_attempts": 4, "max_seconds": 30.0}
    options.update(kwargs)
    return OpenAICompatibleLLM(**options)


def test_429_and_5xx_are_retried_and_counted(server):
    server.script = [("status", 429), ("status", 503), ("ok", "1. Paris")]
    completion = llm_for(server).complete("capital of France?")
    assert completion.text == "1. Paris"
    assert completion.retries == 2
    assert (completion.prompt_tokens, completion.completion_tokens) == (11, 7)
    assert len(server.requests) == 3


def test_retries_are_bounded_in_attempts(server):
    server.script = [("status", 500)] * 10
    with pytest.raises(LLMError, match=r"gave up after 3 attempt\(s\).*InternalServerError"):
        llm_for(server, max_attempts=3).complete("q")
    assert len(server.requests) == 3  # not one more


def test_retries_are_bounded_in_seconds(server):
    server.script = [("stall", 3.0)] * 10  # every answer comes after the 0.5 s client timeout
    started = time.monotonic()
    with pytest.raises(LLMError, match="APITimeoutError"):
        llm_for(server, timeout=0.5, max_attempts=50, max_seconds=2.0).complete("q")
    assert time.monotonic() - started < 8.0
    assert len(server.requests) < 50


def test_client_errors_are_not_retried(server):
    server.script = [("status", 400), ("ok", "never")]
    with pytest.raises(LLMError, match=r"after 1 attempt\(s\).*BadRequestError"):
        llm_for(server).complete("q")
    assert len(server.requests) == 1


def test_reasoning_tags_are_stripped_in_chat_and_completion_mode(server):
    server.script = [("ok", "<think>the user wants a city</think>\n1. Paris"), ("ok", "<think>unfinished reasoning")]
    assert llm_for(server, mode="chat").complete("q").text == "1. Paris"
    assert llm_for(server, mode="completion").complete("q").text == ""
    assert server.requests[0]["path"].endswith("/chat/completions") and server.requests[0]["messages"][0]["content"] == "q"
    assert server.requests[1]["path"].endswith("/completions") and server.requests[1]["prompt"] == "q"


def test_async_path_retries_too(server):
    server.script = [("status", 429), ("ok", "1. Lyon")]
    completion = asyncio.run(llm_for(server).acomplete("q", temperature=0.4, max_tokens=9, stop=["\n\n"]))
    assert (completion.text, completion.retries) == ("1. Lyon", 1)
    assert server.requests[-1]["temperature"] == 0.4 and server.requests[-1]["max_tokens"] == 9
    assert server.requests[-1]["stop"] == ["\n\n"]


def test_stop_strings_cut_even_when_the_server_ignores_them(server):
    server.script = [("ok", "1. Paris\n\nQuestion: next one")]
    assert llm_for(server).complete("q", stop=["\n\n"]).text == "1. Paris"


def test_response_cache_serves_repeats_from_disk(server, tmp_path):
    server.script = [("ok", "1. Paris"), ("ok", "1. Other")]
    cached = CachedLLM(llm_for(server), tmp_path)
    first = cached.complete("capital of France?", temperature=0.0)
    again = CachedLLM(llm_for(server), tmp_path).complete("capital of France?", temperature=0.0)
    other = cached.complete("capital of France?", temperature=0.2)  # different parameters: a miss
    assert (first.text, first.cached) == ("1. Paris", False)
    assert (again.text, again.cached, again.prompt_tokens) == ("1. Paris", True, 11)
    assert other.text == "1. Other"
    assert len(server.requests) == 2


def test_missing_model_name_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("KGQA_LLM_MODEL", raising=False)
    with pytest.raises(LLMError, match="KGQA_LLM_MODEL"):
        OpenAICompatibleLLM(base_url="http://127.0.0.1:9/v1")


def test_strip_reasoning_variants():
    assert strip_reasoning("<THINK>x</THINK> answer") == "answer"
    assert strip_reasoning("<reasoning>a\nb</reasoning>\n1. A") == "1. A"
    assert strip_reasoning("plain") == "plain"


def test_every_prompt_file_names_its_source_and_renders():
    names = sorted(p.stem for p in PROMPT_DIR.glob("*.txt"))
    assert {"lmp_sample_l1", "lmp_sample_deeper", "lmp_aggregate", "lmp_transform_l1", "lmp_transform_deeper",
            "lmp_answer", "llm_only_io", "llm_only_cot", "kgfr_relation_description", "kgfr_verbalisation",
            "kgfr_answer", "kgfr_reflect", "grasp_select", "grasp_answer", "glow_understand", "glow_link", "text2query_sparql",
            "text2query_cypher"} <= set(names)
    values = dict.fromkeys(["question", "topic", "k", "relations", "facts", "background", "outline", "head",
                            "relation", "tails", "examples", "candidates", "paths", "answers", "label_name", "entity_type",
                            "entity", "kg", "kg_description", "labels", "triples", "gnn", "pairs", "count", "graph", "evidence",
                            "limit", "schema", "label", "feedback", "topics", "example_question", "example_topics",
                            "example_query"], "X")
    for name in names:
        prompt = load_prompt(name)
        assert prompt.source, f"{name} does not cite its source"
        zero_shot = prompt.render(False, **values)
        few_shot = prompt.render(True, **values)
        assert "###" not in zero_shot and "###" not in few_shot
        assert len(few_shot) >= len(zero_shot)
    assert load_prompt("grasp_answer").render(True, **values).endswith("Reply:")  # final_newline: false
    assert load_prompt("lmp_answer").render(True, **values).endswith("\n")
    with pytest.raises(ValueError, match="needs a value for 'question'"):
        load_prompt("llm_only_io").render(False)
