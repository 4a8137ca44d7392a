#!/usr/bin/env bash
# The README's first command: set up, load the bundled demo KG into the embedded store, print a
# capped 2-hop subgraph around a named entity, and answer a few questions with the bundled KGFR
# checkpoint (no LLM): answers with their best fact and path.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
STORE="oxigraph://.kgqa/demo-store"
.venv/bin/kgqa load demo/metaqa-slice.txt.gz --kg metaqa-demo --store "$STORE"
.venv/bin/kgqa stats --store "$STORE"
.venv/bin/kgqa subgraph "${1:-Kismet}" --hops 2 --lambda 100 --store "$STORE" --show 5
for question in "who directed Kismet" "what language is Kismet in" "who starred in the films directed by William Dieterle"; do
  echo
  echo "Q: $question"
  .venv/bin/kgqa ask "$question" --store "$STORE"
done
