"""Neo4j store URLs → a driver, a database name and a transaction timeout."""

from __future__ import annotations

import os
from dataclasses import dataclass
from urllib.parse import parse_qs, unquote, urlsplit

import neo4j
from neo4j.exceptions import AuthError, ClientError, Neo4jError, ServiceUnavailable

from kgqa.core.errors import StoreError

DEFAULT_TIMEOUT_S = 30.0
SCHEMES = ("neo4j", "neo4j+s", "neo4j+ssc", "bolt", "bolt+s", "bolt+ssc")


class Neo4jStoreError(StoreError):
    pass


class Neo4jTimeout(Neo4jStoreError):
    """A query ran past the transaction timeout: its result would have been partial, so none is given."""


@dataclass(frozen=True)
class Neo4jTarget:
    uri: str
    user: str | None
    password: str | None
    database: str
    timeout_s: float

    @classmethod
    def parse(cls, url: str) -> "Neo4jTarget":
        """`bolt://user:password@host:port?database=neo4j&timeout=30`. Without a password in the URL,
        NEO4J_PASSWORD (and NEO4J_USER, default "neo4j") are used; with neither, no authentication."""
        parts = urlsplit(url)
        if parts.scheme not in SCHEMES or not parts.hostname:
            raise StoreError(f"store {url!r}: a Neo4j URL looks like bolt://host:7687 (schemes: {', '.join(SCHEMES)})")
        query = {key: values[-1] for key, values in parse_qs(parts.query).items()}
        unknown = set(query) - {"database", "timeout"}
        if unknown:
            raise StoreError(f"store {url!r}: unknown parameter(s) {', '.join(sorted(unknown))}; allowed: database, timeout")
        try:
            timeout_s = float(query.get("timeout", DEFAULT_TIMEOUT_S))
        except ValueError:
            raise StoreError(f"store {url!r}: timeout must be a number of seconds, got {query['timeout']!r}") from None
        if timeout_s <= 0:
            raise StoreError(f"store {url!r}: timeout must be > 0 seconds")
        user = unquote(parts.username) if parts.username else os.environ.get("NEO4J_USER")
        password = unquote(parts.password) if parts.password else os.environ.get("NEO4J_PASSWORD")
        if password is not None and user is None:
            user = "neo4j"
        port = f":{parts.port}" if parts.port else ""
        return cls(f"{parts.scheme}://{parts.hostname}{port}", user, password, query.get("database", "neo4j"), timeout_s)

    def driver(self) -> neo4j.Driver:
        auth = (self.user, self.password) if self.password is not None else None
        driver = neo4j.GraphDatabase.driver(
            self.uri, auth=auth, max_transaction_retry_time=self.timeout_s, notifications_min_severity="OFF"
        )
        try:
            driver.verify_connectivity()
        except (ServiceUnavailable, OSError) as exc:
            driver.close()
            raise Neo4jStoreError(f"Neo4j at {self.uri} is unreachable: {exc}") from exc
        except AuthError as exc:
            driver.close()
            raise Neo4jStoreError(f"Neo4j at {self.uri} refused the credentials (user {self.user!r}): {exc.message}") from exc
        return driver


def explain(exc: Neo4jError, query: str, target: Neo4jTarget) -> Neo4jStoreError:
    """A driver error as one line that names the query and what to do."""
    code = getattr(exc, "code", "") or ""
    if isinstance(exc, ClientError) and "TransactionTimedOut" in code:
        return Neo4jTimeout(
            f"{query}.cypher ran past the {target.timeout_s:g} s transaction timeout on {target.uri} and was stopped; "
            "no partial result is used (raise ?timeout= in the store URL, or lower λ/hops)"
        )
    return Neo4jStoreError(f"{query}.cypher failed on {target.uri}: {code or type(exc).__name__}: {getattr(exc, 'message', None) or exc}")
