"""Start real servers on loopback for tests and benches where no Docker engine runs; stop them by PID.

    with OxigraphServer(tmp_dir) as server:   # `oxigraph serve` from the `oxigraph` PyPI package
        server.url                             # http://127.0.0.1:PORT
"""

from __future__ import annotations

import os
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
