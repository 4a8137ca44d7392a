# The kgqa HTTP QA service. Build from the repository root:
#   docker build -f docker/service.Dockerfile -t kgqa-service .
# Configured by environment variables (see README "HTTP service"): KGQA_STORE, KGQA_KG, KGQA_METHOD,
# KGQA_LLM, KGQA_MAX_CONCURRENT, KGQA_REQUEST_TIMEOUT_S, KGQA_MAX_BODY_BYTES, KGQA_MAX_QUESTION_CHARS,
# KGQA_API_KEYS (and KGQA_LLM_API_KEY for a remote LLM).
FROM python:3.11-slim
ENV PIP_NO_CACHE_DIR=1 PYTHONUNBUFFERED=1 MALLOC_ARENA_MAX=2 HF_HUB_OFFLINE=1 KGQA_CACHE=/var/cache/kgqa
WORKDIR /app
# CPU PyTorch first (the default PyPI wheel is a multi-GB CUDA build)
RUN pip install torch --index-url https://download.pytorch.org/whl/cpu
COPY pyproject.toml README.md ./
COPY engine engine
COPY sparql sparql
COPY cypher cypher
COPY loaders loaders
RUN pip install . && useradd --system --home /app kgqa && mkdir -p /var/cache/kgqa && chown kgqa /var/cache/kgqa
USER kgqa
ENV KGQA_HOST=0.0.0.0 KGQA_PORT=8000 KGQA_STORE=sparql+http://virtuoso:8890/sparql KGQA_METHOD=kgfr
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=10s --start-period=60s CMD python -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:8000/v1/methods', timeout=5)" || exit 1
CMD ["kgqa", "serve"]
