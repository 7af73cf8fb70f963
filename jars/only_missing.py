"""Drop from a folder of fetched jars every jar whose artifact pyspark already ships, whatever its
version: Spark's classes must come from one place, its own (an older Jackson or Hadoop client beside
Spark's breaks it at run time).

    python jars/only_missing.py FETCHED_FOLDER PYSPARK_JARS_FOLDER
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

_JAR = re.compile(r"(?P<artifact>.+?)-\d[^/]*\.jar")


def artifact(name: str) -> str:
    match = _JAR.fullmatch(name)
    return match.group("artifact") if match else name


def main(fetched: Path, shipped: Path) -> None:
    have = {artifact(p.name) for p in shipped.glob("*.jar")}
    for jar in sorted(fetched.glob("*.jar")):
        if artifact(jar.name) in have:
            jar.unlink()


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
