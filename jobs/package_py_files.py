"""Builds dist/offset_audit.zip for `spark-submit --py-files`: the package with its schemas and
default config inside (package data in src/offset_audit/schemas and conf, as in the wheel).

    python jobs/package_py_files.py [OUTPUT_ZIP]
"""

from __future__ import annotations

import os
import sys
import zipfile
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"


def build(output: Path) -> Path:
    output.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(output, "w", zipfile.ZIP_DEFLATED) as archive:
        for folder, folders, files in os.walk(SRC / "offset_audit", followlinks=True):
            # Bytecode and numba's caches (.nbi/.nbc) are this machine's: an executor builds its own.
            folders[:] = [f for f in folders if f != "__pycache__"]
            for name in sorted(files):
                if name.endswith((".pyc", ".pyo", ".nbi", ".nbc")):
                    continue
                path = Path(folder) / name
                archive.write(path, path.relative_to(SRC).as_posix())
    return output


if __name__ == "__main__":
    archive = build(Path(sys.argv[1] if len(sys.argv) > 1 else "dist/offset_audit.zip"))
    print(f"{archive}: {archive.stat().st_size / 2**10:,.0f} KiB")
