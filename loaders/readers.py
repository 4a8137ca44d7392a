"""Dataset readers: a file in, a stream of `Record`s out (facts, labels, or bad lines).

Every record carries its position (line number; triple number for Turtle) so that a load can be
resumed exactly where it stopped and every error can name file:line. Gzip is opened transparently.
"""

from __future__ import annotations

import gzip
import io
import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache, partial
from pathlib import Path
from typing import IO

from kgqa.core.errors import BadInputLine
from kgqa.core.namespace import KGNamespace
from kgqa.core.store import SourceFact, SourceNode

FORMATS = ("metaqa", "tsv", "nt", "ttl", "labels", "biokg")
LABEL_PREDICATES = frozenset(
    {
        "http://www.w3.org/2000/01/rdf-schema#label",
        "http://www.w3.org/2004/02/skos/core#prefLabel",
        "http://schema.org/name",
        "https://schema.org/name",
    }
)


@dataclass(frozen=True)
class Bad:
    line: int
    reason: str
    text: str
    fatal: bool = False  # the reader cannot go on past it (a Turtle syntax error), --skip-bad or not

    def stop_unless(self, skip_bad: bool, path: Path) -> None:
        """Raise `BadInputLine` (file:line) unless the load skips bad lines and this one can be skipped."""
        if self.fatal or not skip_bad:
            raise BadInputLine(str(path), self.line, self.reason, self.text)


@dataclass(frozen=True)
class Label:
    iri: str
    label: str


@dataclass(frozen=True)
class Record:
    position: int  # line (or triple, for Turtle) this record ends at; resumption skips positions ≤ committed
    item: SourceFact | Label | Bad | None  # None: a blank or comment line, counted but empty


class ByteCounter:
    """How far into the (possibly compressed) file the reader is, for progress bars."""

    def __init__(self, raw: IO[bytes]):
        self._raw = raw

    def tell(self) -> int:
        try:
            return self._raw.tell()
        except (OSError, ValueError):
            return 0


def detect_format(path: Path) -> str:
    name = path.name.lower().removesuffix(".gz")
    if name.endswith((".nt", ".ntriples")):
        return "nt"
    if name.endswith((".ttl", ".turtle")):
        return "ttl"
    if name.endswith((".tsv", ".tab")):
        return "tsv"
    if name.endswith(".txt"):
        with _open_text(path)[0] as text:
            for line in text:
                if line.strip():
                    return "metaqa" if line.count("|") >= 2 and "\t" not in line else "tsv"
        return "metaqa"
    if name.endswith((".sqlite", ".sqlite3")):
        return "biokg"  # kgqa.loaders.biokg: org.*.eg.sqlite / GO.sqlite
    raise ValueError(f"{path}: cannot tell the format from the name; pass --format ({', '.join(FORMATS)})")


def _open_text(path: Path) -> tuple[IO[str], ByteCounter]:
    raw = open(path, "rb")
    counter = ByteCounter(raw)
    magic = raw.read(2)
    raw.seek(0)
    stream: IO[bytes] = gzip.GzipFile(fileobj=raw) if magic == b"\x1f\x8b" else raw  # type: ignore[assignment]
    return io.TextIOWrapper(stream, encoding="utf-8", newline=None), counter


class DecodedLines:
    """The lines of a (possibly gzipped) file as text, numbered from 1, decoded one by one, so that
    a file that is not UTF-8 text (a binary file, another encoding) is refused with its name, line
    and byte offset (in the uncompressed stream) instead of a bare UnicodeDecodeError."""

    def __init__(self, raw: IO[bytes], path: Path):
        self._raw, self._path = raw, path

    def __enter__(self) -> "DecodedLines":
        return self

    def __exit__(self, *exc: object) -> None:
        self._raw.close()

    def __iter__(self) -> Iterator[tuple[int, str]]:
        offset = 0
        for number, raw in enumerate(self._raw, start=1):
            if b"\0" in raw:
                at = offset + raw.index(b"\0")
                raise BadInputLine(str(self._path), number, f"a binary file, not text (a NUL byte at byte offset {at:,})")
            try:
                yield number, raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise BadInputLine(str(self._path), number, f"not UTF-8 text (byte offset {offset + exc.start:,}: {exc.reason}); "
                                                             "convert it, e.g. with iconv -t UTF-8") from None
            offset += len(raw)


def _open_lines(path: Path) -> tuple[DecodedLines, ByteCounter]:
    raw = open(path, "rb")
    counter = ByteCounter(raw)
    magic = raw.read(2)
    raw.seek(0)
    stream: IO[bytes] = gzip.GzipFile(fileobj=raw) if magic == b"\x1f\x8b" else raw  # type: ignore[assignment]
    return DecodedLines(stream, path), counter


def read(path: Path, fmt: str, ns: KGNamespace) -> tuple[Iterator[Record], ByteCounter]:
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    if fmt == "biokg":
        from kgqa.loaders.biokg import read_biokg

        return read_biokg(path, ns)  # type: ignore[return-value]  # its counter also has tell()
    if fmt == "ttl":
        text, counter = _open_text(path)
        return _turtle(text, fmt, ns, path), counter
    lines, counter = _open_lines(path)
    readers = {"metaqa": _delimited, "tsv": _delimited, "nt": _ntriples, "labels": _labels}
    return readers[fmt](lines, fmt, ns, path), counter


def _minted(ns: KGNamespace, value: str, relation: bool = False) -> SourceNode:
    return SourceNode(ns.relation(value) if relation else ns.entity(value), value)


def _delimited(text: DecodedLines, fmt: str, ns: KGNamespace, path: Path) -> Iterator[Record]:
    """MetaQA `subject|relation|object` or TSV `subject<TAB>relation<TAB>object`."""
    sep = "|" if fmt == "metaqa" else "\t"
    # Names repeat across facts (MetaQA: 385k uses of 43k names); minting an IRI percent-encodes it.
    minted = lru_cache(maxsize=1 << 18)(partial(_minted, ns))
    with text:
        for number, line in text:
            stripped = line.rstrip("\r\n")
            if not stripped or stripped[0] in " \t#":  # the quick test first: most lines start with a name
                if not stripped.strip() or stripped.lstrip().startswith("#"):
                    yield Record(number, None)
                    continue
            parts = stripped.split(sep)
            if len(parts) != 3:
                yield Record(number, Bad(number, f"expected 3 fields separated by {sep!r}, found {len(parts)}", stripped))
                continue
            s, r, o = parts[0].strip(), parts[1].strip(), parts[2].strip()
            if not (s and r and o):
                yield Record(number, Bad(number, "empty subject, relation or object", stripped))
                continue
            yield Record(number, SourceFact(minted(s), minted(r, True), minted(o)))


def _labels(text: DecodedLines, fmt: str, ns: KGNamespace, path: Path) -> Iterator[Record]:
    """`id<TAB>label` lines: readable labels for ids that MetaQA/TSV facts use (e.g. Freebase MIDs)."""
    with text:
        for number, line in text:
            stripped = line.rstrip("\r\n")
            if not stripped.strip() or stripped.lstrip().startswith("#"):
                yield Record(number, None)
                continue
            parts = stripped.split("\t")
            if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
                yield Record(number, Bad(number, "expected `id<TAB>label`", stripped))
                continue
            yield Record(number, Label(ns.entity(parts[0].strip()), parts[1].strip()))


class _Converter:
    """rdflib terms → our nodes: IRIs kept, blank nodes skolemised under the KG, literals become entities."""

    def __init__(self, ns: KGNamespace):
        self.ns = ns

    def node(self, term) -> SourceNode:  # type: ignore[no-untyped-def]
        from rdflib import BNode, Literal

        if isinstance(term, BNode):
            return SourceNode(self.ns.base + "b:" + str(term), None)
        if isinstance(term, Literal):
            return _minted(self.ns, str(term))
        return SourceNode(str(term), None)

    def item(self, s, p, o) -> SourceFact | Label:  # type: ignore[no-untyped-def]
        from rdflib import Literal

        if str(p) in LABEL_PREDICATES and isinstance(o, Literal):
            return Label(self.node(s).iri, str(o))
        return SourceFact(self.node(s), SourceNode(str(p), None), self.node(o))


def _ntriples(text: DecodedLines, fmt: str, ns: KGNamespace, path: Path) -> Iterator[Record]:
    """rdflib's N-Triples parser, fed one line at a time: streaming, and errors know their line."""
    from rdflib.plugins.parsers.ntriples import ParseError, W3CNTriplesParser

    class Sink:
        triple_ = None

        def triple(self, s, p, o):  # type: ignore[no-untyped-def]
            self.triple_ = (s, p, o)

    sink = Sink()
    parser = W3CNTriplesParser(sink=sink)  # type: ignore[arg-type]
    bnodes: dict = {}
    convert = _Converter(ns)
    with text:
        for number, line in text:
            sink.triple_ = None
            parser.line = line.rstrip("\r\n")
            try:
                parser.parseline(bnode_context=bnodes)
            except ParseError as err:
                yield Record(number, Bad(number, f"N-Triples syntax error: {err}", line.rstrip()))
                continue
            yield Record(number, None if sink.triple_ is None else convert.item(*sink.triple_))


def _turtle(text: IO[str], fmt: str, ns: KGNamespace, path: Path) -> Iterator[Record]:
    """rdflib's Turtle parser in a thread, handing triples over a bounded queue: nothing builds an
    in-memory graph. Turtle has no line-wise recovery, so a syntax error always stops the load."""
    from rdflib import Graph

    handoff: queue.Queue = queue.Queue(maxsize=10_000)
    done = object()

    class StreamingGraph(Graph):
        def add(self, triple):  # type: ignore[no-untyped-def, override]
            handoff.put(triple)
            return self

    def produce() -> None:
        try:
            with text:
                StreamingGraph().parse(source=text, format="turtle", publicID=path.resolve().as_uri())
            handoff.put(done)
        except UnicodeDecodeError as err:
            handoff.put(ValueError(f"not UTF-8 text ({err.reason} near byte offset {err.start:,} of a read block); convert it, e.g. with iconv -t UTF-8"))
        except Exception as err:  # handed to the consumer, which names the file
            handoff.put(err)

    threading.Thread(target=produce, daemon=True, name=f"turtle:{path.name}").start()
    convert = _Converter(ns)
    position = 0
    while True:
        item = handoff.get()
        if item is done:
            return
        if isinstance(item, Exception):
            line = getattr(item, "lines", None)
            yield Record(position + 1, Bad(int(line) + 1 if line is not None else 0, f"Turtle syntax error: {item}", "", fatal=True))
            return
        position += 1
        yield Record(position, convert.item(*item))
