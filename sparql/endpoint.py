"""Any SPARQL 1.1 endpoint over HTTP (Virtuoso, `oxigraph serve`, …), read-only.

Results come as SPARQL 1.1 CSV, not JSON: a row is only its values here anyway (`Row`), and
Virtuoso 7 writes JSON results at about twice the cost (measured, 208 rows of 3 IRIs-or-numbers:
2.62 ms as JSON, 1.35 ms as CSV, 0.83 ms counting them). CSV cannot tell an unbound variable from
an empty literal; both are read as unbound, and no query here needs an empty literal.

Plain `http.client` rather than SPARQLWrapper: one kept-alive connection per store (a hop is one
round trip, so connection set-up would dominate), and direct access to the response headers that
reveal Virtuoso's silent truncation (`X-SPARQL-MaxRows`) and partial results on timeout
(`X-SQL-State: S1TAT`), which SPARQLWrapper hides.
"""

from __future__ import annotations

import csv
import json
import http.client
import io
import logging
import re
import socket
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from urllib.parse import urlencode, urlsplit

from kgqa.core.errors import NoLabelIndex, StoreError
from kgqa.core.labels import MIN_FUZZY_WORD, deletion_keys, normalise_label, within_one_edit
from kgqa.core.namespace import vocab
from kgqa.sparql import escape, queries, virtuoso_app
from kgqa.sparql.label_index import endpoint_index_path
from kgqa.sparql.queries import render
from kgqa.sparql.reader import Row, SparqlReader, pick_kg
from kgqa.core.store import WholeRetrieval

DEFAULT_TIMEOUT_S = 60.0
#: Pauses before asking Virtuoso again after a 404 from the endpoint that answered before (~30 s in all).
CHECKPOINT_PAUSES_S = (0.5, 1.0, 2.0, 4.0, 8.0, 15.0)
#: After Virtuoso answered that kgqa's APP procedure is missing, a store asks for it again this much
#: later: a load installs it meanwhile, and a long-running reader (the service) should not go hop by
#: hop until it is restarted.
APP_RECHECK_S = 300.0
log = logging.getLogger(__name__)
csv.field_size_limit(4 * virtuoso_app.MAX_BYTES)  # a whole retrieval comes as one value (default: 128 KiB)
_QUICKACK = getattr(socket, "TCP_QUICKACK", None)  # Linux only
# --- label search on Virtuoso (SparqlEndpointStore.search_labels) ---
#: Words of a text searched (the linker's fallbacks try spans of up to 8); "all but one" has n(n-1) terms.
MAX_SEARCH_WORDS = 8
#: Rows asked per (text, expression) for each candidate the caller gets: a row pairs a matching key with
#: each label of its entity, and the words are checked again here.
SEARCH_OVERFETCH = 4
#: Most rows one search query may bring: texts beyond go into further queries, so that no answer meets
#: Virtuoso's ResultSetMaxRows (10,000 by default; a result cut there raises).
SEARCH_ROWS = 5000
#: Most (text, expression) branches in one search query: a large UNION costs Virtuoso more than its
#: parts (MetaQA, 20 misspelt titles, 40 branches: median 85 ms in one query, 54 ms in 6-branch ones,
#: 66 ms in 2-branch ones).
SEARCH_BRANCHES = 8
#: A word shorter than this is no match on its own ("the", "of", "oz"; see contains_expression).
MIN_ALONE = 4
#: The wildcards `contains_expression` adds to each word, tried in turn while Virtuoso answers that one
#: matched too many words of its text index (FT038; each index word a wildcard matches is one more
#: list of documents to merge): the first 4 letters, the first half, none.
WILDCARD_PREFIXES = ("short", "long", None)
_FREE_TEXT_WORD = re.compile(r"[^\W_]+")  # letters and digits: the words of a normalised label
NORMALISED_LABEL = vocab("normalisedLabel")
#: A literal per label of an entity: its words' deletion keys (`label_keys_text`; KEYS_INDEX_MARK).
LABEL_KEYS = vocab("labelKeys")
#: A literal per label of an entity: its words, each after KEY_TOKEN (`label_words_text`; WORDS_INDEX_MARK).
LABEL_WORDS = vocab("labelWords")
#: A literal per word of the KG's labels, on the KG's node: its deletion keys (`word_keys_text`; WORDS_INDEX_MARK).
WORD_KEYS = vocab("wordKeys")
#: The marks a loader leaves (`k:labelTextIndex`) that a KG's labels are in Virtuoso's free-text index, and
#: how (see `kgqa.sparql.virtuoso`): TEXT_INDEX_MARK, the normalised labels (searched by wildcards);
#: KEYS_INDEX_MARK, each label with its words' deletion keys too; WORDS_INDEX_MARK, each label by its
#: words and each word of the KG once by its deletion keys (what a load of a new KG writes).
TEXT_INDEX_MARK = "virtuoso-free-text"
KEYS_INDEX_MARK = "virtuoso-free-text deletion-keys"
WORDS_INDEX_MARK = "virtuoso-free-text word-keys"
#: Most words of the KG one edit from a word of a text that a label search asks for (exact first).
MAX_NEAR_WORDS = 40
#: Written before each deletion key, so that no key is a noise word of Virtuoso's text index ("the", "with").
KEY_TOKEN = "kq"
_WILDCARD_LIMIT = "FT038"  # Virtuoso: "wildcard has over 1000 matches" (7.2.5: over 100,000 words of the index)


class EndpointError(StoreError):
    pass


class HttpClient:
    """Kept-alive HTTP connections to one server, one per thread (a connection carries one request
    at a time, and a store may be shared by the service's worker threads); every failure becomes an
    `EndpointError`."""

    def __init__(self, url: str, timeout: float = DEFAULT_TIMEOUT_S):
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise StoreError(f"{url!r} is not an http(s) URL")
        self.url = url
        self.timeout = timeout
        self._parts = parts
        self._local = threading.local()
        self._all: set[http.client.HTTPConnection] = set()
        self._lock = threading.Lock()

    def _connection(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            cls = http.client.HTTPSConnection if self._parts.scheme == "https" else http.client.HTTPConnection
            conn = self._local.conn = cls(self._parts.hostname, self._parts.port, timeout=self.timeout)  # type: ignore[arg-type]
            with self._lock:
                self._all.add(conn)
        return conn

    def _drop(self) -> None:
        """Close this thread's connection (the next request opens a fresh one)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            self._local.conn = None
            self._close(conn)

    def _close(self, conn: http.client.HTTPConnection) -> None:
        conn.close()
        with self._lock:
            self._all.discard(conn)

    @staticmethod
    def _ack_at_once(conn: http.client.HTTPConnection) -> None:
        """Acknowledge the reply's first segment at once. Virtuoso writes a reply's headers and body
        separately; while the client delays its ACK (Linux: up to 40 ms on a kept-alive connection),
        Nagle holds the body back. Measured, 2-hop retrievals next to a hub: p50 29-49 ms → 10 ms.
        Linux resets the flag by itself, so it is set again before every reply."""
        if _QUICKACK is not None and conn.sock is not None:
            try:
                conn.sock.setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)
            except OSError:
                pass

    def close(self) -> None:
        with self._lock:
            conns, self._all = list(self._all), set()
        for conn in conns:
            conn.close()
        self._local = threading.local()

    def _send(self, path: str, body: bytes, content_type: str, accept: str) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        """The request sent on this thread's connection and the response's status and headers read,
        its body not yet."""
        headers = {"Content-Type": content_type, "Accept": accept}
        target = (self._parts.path.rstrip("/") + path) or "/"
        # A kept-alive connection the server has closed fails once; retry exactly once on a fresh one.
        for attempt in (1, 2):
            conn = self._connection()
            try:
                conn.request("POST", target, body=body, headers=headers)
                self._ack_at_once(conn)
                return conn, conn.getresponse()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as exc:
                self._drop()
                if attempt == 2:
                    raise EndpointError(f"{self.url} dropped the connection: {exc}") from exc
            except (socket.timeout, TimeoutError) as exc:
                self._drop()
                raise EndpointError(f"{self.url} did not answer within {self.timeout:.0f}s") from exc
            except (http.client.HTTPException, OSError) as exc:
                self._drop()
                raise EndpointError(f"{self.url} is unreachable: {exc}") from exc
        raise AssertionError("unreachable")

    def post(self, path: str, body: bytes, content_type: str, accept: str = "*/*") -> tuple[int, dict[str, str], bytes]:
        with self.post_streamed(path, body, content_type, accept) as resp:
            return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()

    @contextmanager
    def post_streamed(self, path: str, body: bytes, content_type: str, accept: str = "*/*") -> Iterator[http.client.HTTPResponse]:
        """`post`, with the response handed over unread (for a body too large to hold, read as it
        arrives). While it is read, the connection is this reply's alone: a request the thread makes
        meanwhile opens another. Afterwards it is kept for the thread's next request only if the body
        was read to its end (a half-read reply would be that request's answer); else it is closed."""
        conn, resp = self._send(path, body, content_type, accept)
        self._local.conn = None
        whole = False
        try:
            yield resp
            if resp.length == 0 and not resp.isclosed():
                resp.read()  # a Content-Length body read to its end by read1, which leaves it open
            whole = resp.isclosed()
        except (socket.timeout, TimeoutError) as exc:
            raise EndpointError(f"{self.url} did not answer within {self.timeout:.0f}s") from exc
        except (http.client.HTTPException, OSError) as exc:
            raise EndpointError(f"{self.url} dropped the connection in the middle of a reply: {exc}") from exc
        finally:
            if whole and getattr(self._local, "conn", None) is None:
                self._local.conn = conn
            else:
                self._close(conn)


class SparqlEndpointStore(SparqlReader):
    """`kgqa.store.GraphStore` over a SPARQL query endpoint (it only ever sends SELECT queries)."""

    server = ""  # the endpoint's `Server` header, seen when it is opened
    #: Whether Virtuoso has kgqa's APP procedure (None: not asked yet); see `expand_hops`.
    has_app_procedure: bool | None = None
    #: When the server last said the procedure is missing (time.monotonic()); None: it did not.
    _app_missing_at: float | None = None
    #: Longest text the procedure may answer with; a larger subgraph is retrieved hop by hop.
    app_max_bytes: int = virtuoso_app.MAX_BYTES

    def __init__(
        self, query_url: str, kg: str, timeout: float = DEFAULT_TIMEOUT_S, server_timeout_ms: int | None = None,
        max_values: int | None = 2000,
    ):
        """`server_timeout_ms` is sent as Virtuoso's `timeout` parameter, so the server stops too; it
        then answers a slow query with partial results (X-SQL-State: S1TAT), which raise here. None:
        on Virtuoso, `timeout` less 3 s (at least 1 s), so that its answer comes before this client
        gives up — without it, Virtuoso goes on running a query its client has left. Virtuoso stops
        up to ~1.5 s late (measured: asked 0.5, 1 and 2.7 s, it answered at 2.0, 2.0 and 4.0 s).
        Not sent to other servers.
        `max_values`: see `SparqlReader.max_values`; 2000 suits Virtuoso 7, None lifts the limit."""
        # where kgqa keeps this KG's label index (loaded through `oxigraph serve`, or built by `kgqa index`)
        super().__init__(kg, endpoint_index_path(query_url, kg))
        self.max_values = max_values
        self.url = query_url
        self.server_timeout_ms = server_timeout_ms
        self._label_marks: set[str] | None = None  # how the KG's labels are in the text index (_index_mark)
        self._http = HttpClient(query_url, timeout)

    @classmethod
    def connect(
        cls, query_url: str, kg: str | None = None, timeout: float = DEFAULT_TIMEOUT_S, server_timeout_ms: int | None = None,
        max_values: int | None = 2000,
    ) -> "SparqlEndpointStore":
        """Open the endpoint, choosing the KG it holds when `kg` is None."""
        probe = cls(query_url, "probe", timeout, server_timeout_ms, max_values)
        kgs = sorted(row["name"] for row in probe._execute("kgs", render("kgs")))
        probe.close()
        store = cls(query_url, pick_kg(kgs, kg, query_url), timeout, server_timeout_ms, max_values)
        store.server = probe.server
        return store

    @property
    def is_virtuoso(self) -> bool:
        return "virtuoso" in self.server.lower()

    @property
    def expand_round_trips(self) -> int:  # type: ignore[override]
        """Virtuoso's planner may read `GRAPH data { ?s ?r ?o }` before the fan-out graph binds ?r,
        i.e. all of a hub's edges (measured: 49 s for one retrieval next to a 300k-edge hub; the
        `sql:select-option "order"` pragma avoids that but made hop 2 ~30x slower), so there a hop
        is two queries whose data lookups always have subject and relation bound. In a whole
        retrieval the second also brings the group sizes the next hop would have asked for: k hops,
        k + 1 queries (only where kgqa's APP procedure is missing; see `expand_hops`)."""
        return 2 if self.is_virtuoso else 1

    def expand_hops(self, topics: Sequence[str], hops: int, lam: int) -> WholeRetrieval:
        """On Virtuoso, one call of kgqa's APP procedure (virtuoso_app.sql): one round trip for the
        whole retrieval. Hop by hop (`SparqlReader.expand_hops`) elsewhere, where the procedure is
        missing (a KG loaded by an older kgqa) and where the subgraph is too large for one value."""
        budget_ms = self._server_ms()  # never None on Virtuoso
        if self.is_virtuoso and self._may_call_app_procedure() and budget_ms is not None:
            query = render(
                "expand_app", kg=escape.literal(self.kg), topics=virtuoso_app.topic_list(topics), hops=escape.integer(hops),
                lam=escape.integer(lam), budget_ms=escape.integer(budget_ms), max_bytes=escape.integer(self.app_max_bytes),
            )
            self.round_trips += 1
            try:
                # The procedure keeps its own time limit (budget_ms); Virtuoso's `timeout` would only
                # add its anytime-query cost (measured: ~0.15 ms of a ~1.6 ms call).
                rows = self._execute("expand_app", query, server_stop=False)
            except EndpointError as exc:
                if not any(code in str(exc) for code in virtuoso_app.MISSING):
                    raise
                if self._app_missing_at is None:  # warn once, not at every recheck
                    log.warning("%s: kgqa's APP procedure is missing or not executable (%s); retrieving hop by hop, "
                                "asking again in %.0f s (loading any KG with this kgqa installs it)", self.url, str(exc)[:200], APP_RECHECK_S)
                self.has_app_procedure, self._app_missing_at = False, time.monotonic()
            else:
                self.has_app_procedure, self._app_missing_at = True, None
                whole = virtuoso_app.parse(rows[0].get("app", "") if rows else "", topics, f"expand_app.rq at {self.url}")
                if whole is not None:
                    return whole
        return super().expand_hops(topics, hops, lam)

    def _may_call_app_procedure(self) -> bool:
        """Not where the server said it is missing less than APP_RECHECK_S ago, nor where the caller
        set `has_app_procedure = False` itself."""
        if self.has_app_procedure is not False:
            return True
        return self._app_missing_at is not None and time.monotonic() - self._app_missing_at >= APP_RECHECK_S

    def search_labels(self, texts: Sequence[str], any_word: bool = False, limit: int = 50) -> dict[str, list[tuple[str, str]]]:
        """On Virtuoso, candidates through its free-text index of the KG's labels (the loader's rules;
        `kgqa.sparql.virtuoso`), SEARCH_BRANCHES (text, expression) pairs to a query
        (search_labels_virtuoso.rq). Virtuoso's text queries have no fuzzy terms. A KG loaded today
        has each word of its labels once with its deletion keys (`word_keys_text`): each word of a text
        is looked up by its own keys, which a stored word one edit away shares (`_near_words`), and the
        labels are then searched by the words found (`words_expression`). A KG loaded with deletion keys
        per label (`label_keys_text`, kgqa of 2026-11) is searched through those. One an older kgqa loaded has none: each text
        is asked as `contains_expression` builds it, every word (as written, or by its leading
        letters: a typo past them), and every word but one (a typo anywhere in that one). With
        `any_word`, every word, and any word. The rows are then held to what the protocol promises:
        each word of the text (any, with `any_word`) as written or one edit away
        (`kgqa.core.labels.within_one_edit`; words under 3 letters as written), keys of the nearest
        length first (with `any_word`, those that hold every word before the others), at most `limit`
        per text. Elsewhere, the label index beside the store (`SparqlReader.search_labels`). See
        `kgqa.core.store.SearchesLabels`."""
        out: dict[str, list[tuple[str, str]]] = {text: [] for text in texts}
        searches: list[tuple[str, str, list[str]]] = []  # (text, key, words)
        for text in out:
            key = normalise_label(text)
            words = list(dict.fromkeys(key.split()))[:MAX_SEARCH_WORDS]
            if words:
                searches.append((text, key, words))
        if not searches or limit <= 0:
            return out
        if not self.server:  # not asked anything yet: the Server header says which engine this is
            self.round_trips += 1
            self._execute("kgs", render("kgs"))
        if not self.is_virtuoso:
            return super().search_labels(texts, any_word=any_word, limit=limit)
        asked = min(limit * SEARCH_OVERFETCH, SEARCH_ROWS)
        rows: list[Row] = []
        mark = self._index_mark()
        if mark == WORDS_INDEX_MARK:
            rows = self._search_rows(searches, any_word, asked, "words", self._near_words([w for _, _, ws in searches for w in ws]))
        elif mark == KEYS_INDEX_MARK:
            rows = self._search_rows(searches, any_word, asked, "keys")
        else:
            for prefix in WILDCARD_PREFIXES:
                try:
                    rows = self._search_rows(searches, any_word, asked, prefix)
                    break
                except EndpointError as exc:
                    if _WILDCARD_LIMIT not in str(exc) or prefix is None:
                        raise
                    # a wildcard matched too many words of the server's text index: longer ones, then none
                    log.info("%s: a free-text wildcard of %s prefixes matched too many words; asking again with fewer", self.url, prefix)
        found: dict[int, dict[tuple[str, str], str]] = {}
        for row in rows:
            if "t" in row and "e" in row and "label" in row and "key" in row:
                key = row["key"]
                if normalise_label(row["label"]) == key:  # not a key paired with another label of its entity
                    found.setdefault(int(row["t"]), {})[(row["e"], row["label"])] = key
        for t, (text, key, words) in enumerate(searches):
            kept = [(pair, other) for pair, other in found.get(t, {}).items() if holds_words(other.split(), words, any_word)]
            # nearest length first (the longer one of two as near), with `any_word` those holding every word before
            kept.sort(key=lambda item: (any_word and not holds_words(item[1].split(), words), abs(len(item[1]) - len(key)),
                                        len(item[1]) < len(key), item[0][1], item[0][0]))
            out[text] = [pair for pair, _ in kept[:limit]]
        return out

    def label_index_marks(self) -> set[str]:
        """The loader's marks that this KG's labels are in Virtuoso's free-text index (`kgqa.sparql.virtuoso`)."""
        return {row["indexed"] for row in self._select("label_index_marks", kg=escape.iri(self.ns.iri)) if "indexed" in row}

    def _index_mark(self) -> str:
        """How this KG's labels are in the index (WORDS_INDEX_MARK, KEYS_INDEX_MARK or TEXT_INDEX_MARK;
        asked once a store, once known), else NoLabelIndex."""
        if self._label_marks is None:
            marks = self.label_index_marks()
            if not marks:  # asked again next time: a load may be adding the index now
                raise NoLabelIndex(
                    f"KG {self.kg!r} at {self.url} has no free-text index of its labels in Virtuoso (it was loaded by an older "
                    f"kgqa, or Virtuoso refused the index rule then): run `kgqa load` of the same files with --kg {self.kg} "
                    f"--store virtuoso://HOST:SQLPORT?sparql={self.url}&load_dir=DIR once (it indexes the labels already "
                    "loaded and finds the files loaded)")
            self._label_marks = marks
        return next((mark for mark in (WORDS_INDEX_MARK, KEYS_INDEX_MARK) if mark in self._label_marks), TEXT_INDEX_MARK)

    def _near_words(self, words: Sequence[str]) -> dict[str, list[str]]:
        """Each of `words` (of MIN_FUZZY_WORD letters or more) → the words of the KG's labels as
        written or one edit away, the word itself first, at most MAX_NEAR_WORDS: through the
        deletion keys of the KG's words (search_words_virtuoso.rq), one branch a word."""
        asked = [word for word in dict.fromkeys(words) if len(word) >= MIN_FUZZY_WORD]
        branches = [{"t": escape.integer(t), "asked": escape.integer(SEARCH_ROWS // SEARCH_BRANCHES),
                     "expression": escape.literal(contains_expression([word], prefix="keys"))} for t, word in enumerate(asked)]
        near: dict[str, list[str]] = {word: [] for word in asked}
        for start in range(0, len(branches), SEARCH_BRANCHES):
            query = _repeated_branch("search_words_virtuoso", "match", branches[start : start + SEARCH_BRANCHES],
                                     kg=escape.iri(self.ns.iri), **self._graphs)
            self.round_trips += 1
            for row in self._execute("search_words_virtuoso", query):
                if "t" in row and "keys" in row:
                    word = asked[int(row["t"])]
                    stored = row["keys"].split(" ", 1)[0].removeprefix(KEY_TOKEN)
                    if within_one_edit(word, stored) and stored not in near[word]:
                        near[word].append(stored)
        return {word: sorted(found, key=lambda other: (other != word, abs(len(other) - len(word)), other))[:MAX_NEAR_WORDS]
                for word, found in near.items()}

    def _search_rows(self, searches: list[tuple[str, str, list[str]]], any_word: bool, asked: int, prefix: str | None,
                     near: dict[str, list[str]] | None = None) -> list[Row]:
        """The rows of search_labels_virtuoso.rq for every (text, expression), SEARCH_BRANCHES of them
        to a query (fewer where they could bring over SEARCH_ROWS rows). `near`: with prefix `words`,
        the KG's words near each word (`_near_words`)."""
        if prefix in ("keys", "words"):  # keys find a typo in every word: every word but one would only add rows
            modes = ["every", "any"] if any_word else ["every"]
        else:
            modes = ["every", "any" if any_word else "all_but_one"]
        searched = escape.iri({"keys": LABEL_KEYS, "words": LABEL_WORDS}.get(prefix or "", NORMALISED_LABEL))
        branches = []
        for t, (_, key, words) in enumerate(searches):
            for mode in modes[: 1 if len(words) == 1 else 2]:
                expression = words_expression(words, near or {}, mode) if prefix == "words" else contains_expression(words, mode, prefix)
                if expression is not None:
                    branches.append({"t": escape.integer(t), "length": escape.integer(len(key)), "asked": escape.integer(asked),
                                     "expression": escape.literal(expression)})
        per_query = max(1, min(SEARCH_BRANCHES, SEARCH_ROWS // asked))
        rows: list[Row] = []
        for start in range(0, len(branches), per_query):
            query = _repeated_branch("search_labels_virtuoso", "match", branches[start : start + per_query], searched=searched, **self._graphs)
            self.round_trips += 1
            rows += self._execute("search_labels_virtuoso", query)
        return rows

    def label_pairs(self, page: int = 5000) -> Iterator[tuple[str, str]]:
        """Every (entity IRI, label) pair in one request (label_pairs.rq), read row by row as the
        endpoint sends it: one pass, in memory a row's worth. Where the endpoint would not give the
        whole result, as its status or headers say before any row (an error; Virtuoso's row cap,
        X-SPARQL-MaxRows; partial results at its time limit, X-SQL-State S1TAT), the pairs come page by
        page instead (`label_page`, sorted pages: slower the larger the KG, but within any cap)."""
        self.round_trips += 1
        form = {"query": render("label_pairs", **self._graphs)}
        server_ms = self._server_ms()
        if server_ms is not None:  # Virtuoso: past its time limit it says so (S1TAT) and the pages follow
            form["timeout"] = str(server_ms)
        with self._http.post_streamed("", urlencode(form).encode(), "application/x-www-form-urlencoded", "text/csv") as resp:
            headers = {k.lower(): v for k, v in resp.getheaders()}
            self.server = headers.get("server", self.server)
            cut = "x-sparql-maxrows" in headers or headers.get("x-sql-state") == "S1TAT"
            if resp.status == 200 and headers.get("content-type", "").startswith("text/csv") and not cut:
                lines = csv.reader(io.TextIOWrapper(resp, encoding="utf-8", newline=""))
                try:
                    if next(lines, None) is None:
                        raise EndpointError(f"label_pairs.rq: {self.url} answered with an empty body, not a CSV result")
                    for line in lines:
                        if len(line) >= 2 and line[1] != "":
                            yield line[0], line[1]
                except (UnicodeDecodeError, csv.Error) as exc:
                    raise EndpointError(f"label_pairs.rq: {self.url} answered with a CSV result that cannot be read: {exc}") from exc
                return
            why = f"HTTP {resp.status}" if resp.status != 200 else ("a cut result" if cut else headers.get("content-type") or "no Content-Type")
        log.info("%s answered the labels in one result with %s: reading them page by page", self.url, why)
        yield from super().label_pairs(page)

    def close(self) -> None:
        self._http.close()

    def _server_ms(self) -> int | None:
        if self.server_timeout_ms is None and self.is_virtuoso:
            return max(1000, int(self._http.timeout - 3) * 1000)
        return self.server_timeout_ms

    def select_asked(self, query: str) -> list[Row] | bool:
        form = [("query", query), *[(key, g) for g in self.asked_graphs for key in ("default-graph-uri", "named-graph-uri")]]
        server_ms = self._server_ms()
        if server_ms is not None:
            form.append(("timeout", str(server_ms)))
        self.round_trips += 1
        headers, payload = self._post("text2query", form, "application/sparql-results+json")
        try:
            data = json.loads(payload)
        except ValueError:
            raise EndpointError(f"text2query: {self.url} answered {headers.get('content-type') or 'no Content-Type'}, "
                                "not SPARQL JSON results") from None
        if "boolean" in data:
            return bool(data["boolean"])
        return [{var: cell["value"] for var, cell in binding.items()} for binding in data.get("results", {}).get("bindings", [])]

    def _execute(self, name: str, query: str, server_stop: bool = True) -> list[Row]:
        """`server_stop`: send Virtuoso its `timeout` (see `__init__`)."""
        server_ms = self._server_ms() if server_stop else None
        form = {"query": query} if server_ms is None else {"query": query, "timeout": str(server_ms)}
        headers, payload = self._post(f"{name}.rq", form, "text/csv")
        content_type = headers.get("content-type", "")
        if not content_type.startswith("text/csv"):
            raise EndpointError(f"{name}.rq: {self.url} answered {content_type or 'no Content-Type'}, not the text/csv results asked for")
        lines = csv.reader(io.StringIO(payload.decode("utf-8"), newline=""))
        names = next(lines, None)
        if names is None:
            raise EndpointError(f"{name}.rq: {self.url} answered with an empty body, not a CSV result")
        rows = [{var: value for var, value in zip(names, line) if value != ""} for line in lines]
        max_rows = headers.get("x-sparql-maxrows")
        if max_rows is not None and len(rows) >= int(max_rows):
            raise EndpointError(
                f"{name}.rq: {self.url} cut the result at its row limit ({max_rows} rows, X-SPARQL-MaxRows); "
                "raise ResultSetMaxRows in the server's [SPARQL] settings"
            )
        return rows

    def _post(self, what: str, form, accept: str) -> tuple[dict[str, str], bytes]:  # type: ignore[no-untyped-def]
        """One query form posted; the headers and body of a 200 answer with complete results, else
        EndpointError naming `what` (an error status, the retrieval procedure's time limit, partial results)."""
        body = urlencode(form).encode()
        for pause in (*CHECKPOINT_PAUSES_S, None):
            was_virtuoso = self.is_virtuoso  # known from an earlier answer: the first request is never retried
            status, headers, payload = self._http.post("", body, "application/x-www-form-urlencoded", accept)
            self.server = headers.get("server", self.server)
            if status != 404 or not was_virtuoso or pause is None:
                break
            # Virtuoso answers 404 on its SPARQL endpoint while it writes a checkpoint (a loader's, or its
            # own every CheckpointInterval): measured, 22 of 950 queries during 20 checkpoints
            time.sleep(pause)
        if status != 200 and b"KGQAT" in payload[:300]:
            raise EndpointError(f"{what}: {self.url} stopped the retrieval at its time limit: {payload[:300].decode(errors='replace')}")
        if status != 200:
            raise EndpointError(f"{what}: SPARQL endpoint {self.url} answered HTTP {status}: {payload[:300].decode(errors='replace')}")
        if headers.get("x-sql-state") == "S1TAT":
            raise EndpointError(f"{what}: {self.url} hit its time limit and returned partial results (X-SQL-State: S1TAT)")
        return headers, payload


def contains_expression(words: Sequence[str], mode: str = "every", prefix: str | None = "short") -> str:
    """A text query of Virtuoso's free-text language (`?key bif:contains …`) for keys that hold
    `every` one of `words`, `all_but_one` of them (the one left out may be misspelt anywhere), or
    `any` of them (in these two, a word under MIN_ALONE letters is no match on its own where a
    longer word could be). Each word is a quoted phrase that, with a `prefix`, also matches by its
    leading letters and a wildcard, so that a typo past them still matches: `short`, the first 4
    letters of a word of 5 or more ("dieterel" → ("dieterel" OR "diet*"); Virtuoso wants 4 before
    a `*`); `long`, the first half, at least 5, of a word of 6 or more (a wildcard of more letters
    matches fewer words of the server's index, and Virtuoso refuses one that matches too many);
    None, none; `keys`, no wildcard but the word's deletion keys, each a word of the k:labelKeys
    literals (`label_keys_text`): ("kqkismit" OR "kqismit" OR … OR "kqkismi"), which the keys of
    "kismet" meet in "kqkismt".
    Only words of letters and digits are taken (a normalised label has no other): anything else
    raises ValueError, so that no operator, quote or wildcard of a text can reach the query."""
    if mode not in ("every", "all_but_one", "any"):
        raise ValueError(f"no such free-text search mode: {mode!r}")
    if prefix not in ("short", "long", None, "keys"):
        raise ValueError(f"no such wildcard prefix: {prefix!r}")
    if not words:
        raise ValueError("a free-text query needs at least one word")
    if prefix == "keys":
        # longest first: Virtuoso 7.2 ran `(keys of "richard") AND "kqa" AND (keys of "dogrelenko")` past
        # its 20 s limit over a 10M-fact KG, the same words longest first in 4 ms
        words = sorted(dict.fromkeys(words), key=len, reverse=True)
    terms = []
    for word in dict.fromkeys(words):
        if not isinstance(word, str) or not _FREE_TEXT_WORD.fullmatch(word):
            raise ValueError(f"not a word of letters and digits for a free-text query: {word!r}")
        letters = 4 if prefix == "short" else max(5, (len(word) + 1) // 2)
        if prefix == "keys":
            keys = [f'"{KEY_TOKEN}{key}"' for key in deletion_keys(word)]
            terms.append(keys[0] if len(keys) == 1 else "(" + " OR ".join(keys) + ")")
        elif prefix is not None and len(word) > letters:
            terms.append(f'("{word}" OR "{word[:letters]}*")')
        else:
            terms.append(f'"{word}"')
    return _combined(terms, list(dict.fromkeys(words)), mode)


def words_expression(words: Sequence[str], near: Mapping[str, Sequence[str]], mode: str = "every") -> str | None:
    """A text query of Virtuoso's free-text language over the k:labelWords literals (`label_words_text`)
    for labels that hold `every` (or `any`) one of `words` as written or as one of the KG's words
    `near` it (`SparqlEndpointStore._near_words`; a word under MIN_FUZZY_WORD letters, as written):
    ("kqkismet" OR "kqkismat") AND "kqran". None where no label can match: with `every`, a word
    with no word of the KG near it; with `any`, none has. Longest words first (see contains_expression)."""
    if mode not in ("every", "any"):
        raise ValueError(f"no such free-text search mode for word keys: {mode!r}")
    kept, terms = [], []
    for word in sorted(dict.fromkeys(words), key=len, reverse=True):
        if not isinstance(word, str) or not _FREE_TEXT_WORD.fullmatch(word):
            raise ValueError(f"not a word of letters and digits for a free-text query: {word!r}")
        stored = [word] if len(word) < MIN_FUZZY_WORD else list(dict.fromkeys(near.get(word, ())))
        for other in stored:
            if not _FREE_TEXT_WORD.fullmatch(other):
                raise ValueError(f"not a word of letters and digits for a free-text query: {other!r}")
        if stored:
            keys = [f'"{KEY_TOKEN}{other}"' for other in stored]
            kept.append(word)
            terms.append(keys[0] if len(keys) == 1 else "(" + " OR ".join(keys) + ")")
        elif mode == "every":
            return None
    return _combined(terms, kept, mode) if terms else None


def _combined(terms: list[str], words: list[str], mode: str) -> str:
    """The terms of `words` (one each, in order) joined as `mode` asks (see contains_expression)."""
    if mode == "every" or len(terms) == 1:
        return " AND ".join(terms)
    # a short word ("the", "of", "oz") is no match on its own where a longer one could be: alone, it
    # matches most labels, which the server would rank and the caller throw away
    alone = [len(word) >= MIN_ALONE for word in words]
    if mode == "any":
        return " OR ".join(term for term, ok in zip(terms, alone) if ok or not any(alone))
    groups = [[j for j in range(len(terms)) if j != i] for i in range(len(terms))]
    kept = [group for group in groups if len(group) > 1 or alone[group[0]]] or groups
    return " OR ".join(terms[group[0]] if len(group) == 1 else "(" + " AND ".join(terms[j] for j in group) + ")" for group in kept)


def label_keys_text(key: str) -> str:
    """The text of a label's k:labelKeys literal: the deletion keys of each word of its normalised
    form `key`, each written after KEY_TOKEN ("ran kismet" → "kqran kqan kqrn kqra kqkismet kqismet …")."""
    return " ".join(dict.fromkeys(KEY_TOKEN + k for word in key.split() for k in deletion_keys(word)))


def label_words_text(key: str) -> str:
    """The text of a label's k:labelWords literal: each word of its normalised form `key` once, after
    KEY_TOKEN ("the ran oz" → "kqthe kqran kqoz"), so that no word is a noise word of the index."""
    return " ".join(dict.fromkeys(KEY_TOKEN + word for word in key.split()))


def word_keys_text(word: str) -> str:
    """The text of a word's k:wordKeys literal: its deletion keys, the word's own first, each after
    KEY_TOKEN ("ran" → "kqran kqan kqrn kqra")."""
    return " ".join(KEY_TOKEN + key for key in deletion_keys(word))


def holds_words(key_words: Sequence[str], words: Sequence[str], any_word: bool = False) -> bool:
    """Whether a key's words hold each of `words` (with `any_word`, any of them) as written or one
    edit away; words under MIN_FUZZY_WORD letters as written only (as the label index beside other
    stores: `kgqa.sparql.label_index`)."""
    def near(word: str) -> bool:
        return any(other == word or (len(word) >= MIN_FUZZY_WORD and within_one_edit(word, other)) for other in key_words)

    return any(map(near, words)) if any_word else all(map(near, words))


def _repeated_branch(name: str, branch: str, rows: list[dict[str, escape.SparqlTerm]], **shared: escape.SparqlTerm) -> str:
    """`name.rq` with its `branch` once per item of `rows` (each with its own slot values), the text
    before and after the branches filled with `shared` (see `queries.render_union`, whose branches
    each come once)."""
    head, texts, tail = queries._branches(name)
    parts = [queries._fill(name, texts[branch], {**shared, **terms}) for terms in rows]
    return queries._fill(name, head, shared) + "\n  UNION\n".join(parts) + "\n" + queries._fill(name, tail, shared)
