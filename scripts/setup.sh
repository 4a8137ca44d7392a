#!/usr/bin/env bash
# Sets up everything kgqa needs on a fresh machine: a virtualenv in .venv with kgqa installed
# editable plus its test tools. Idempotent: a second run only checks. Python >= 3.11 required.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
"$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "kgqa needs Python >= 3.11")'
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.kgqa-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  echo "setup: installing kgqa and its dependencies into .venv (torch is large: the first time takes minutes)" >&2
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -e ".[test]"
  touch "$stamp"
fi
