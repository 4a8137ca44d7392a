"""PyG writes the `propagate` it generates for each MessagePassing class into a file in the temp
folder and never deletes it (torch_geometric.template.module_from_template: once per class and
process), so every `kgqa ask` left a file in /tmp. The module is imported from that file at once and
the file is not read again, so the files this process made are removed when it exits."""

from __future__ import annotations

import atexit
import sys
import tempfile
from pathlib import Path

_GENERATED = ("_propagate", "_edge_updater")  # the suffixes of PyG's generated module names


def remove_generated_modules() -> None:
    folder = Path(tempfile.gettempdir()).resolve()
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if file and name.endswith(_GENERATED) and Path(file).resolve().parent == folder:
            Path(file).unlink(missing_ok=True)


def remove_generated_modules_at_exit() -> None:
    """Called once, when `kgqa.methods` is imported."""
    atexit.register(remove_generated_modules)
