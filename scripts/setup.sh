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
# llama.cpp (llama-cpp-python, the tests' OpenAI-compatible server) is built from source. Built for the
# CPU it runs on (-march=native), on CPUs with AMX it crashes in ggml's AMX matrix product on the first
# completion (seen on a Xeon with amx_int8: SIGSEGV in ggml_backend_amx_mul_mat, llama-cpp-python 0.3.35
# and 0.3.36), so it is built for AVX2 instead.
export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF}"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  echo "setup: installing kgqa and its dependencies into .venv (torch is large: the first time takes minutes)" >&2
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -e ".[test]"
  touch "$stamp"
fi
# A llama.cpp built with AMX (in a venv made before, or from a wheel pip cached) is built again, without pip's cache.
if .venv/bin/python -c 'import sys, llama_cpp; sys.exit(b"AMX" not in llama_cpp.llama_print_system_info())' 2>/dev/null; then
  version=$(.venv/bin/python -c 'import llama_cpp; print(llama_cpp.__version__)')
  echo "setup: building llama-cpp-python $version again without AMX (minutes)" >&2
  .venv/bin/python -m pip install --quiet --no-cache-dir --force-reinstall --no-deps "llama-cpp-python==$version"
fi
