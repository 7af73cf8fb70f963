"""Builds the Python environment a cluster runs the job with, as an archive for spark-submit --archives
(venv-pack, the way Spark's "Python Package Management" guide ships a virtualenv).

    python jobs/package_env.py executors dist/offset_audit_env.tar.gz [--python-prefix /usr]
    python jobs/package_env.py driver dist/offset_audit_driver_env.tar.gz

`executors` holds only what the Python workers import (the decoder, the Parquet writer, log-segment
checksums, codecs and compiled walker); `driver` adds what the driver needs when it runs inside the cluster (cluster
deploy mode on YARN or Kubernetes): delta-rs for the commits, click, pandas. Both pin the versions
installed here, so the workers run exactly what the driver was tested with. PySpark itself is not
packed: every Spark installation puts its own on the path. The package comes separately as
dist/offset_audit.zip (--py-files), so a code change does not rebuild the environment.

venv-pack links the environment to the interpreter it was built with: the workers need that Python
(3.11+, same minor version) at the same path, or at the prefix given with --python-prefix (venv-pack's
option: /usr for /usr/bin/python3.11). Build it on an image like the workers'.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path

EXECUTORS = ["numpy", "pyarrow", "cramjam", "google-crc32c", "numba", "zstandard"]
DRIVER = [*EXECUTORS, "deltalake", "pandas", "click"]


def requirements(role: str) -> list[str]:
    """The packages of `role`, pinned to the versions of this environment."""
    names = {"executors": EXECUTORS, "driver": DRIVER}[role]
    return [f"{name}=={version(name)}" for name in names]


def build(role: str, output: Path, python_prefix: str | None = None) -> Path:
    output.parent.mkdir(parents=True, exist_ok=True)
    output.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"offset-audit-{role}-env-") as folder:
        env = Path(folder) / "env"
        base = getattr(sys, "_base_executable", sys.executable)  # a venv is made from a real interpreter
        subprocess.run([base, "-m", "venv", str(env)], check=True)
        pip = [str(env / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        subprocess.run([*pip, *requirements(role)], check=True)
        # venv-pack runs from this environment and packs the other one.
        pack = [sys.executable, "-m", "venv_pack", "--prefix", str(env), "--output", str(output), "--quiet"]
        if python_prefix:
            pack += ["--python-prefix", python_prefix]
        subprocess.run(pack, check=True)
    return output


def _size(path: Path) -> str:
    return f"{path.stat().st_size / 2**20:,.0f} MiB"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Pack the Python environment of the executors or the driver.")
    parser.add_argument("role", choices=["executors", "driver"])
    parser.add_argument("output", type=Path)
    parser.add_argument("--python-prefix", help="where Python is on the workers (e.g. /usr), when not here")
    args = parser.parse_args()
    archive = build(args.role, args.output, args.python_prefix)
    print(f"{archive}: {_size(archive)} ({', '.join(requirements(args.role))})")
