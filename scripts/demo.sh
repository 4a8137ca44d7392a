#!/usr/bin/env bash
# The README's first command: set up, load the bundled demo KG into the embedded store, and print
# a capped 2-hop subgraph around a named entity.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
STORE="oxigraph://.kgqa/demo-store"
.venv/bin/kgqa load demo/metaqa-slice.txt.gz --kg metaqa-demo --store "$STORE"
.venv/bin/kgqa stats --store "$STORE"
.venv/bin/kgqa subgraph "${1:-Kismet}" --hops 2 --lambda 100 --store "$STORE"
