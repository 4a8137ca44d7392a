"""docker/compose.yaml: no compose tool runs here (no Docker engine), so check it as data."""

from __future__ import annotations

import shutil
import subprocess

import yaml

from conftest import ROOT


def test_compose_file_is_valid_and_publishes_on_loopback_only():
    compose = yaml.safe_load((ROOT / "docker" / "compose.yaml").read_text())
    assert set(compose["services"]) >= {"neo4j", "virtuoso", "kgqa"}
    for name, service in compose["services"].items():
        assert service["image"], name
        for port in service.get("ports", []):
            assert port.startswith("127.0.0.1:"), (name, port)
        for volume in service.get("volumes", []):
            source = volume.split(":", 1)[0]
            assert source.startswith("./") or source in compose["volumes"], (name, volume)
    service = compose["services"]["kgqa"]
    dockerfile = ROOT / "docker" / service["build"]["dockerfile"].removeprefix("docker/")
    assert dockerfile.exists() and service["build"]["context"] == ".."
    text = dockerfile.read_text()
    for folder in ("engine", "sparql", "cypher", "loaders"):  # what pyproject.toml packages
        assert f"COPY {folder} {folder}" in text
    assert 'CMD ["kgqa", "serve"]' in text and "USER kgqa" in text
    assert service["environment"]["KGQA_STORE"].startswith("${KGQA_STORE:-sparql+http://virtuoso:8890/sparql")
    virtuoso = compose["services"]["virtuoso"]["environment"]
    assert "/data/load" in virtuoso["VIRT_Parameters_DirsAllowed"]
    if shutil.which("docker-compose"):
        subprocess.run(["docker-compose", "-f", str(ROOT / "docker" / "compose.yaml"), "config", "-q"], check=True)
