"""kgqa: question answering over knowledge graphs in real graph stores, with evidence and cost."""

from kgqa.core.answer import Answer, AnswerItem, Evidence, LLMCall, Trace
from kgqa.core.events import EvidenceReady, Final, Linked, Retrieved, Token
from kgqa.methods import REGISTRY
from kgqa.retrieval.app import DEFAULT_HOPS, DEFAULT_LAMBDA, retrieve
from kgqa.faces.sdk import Engine
from kgqa.core.store import GraphStore, GraphWriter
from kgqa.retrieval.store_url import open_store, open_writer
from kgqa.core.subgraph import Subgraph
from kgqa.core.types import Edge, Entity, LinkedEntity, Relation, Triple

__version__ = "0.1.0"

__all__ = [
    "Answer",
    "AnswerItem",
    "Engine",
    "Evidence",
    "EvidenceReady",
    "Final",
    "LLMCall",
    "Linked",
    "REGISTRY",
    "Retrieved",
    "Token",
    "Trace",
    "DEFAULT_HOPS",
    "DEFAULT_LAMBDA",
    "Edge",
    "Entity",
    "GraphStore",
    "GraphWriter",
    "LinkedEntity",
    "Relation",
    "Subgraph",
    "Triple",
    "open_store",
    "open_writer",
    "retrieve",
]
