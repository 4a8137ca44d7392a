"""Dataset loaders: readers (MetaQA, TSV, N-Triples, Turtle; gzip transparently) and the batched,
idempotent, resumable `load_file`."""

from kgqa.loaders.load import LoadReport, load_file
from kgqa.loaders.readers import FORMATS, detect_format

__all__ = ["FORMATS", "LoadReport", "detect_format", "load_file"]
