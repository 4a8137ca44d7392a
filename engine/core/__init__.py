"""The bottom layer: types, errors, the store protocol, `Subgraph`, `Answer` and events.

Imports nothing else of kgqa (tests/test_layers.py keeps it so)."""
