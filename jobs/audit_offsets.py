"""spark-submit entry for `audit`: the same code as the CLI, on the cluster's session.

spark-submit --py-files dist/offset_audit.zip jobs/audit_offsets.py --input ... --output ... [--as-of ...]
"""

from __future__ import annotations

import sys

from pyspark.sql import SparkSession

from offset_audit.cli import main

if __name__ == "__main__":
    SparkSession.builder.getOrCreate()  # the cluster's session; get_spark() then reuses it
    sys.exit(main(["audit", *sys.argv[1:]]))
