"""Data files that Debian packages ship, fetched without installing anything: `apt-get download`
the package, `dpkg -x` it into a temporary folder, keep the files asked for (and the package's
copyright file, so the licence travels with the data). Used for the BioKG's SQLite files and for
WordNet (`kgqa synth --synonyms`)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from kgqa.core.errors import KGQAError


def run_command(command: list[str], cwd: Path) -> None:
    shown = " ".join(command)
    try:
        done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise KGQAError(f"`{shown}` failed: {command[0]} is not on PATH (fetching a Debian package's files needs a "
                        "Debian/Ubuntu machine's apt-get and dpkg; elsewhere, download the .deb yourself and unpack it)") from None
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-5:])
        hint = " (is the network reachable, and does `apt-cache policy` list the package? try `apt-get update`)" if command[0] == "apt-get" else ""
        raise KGQAError(f"`{shown}` failed with exit status {done.returncode}{hint}:\n{tail}")


def package_files(package: str, filenames: list[str], dest: Path) -> list[Path]:
    """`dest/<name>` for each of `filenames`, taken from `package`'s .deb (downloaded into
    `dest/debs` once) where any is missing. A file there is a whole one: each is moved into place
    last. Raises `KGQAError` naming the command that failed or the file the package lacks."""
    targets = [dest / name for name in filenames]
    if all(t.is_file() for t in targets):
        return targets
    debs = dest / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    found = sorted(debs.glob(f"{package}_*.deb"))
    if not found:
        with tempfile.TemporaryDirectory(dir=debs, prefix=".download-") as tmp:  # a killed download leaves no half .deb
            run_command(["apt-get", "download", package], cwd=Path(tmp))
            for deb in Path(tmp).glob(f"{package}_*.deb"):
                os.replace(deb, debs / deb.name)
        found = sorted(debs.glob(f"{package}_*.deb"))
        if not found:
            raise KGQAError(f"`apt-get download {package}` left no {package}_*.deb in {debs}")
    deb = found[-1]
    with tempfile.TemporaryDirectory(dir=dest, prefix=".unpack-") as tmp:
        run_command(["dpkg", "-x", str(deb), tmp], cwd=dest)
        sources = []
        for name in filenames:
            files = sorted(Path(tmp).rglob(name))
            if not files:
                raise KGQAError(f"{deb} holds no {name} (unpacked with `dpkg -x {deb} …`)")
            sources.append(files[0])
        for copyright_file in Path(tmp).rglob("copyright"):
            shutil.copyfile(copyright_file, dest / f"{package}.copyright")
            break
        for source, target in zip(sources, targets):
            os.replace(source, target)
    return targets
