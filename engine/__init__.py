"""kgqa: question answering over knowledge graphs in real graph stores, with evidence and cost."""

from kgqa.answer import Answer, AnswerItem, Evidence, LLMCall, Trace
from kgqa.events import EvidenceReady, Final, Linked, Retrieved, Token
from kgqa.methods import METHODS, MethodOptions
from kgqa.retrieval import DEFAULT_HOPS, DEFAULT_LAMBDA, retrieve
from kgqa.sdk import Engine
from kgqa.store import GraphStore, GraphWriter
from kgqa.store_url import open_store, open_writer
from kgqa.subgraph import Subgraph
from kgqa.types import Edge, Entity, LinkedEntity, Relation, Triple

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
    "METHODS",
    "MethodOptions",
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
